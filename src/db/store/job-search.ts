/**
 * A page of the jobs list filtered by `where` clauses on payload or result
 * (src/core/job-filter.ts): read-only, two statements in one batch.
 *
 * The promise: a page never examines more than `scan` jobs (WHERE_SCAN_WINDOW
 * in src/core/job-filter.ts by default), however many jobs the table holds
 * and however rare the match.
 * The window is the next `scan` ids after the cursor that the list's other
 * filters select, walked in id order from an index; the clauses are checked
 * on those rows only. When the window is spent before the page is full, the
 * page comes back short (even empty) with `next` at the window's last id, so
 * the caller continues from there: every match is reached, a page at a time.
 *
 * A queue's indexed field (src/db/store/indexed-fields.ts) turns an `=` on it
 * into the window itself: its index (queue, the field, id) holds exactly the
 * matches in id order, so rare values are found at once. SQLite matches an
 * expression index only to the same expression with the JSON path written in
 * the statement, so that one path is written as a literal, and only after it
 * matches JSON_PATH_PATTERN (no quote can be in it); every value is bound.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core';
import type { BatchItem } from 'drizzle-orm/batch';
import { parseWherePath, WHERE_SCAN_WINDOW, type WhereClause } from '../../core/job-filter.ts';
import { JOB_STATUSES } from '../../core/wire.ts';
import type { Db } from '../db.ts';
import { jobs } from '../schema.ts';
import type { ListParams } from './port-types.ts';
import { fieldExpression, queueIndexedFields } from './indexed-fields.ts';

const column = (c: WhereClause): SQLiteColumn => (c.root === 'payload' ? jobs.payload : jobs.result);

const NUMBER_TYPES = sql`('integer', 'real')`;
const COMPARISONS: Partial<Record<string, SQL>> = { '<': sql.raw('<'), '<=': sql.raw('<='), '>': sql.raw('>'), '>=': sql.raw('>=') };

/**
 * One clause as SQL, its path bound. The type checks keep SQLite's
 * cross-type order out of the answer: json_extract gives true as 1 and an
 * object as its JSON text, and any text sorts after every number.
 */
function clauseSql(c: WhereClause): SQL {
  const col = column(c);
  const value = sql`json_extract(${col}, ${c.jsonPath})`;
  const type = sql`json_type(${col}, ${c.jsonPath})`;
  const typed = (v: string | number) => (typeof v === 'number' ? sql`${type} IN ${NUMBER_TYPES}` : sql`${type} = 'text'`);
  const equal = (v: WhereClause['value']): SQL => {
    if (v === null || v === undefined) return sql`${type} = 'null'`;
    if (typeof v === 'boolean') return v ? sql`${type} = 'true'` : sql`${type} = 'false'`;
    return sql`(${value} = ${v} AND ${typed(v)})`;
  };
  switch (c.op) {
    case 'exists':
      return sql`${type} IS NOT NULL`;
    case '!exists':
      return sql`${type} IS NULL`;
    case '=':
      return equal(c.value);
    case '!=':
      return sql`(${type} IS NOT NULL AND NOT ${equal(c.value)})`;
    case '^=': {
      const prefix = c.value as string;
      const end = prefixEnd(prefix);
      return sql`(${value} >= ${prefix}${end === null ? sql`` : sql` AND ${value} < ${end}`} AND ${type} = 'text')`;
    }
    default: {
      const v = c.value as string | number;
      // From a fixed table: a clause made outside the parser cannot put text of its own here.
      const op = COMPARISONS[c.op];
      if (!op) throw new Error(`not a where operator: ${JSON.stringify(c.op)}`);
      return sql`(${value} ${op} ${v} AND ${typed(v)})`;
    }
  }
}

/**
 * The least string above every string that starts with `prefix` (null: none,
 * the prefix is all U+10FFFF): its last code point plus one. SQLite compares
 * text as UTF-8 bytes, which is code point order, so [prefix, end) is
 * exactly the strings with that prefix; unlike LIKE, % and _ are plain
 * characters and case counts.
 */
function prefixEnd(prefix: string): string | null {
  const points = [...prefix].map((ch) => ch.codePointAt(0)!);
  while (points.length > 0) {
    const last = points.pop()!;
    if (last < 0x10ffff) {
      // No well-formed string holds a surrogate: the next code point after U+D7FF is U+E000.
      points.push(last + 1 === 0xd800 ? 0xe000 : last + 1);
      return String.fromCodePoint(...points);
    }
  }
  return null;
}

