/**
 * An operator's queue delete: queue row -> gone.
 *
 * Precondition (in the WHERE of the delete): the queue has a row, holds no
 * job in any status and no schedule enqueues to it. Finished jobs go first,
 * and only when the operator asks (queueFinishedJobsPurge, in bounded
 * batches as retention prunes them); pending and running jobs are never
 * deleted here: an operator cancels them, or lets them finish.
 * Postcondition: the row (its settings, limits, alert thresholds) and the
 * queue's bookkeeping (counts, the last hour's activity, its durable
 * counters, alert states) are gone, with an audit entry, all in one batch.
 * No row back: the queue was not there, or something landed in it first (an
 * enqueue racing the delete wins); `queueBlockers` says what.
 *
 * Deleting a queue does not stop anyone making it again: the next enqueue
 * to the name makes a fresh queue with the server's defaults, within the cap.
 */
import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import { batchList, type Db } from '../db.ts';
import { effects, events, jobs, schedules } from '../schema.ts';
import { alongsideFirst, auditInsertWhere } from './audit.ts';
import { QUEUE_SETTING_COLUMNS } from './queue-use.ts';
import { queueFieldIndexesDrop, queueIndexedFields } from './indexed-fields.ts';
import type { Alongside, QueueBlockers } from './port-types.ts';

const FINISHED = sql`('completed', 'failed', 'cancelled')`;

export async function queueBlockers(db: Db, p: { queue: string }): Promise<QueueBlockers> {
  const [counts, scheduled] = await db.batch([
    db.all<{ exists_: number; pending: number; running: number; finished: number }>(sql`SELECT
        EXISTS (SELECT 1 FROM queues WHERE name = ${p.queue}) AS exists_,
        (SELECT count(*) FROM jobs WHERE queue_name = ${p.queue} AND status = 'pending') AS pending,
        (SELECT count(*) FROM jobs WHERE queue_name = ${p.queue} AND status = 'running') AS running,
        (SELECT count(*) FROM jobs WHERE queue_name = ${p.queue} AND status IN ${FINISHED}) AS finished`),
    db.select({ name: schedules.name }).from(schedules).where(eq(schedules.queueName, p.queue)).orderBy(asc(schedules.name)).limit(20),
  ]);
  const c = counts[0]!;
  return { exists: Boolean(c.exists_), pending: Number(c.pending), running: Number(c.running), finished: Number(c.finished), schedules: scheduled.map((s) => s.name) };
}

/** Deletes up to `limit` of the queue's finished jobs, with their events and effects; how many went. */
export async function queueFinishedJobsPurge(db: Db, p: { queue: string; limit: number }): Promise<number> {
  const some = db
    .select({ id: jobs.id })
    .from(jobs)
    .where(and(eq(jobs.queueName, p.queue), inArray(jobs.status, ['completed', 'failed', 'cancelled'])))
    .orderBy(asc(jobs.id))
    .limit(p.limit);
  const [, , deleted] = await db.batch([
    db.delete(events).where(inArray(events.jobId, some)),
    db.delete(effects).where(inArray(effects.jobId, some)),
    db.delete(jobs).where(inArray(jobs.id, some)).returning({ id: jobs.id }),
  ]);
  return deleted.length;
}

/** The tables that keep something per queue besides the row itself. */
const BOOKKEEPING = ['live_counts', 'finished_counts', 'due_later_counts', 'queue_minutes', 'counters', 'histogram_buckets', 'alert_states', 'attempt_silences', 'taken_attempts'] as const;

/** One batch (see the top of the file); true when the queue was deleted. */
export async function queueDeleteIfUnused(db: Db, p: { queue: string; also?: Alongside }): Promise<boolean> {
  const empty = sql`NOT EXISTS (SELECT 1 FROM jobs WHERE queue_name = ${p.queue}) AND NOT EXISTS (SELECT 1 FROM schedules WHERE queue_name = ${p.queue})`;
  const deletable = sql`EXISTS (SELECT 1 FROM queues WHERE name = ${p.queue}) AND ${empty}`;
  // The settings it had, read in the transaction that deletes them (NULL: the server's default).
  const settings = sql.raw(['paused', ...QUEUE_SETTING_COLUMNS].map((c) => `'${c}', ${c}`).join(', '));
  const audit = p.also?.audit;
  const first = alongsideFirst(db, p.also);
  const indexed = await queueIndexedFields(db, { queue: p.queue });
  const answers = await batchList(db, [
    ...first,
    ...(audit ? [auditInsertWhere(db, { ...audit, before: sql`(SELECT json_object(${settings}) FROM queues WHERE name = ${p.queue})` }, deletable)] : []),
    db.all<{ name: string }>(sql`DELETE FROM queues WHERE name = ${p.queue} AND ${empty} RETURNING name`),
    // Only once the row is gone and the queue still empty: a refused delete leaves them.
    ...BOOKKEEPING.map((table) => db.run(sql`DELETE FROM ${sql.raw(table)} WHERE queue_name = ${p.queue} AND NOT EXISTS (SELECT 1 FROM queues WHERE name = ${p.queue}) AND ${empty}`)),
  ]);
  const deleted = answers[first.length + (audit ? 1 : 0)] as { name: string }[];
  // Its indexed fields' indexes (empty now) go once the row is gone: DDL
  // cannot wait on the delete's condition inside the batch, and a refused
  // delete must keep them.
  if (deleted.length > 0 && indexed.length > 0) await batchList(db, queueFieldIndexesDrop(db, { queue: p.queue, fields: indexed }));
  return deleted.length > 0;
}
