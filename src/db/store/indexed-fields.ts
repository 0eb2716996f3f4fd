/**
 * A queue's indexed fields: payload or result paths whose `=` filter the
 * jobs list finds through an index of their own (src/db/store/job-search.ts).
 *
 * One batch, one transaction: the queue row (made if needed) gets the new
 * list, each field no longer listed loses its index, each listed field gets
 * one if it has none, and the audit entry records the list before and after.
 * Each index is partial, `WHERE queue_name = '<queue>'`, so only this
 * queue's enqueues pay for it, and covers (queue_name, the field, id): an
 * `=` on the field walks the matches in id order, as the keyset pages read.
 * An expression index rather than a generated column: adding a column to
 * jobs rebuilds nothing but changes the table every query reads, and
 * libSQL and D1 both keep expression indexes over json_extract.
 *
 * Building an index reads every job of the queue once, holding the write
 * lock while it does (about a second per million rows, docs/benchmarks.md).
 */
import { sql, type SQL } from 'drizzle-orm';
import type { Now } from '../../core/clock.ts';
import { JSON_PATH_PATTERN, parseWherePath, WHERE_ROOTS, type WhereClause } from '../../core/job-filter.ts';
import { batchList, type Db } from '../db.ts';
import { nowSql } from '../sql.ts';
import { alongsideFirst, auditInsert } from './audit.ts';
import type { Alongside } from './port-types.ts';

/** A JSON path as SQL text: checked, then quoted (it holds no quote to escape). */
export function jsonPathLiteral(jsonPath: string): SQL {
  if (!JSON_PATH_PATTERN.test(jsonPath)) throw new Error(`not a JSON path leasehold writes into SQL: ${JSON.stringify(jsonPath)}`);
  return sql.raw(`'${jsonPath}'`);
}

/** The expression an indexed field's index holds, and an `=` on it must repeat to use it. */
export function fieldExpression(root: WhereClause['root'], jsonPath: string): SQL {
  if (!(WHERE_ROOTS as readonly string[]).includes(root)) throw new Error(`not a where root: ${JSON.stringify(root)}`);
  return sql`json_extract(${sql.raw(root)}, ${jsonPathLiteral(jsonPath)})`;
}

/** The index of one queue's field: a name made of a hash, so neither text reaches the name. */
export function fieldIndexName(queue: string, field: string): string {
  const text = `${queue}\n${field}`;
  // Two FNV-1a hashes with different offsets: 64 bits, no collision in practice among a few dozen indexes.
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193) >>> 0;
    b = Math.imul(b ^ c, 0x01000193) >>> 0;
  }
  return `jobs_field_${a.toString(16).padStart(8, '0')}${b.toString(16).padStart(8, '0')}`;
}

/**
 * The queue's name as an SQL string literal (DDL takes no parameters): a
 * quote doubled is all SQLite's literal syntax needs, and the API lets no
 * quote into a queue name anyway.
 */
const queueLiteral = (queue: string) => sql.raw(`'${queue.replaceAll("'", "''")}'`);

function fieldIndexSql(queue: string, field: string) {
  const path = parseWherePath(field);
  if (typeof path === 'string') throw new Error(`not a field path: ${path}`);
  const name = sql.raw(`"${fieldIndexName(queue, field)}"`);
  return sql`CREATE INDEX IF NOT EXISTS ${name} ON jobs (queue_name, ${fieldExpression(path.root, path.jsonPath)}, id) WHERE queue_name = ${queueLiteral(queue)}`;
}

/** The queue's indexed fields as stored, oldest first ([] without a row). */
export async function queueIndexedFields(db: Db, p: { queue: string }): Promise<string[]> {
  const [row] = await db.all<{ indexed_fields: string | null }>(sql`SELECT indexed_fields FROM queues WHERE name = ${p.queue}`);
  return row?.indexed_fields ? (JSON.parse(row.indexed_fields) as string[]) : [];
}

/**
 * Replaces the queue's indexed fields with `fields` (paths as the API takes
 * them, checked and at most the cap: the caller's job), making the queue
 * if needed. `was` is the list the caller read: the indexes it no longer
 * names are dropped (IF EXISTS: a racing change may have dropped one).
 */
export async function queueSetIndexedFields(db: Db, p: { queue: string; fields: readonly string[]; was: readonly string[]; now: Now; also?: Alongside }): Promise<void> {
  const now = nowSql(p.now);
  const text = p.fields.length === 0 ? null : JSON.stringify(p.fields);
  const audit = p.also?.audit;
  const dropped = p.was.filter((f) => !p.fields.includes(f));
  await batchList(db, [
    ...alongsideFirst(db, p.also),
    ...(audit ? [auditInsert(db, { ...audit, before: sql`coalesce((SELECT indexed_fields FROM queues WHERE name = ${p.queue}), '[]')`, after: text ?? '[]' })] : []),
    db.run(sql`INSERT INTO queues (name, created_at, updated_at, indexed_fields) VALUES (${p.queue}, ${now}, ${now}, ${text})
      ON CONFLICT (name) DO UPDATE SET indexed_fields = excluded.indexed_fields, updated_at = excluded.updated_at`),
    ...dropped.map((f) => db.run(sql`DROP INDEX IF EXISTS ${sql.raw(`"${fieldIndexName(p.queue, f)}"`)}`)),
    ...p.fields.map((f) => db.run(fieldIndexSql(p.queue, f))),
  ]);
}

/** Drops every index of the queue's fields, for the batch that deletes the queue. */
export function queueFieldIndexesDrop(db: Db, p: { queue: string; fields: readonly string[] }) {
  return p.fields.map((f) => db.run(sql`DROP INDEX IF EXISTS ${sql.raw(`"${fieldIndexName(p.queue, f)}"`)}`));
}