/** The clause an indexed field serves: an `=` to a number, string or boolean on one of the queue's fields. */
function indexedEquality(p: ListParams, indexedFields: readonly string[]): WhereClause | undefined {
  if (p.queue === undefined) return undefined;
  const fields = new Set(indexedFields.map((f) => parseWherePath(f)).filter((f) => typeof f !== 'string').map((f) => `${f.root}${f.jsonPath}`));
  return (p.where ?? []).find((c) => c.op === '=' && c.value !== null && c.value !== undefined && fields.has(`${c.root}${c.jsonPath}`));
}

/**
 * The window: the ids a page may examine, in the list's order, at most
 * `scan` of them, each found through an index (never a walk of rows the
 * window does not count). Returns it and the filters it leaves to the page.
 */
function windowSql(p: ListParams, base: SQL | undefined, indexedFields: readonly string[], scan: number): { window: SQL; rest: SQL[] } {
  const order = p.order === 'desc' ? sql`DESC` : sql`ASC`;
  const keyset = p.after === undefined ? sql`1` : p.order === 'desc' ? sql`id < ${p.after}` : sql`id > ${p.after}`;
  const limit = sql`ORDER BY id ${order} LIMIT ${scan}`;
  const indexed = indexedEquality(p, indexedFields);
  if (indexed) {
    const v = indexed.value as string | number | boolean;
    // The index's own expression and key: true and false are kept as 1 and 0 (the page checks the type).
    const key = typeof v === 'boolean' ? Number(v) : v;
    // The other filters go to the page, with + so SQLite cannot pick their
    // index for the page and check the window's ids one by one against it.
    const rest = [
      p.status === undefined ? undefined : sql`+status = ${p.status}`,
      p.id === undefined ? undefined : sql`+id = ${p.id}`,
      p.idempotencyKey === undefined ? undefined : sql`+idempotency_key = ${p.idempotencyKey}`,
    ].filter((s): s is SQL => s !== undefined);
    return { window: sql`SELECT id FROM jobs WHERE queue_name = ${p.queue} AND ${fieldExpression(indexed.root, indexed.jsonPath)} = ${key} AND ${keyset} ${limit}`, rest };
  }
  if (p.queue !== undefined && p.status === undefined && p.id === undefined && p.idempotencyKey === undefined) {
    // No index holds one queue's jobs in id order across statuses; one per
    // status does (jobs_queue_status_id_idx): the first `scan` of each, merged.
    const parts = JOB_STATUSES.map((s) => sql`SELECT id FROM (SELECT id FROM jobs WHERE queue_name = ${p.queue} AND status = ${s} AND ${keyset} ${limit})`);
    return { window: sql`SELECT id FROM (${sql.join(parts, sql` UNION ALL `)}) ${limit}`, rest: [] };
  }
  // The list's own filters and cursor, as an unfiltered page reads them: each combination has an index in id order.
  return { window: sql`SELECT id FROM jobs WHERE ${base ?? sql`1`} ${limit}`, rest: [] };
}

/**
 * The filtered page: `select` reads the rows matching `where` (the caller's
 * columns), and the window's size and far end say whether and where to go on.
 */
export async function filteredPage<Row extends { id: number }>(
  db: Db,
  p: ListParams,
  /** The list's filters and cursor as the unfiltered page reads them (read.ts's pageWhere). */
  base: SQL | undefined,
  select: (where: SQL, limit: number) => BatchItem<'sqlite'>,
): Promise<{ jobs: Row[]; next: number | null }> {
  const scan = p.scan ?? WHERE_SCAN_WINDOW;
  const { window, rest } = windowSql(p, base, p.queue === undefined ? [] : await queueIndexedFields(db, { queue: p.queue }), scan);
  const where = sql.join([sql`${jobs.id} IN (${window})`, ...rest, ...(p.where ?? []).map(clauseSql)], sql` AND `);
  const [rows, edge] = (await db.batch([
    select(where, p.limit + 1),
    db.all<{ n: number; lo: number | null; hi: number | null }>(sql`SELECT count(*) AS n, min(id) AS lo, max(id) AS hi FROM (${window})`),
  ])) as unknown as [Row[], { n: number; lo: number | null; hi: number | null }[]];
  if (rows.length > p.limit) return { jobs: rows.slice(0, p.limit), next: rows[p.limit - 1]!.id };
  const e = edge[0]!;
  // A full window may have more jobs past it: go on from its far end.
  const spent = Number(e.n) >= scan;
  return { jobs: rows, next: spent ? Number(p.order === 'desc' ? e.lo : e.hi) : null };
}
