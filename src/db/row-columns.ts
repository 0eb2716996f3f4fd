/**
 * A table's columns keyed by their SQL names, for the query builder:
 * `db.select(rowColumns(jobs)).from(jobs)` answers rows under the same
 * snake_case names a raw `SELECT *` gives (RowOf in row-types.ts), typed by
 * the schema, so a statement moved to the builder hands its callers the row
 * shape they already read. Same for `.returning(rowColumns(t))`. One
 * difference from the raw answer: a column the schema declares
 * `mode: 'boolean'` (schedules.paused) comes back as true/false, not 1/0.
 */
import { getTableColumns, type Table } from 'drizzle-orm';

type Columns<T extends Table> = T['_']['columns'];

export type ColumnsByName<T extends Table> = {
  [K in keyof Columns<T> as Columns<T>[K]['_']['name']]: Columns<T>[K];
};

const cache = new WeakMap<Table, object>();

export function rowColumns<T extends Table>(table: T): ColumnsByName<T> {
  let byName = cache.get(table);
  if (!byName) {
    byName = Object.fromEntries(Object.values(getTableColumns(table)).map((c) => [c.name, c]));
    cache.set(table, byName);
  }
  return byName as ColumnsByName<T>;
}
