/**
 * The rows the store's statements answer, inferred from the schema: the
 * column names as SQLite returns them (snake_case) and the types Drizzle
 * gives them, NULL where a column may hold it. schema.ts is the one
 * description of the tables; what other files say of a row is checked
 * against it here, so a column added to the schema but not to the row type
 * (or the reverse, or a changed type) fails to compile.
 */
import type { JobRecord } from '../core/job-record.ts';
import type { jobs } from './schema.ts';

type ColumnsOf<T> = T extends { _: { columns: infer C } } ? C : never;

/** A table's row by column name, as a raw `sql` statement answers it. */
export type RowOf<T> = {
  [K in keyof ColumnsOf<T> as ColumnsOf<T>[K] extends { _: { name: infer N extends string } } ? N : never]: ColumnsOf<T>[K] extends {
    _: { data: infer D; notNull: infer NotNull };
  }
    ? NotNull extends true
      ? D
      : D | null
    : never;
};

export type JobRow = RowOf<typeof jobs>;

/** true when A and B have the same keys and each key's types are assignable both ways; else what differs. */
type Same<A, B> = [Exclude<keyof B, keyof A>, Exclude<keyof A, keyof B>] extends [never, never]
  ? { [K in keyof A & keyof B]: [A[K]] extends [B[K]] ? ([B[K]] extends [A[K]] ? never : K) : K }[keyof A & keyof B] extends never
    ? true
    : { typesDiffer: { [K in keyof A & keyof B]: [A[K]] extends [B[K]] ? ([B[K]] extends [A[K]] ? never : K) : K }[keyof A & keyof B] }
  : { missingFromRecord: Exclude<keyof B, keyof A>; notInSchema: Exclude<keyof A, keyof B> };

/** core's JobRecord (what the API and the dashboard encode) is the schema's job row. */
export const jobRecordIsTheSchemaRow: Same<JobRecord, JobRow> = true;
