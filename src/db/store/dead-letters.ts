/**
 * Dead letters (drizzle/0032): jobs that failed for good in a queue with a
 * deadLetterQueue are listed in it (jobs.dead_letter_queue), still failed,
 * in their own queue. A trigger marks them in the statement that fails them.
 *
 * - list: a dead-letter queue's jobs, lowest id first (the redrive's dry run).
 * - queues: every dead-letter queue, named by a queue's setting or still
 *   listing jobs, with its dead letters counted per queue they came from
 *   (the dashboard's dead-letter page).
 * - redrive: failed and listed -> pending now in their own queue, with a
 *   fresh attempt budget, as an operator's retry (the counts of earlier
 *   attempts stay in the events). One guarded statement, its audit entry in
 *   the same batch. A job whose idempotency key another pending or running
 *   job of its queue holds is left dead (two active jobs never share a key),
 *   and of several dead jobs sharing a key only the newest goes back.
 * Leaving failed clears the mark (a trigger), so a job that fails again is
 * dead-lettered again.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { Now } from '../../core/clock.ts';
import { batchList, type Db } from '../db.ts';
import { nowSql } from '../sql.ts';
import { alongsideFirst, auditInsert } from './audit.ts';
import type { DeadLetterFilter, DeadLetterQueueRow, DeadLetterRow, RedrivenJob, RedriveParams } from './port-types.ts';

function deadWhere(f: DeadLetterFilter): SQL {
  const from = f.fromQueue === undefined ? sql`` : sql` AND queue_name = ${f.fromQueue}`;
  const ids = f.ids === undefined ? sql`` : sql` AND id IN (SELECT value FROM json_each(${JSON.stringify(f.ids)}))`;
  return sql`dead_letter_queue = ${f.deadLetterQueue} AND status = 'failed'${from}${ids}`;
}

/** The dead-letter queue's jobs, lowest id first, at most `limit`; `matching`: how many in all, counted up to `max`. */
export async function jobsDeadLetterList(db: Db, f: DeadLetterFilter & { limit: number; max: number }): Promise<{ matching: number; jobs: DeadLetterRow[] }> {
  const [count, rows] = await batchList(db, [
    db.all<{ n: number }>(sql`SELECT count(*) AS n FROM (SELECT 1 FROM jobs INDEXED BY jobs_dead_letters_idx WHERE ${deadWhere(f)} LIMIT ${f.max})`),
    db.all<DeadLetterRow>(sql`SELECT id, queue_name, dead_letter_queue, attempt_count, max_attempts, errored_attempts, lost_attempts, last_event, last_event_reason,
        substr(last_error, 1, 200) AS last_error, failed_at, dead_lettered_at
      FROM jobs INDEXED BY jobs_dead_letters_idx WHERE ${deadWhere(f)} ORDER BY id LIMIT ${Math.max(0, f.limit)}`),
  ]);
  return { matching: Number((count as { n: number }[])[0]?.n ?? 0), jobs: rows as DeadLetterRow[] };
}

/**
 * Each dead-letter queue with the queues that feed it: a pair per queue a
 * setting names it for (`named`, possibly with no dead letters yet) or whose
 * dead letters it still lists (a setting changed or removed since: `named`
 * false), with how many it lists. Reads every dead letter's row once (they
 * are failed jobs, pruned by their queue's retention); at most `limit` pairs,
 * by dead-letter queue, then queue.
 */
export async function deadLetterQueuesList(db: Db, p: { limit: number }): Promise<DeadLetterQueueRow[]> {
  const rows = await db.all<{ dead_letter_queue: string; queue_name: string; jobs: number; named: number }>(sql`
    SELECT dead_letter_queue, queue_name, sum(n) AS jobs, max(named) AS named FROM (
      SELECT dead_letter_queue, queue_name, count(*) AS n, 0 AS named FROM jobs INDEXED BY jobs_dead_letters_idx
        WHERE dead_letter_queue IS NOT NULL AND status = 'failed' GROUP BY dead_letter_queue, queue_name
      UNION ALL
      SELECT dead_letter_queue, name, 0, 1 FROM queues WHERE dead_letter_queue IS NOT NULL)
    GROUP BY dead_letter_queue, queue_name ORDER BY dead_letter_queue, queue_name LIMIT ${Math.max(0, p.limit)}`);
  return rows.map((r) => ({ deadLetterQueue: r.dead_letter_queue, fromQueue: r.queue_name, jobs: Number(r.jobs), named: Number(r.named) === 1 }));
}

/** Sends dead letters back to their own queues; the jobs it moved (id and the queue each went back to), ascending by id. */
export async function jobsRedrive(db: Db, p: RedriveParams): Promise<RedrivenJob[]> {
  if (!Number.isSafeInteger(p.limit) || p.limit <= 0) return [];
  const now = nowSql(p.now);
  const where = deadWhere(p);
  const keyFree = sql`(jobs.idempotency_key IS NULL OR NOT EXISTS (SELECT 1 FROM jobs a WHERE a.queue_name = jobs.queue_name
    AND a.idempotency_key = jobs.idempotency_key AND a.status IN ('pending', 'running') AND a.id <> jobs.id))`;
  const newestOfKey = sql`(jobs.idempotency_key IS NULL OR jobs.id = (SELECT max(k.id) FROM jobs k WHERE k.queue_name = jobs.queue_name
    AND k.idempotency_key = jobs.idempotency_key AND k.status IN ('failed', 'cancelled')))`;
  const update = sql`UPDATE jobs SET status = 'pending', available_at = ${now},
      attempt_count = 0, errored_attempts = 0, lost_attempts = 0, snoozes = 0,
      failed_at = NULL, finished_at = NULL, dead_letter_queue = NULL, dead_lettered_at = NULL, updated_at = ${now},
      last_event = 'redriven', last_event_reason = ${p.reason}, last_event_actor = ${p.actor}
    WHERE id IN (SELECT id FROM jobs INDEXED BY jobs_dead_letters_idx WHERE ${where} ORDER BY id LIMIT ${p.limit}) AND ${where} AND ${keyFree} AND ${newestOfKey}
    RETURNING id, queue_name`;
  const first = alongsideFirst(db, p.also);
  const entry = p.also?.audit;
  const results = await batchList(db, [
    ...first,
    db.all<{ id: number; queue_name: string }>(update),
    // changes(): the rows the UPDATE just before it changed.
    ...(entry ? [auditInsert(db, { ...entry, after: sql`json_set(${entry.after ?? '{}'}, '$.changed', changes())` })] : []),
  ]);
  return (results[first.length] as { id: number; queue_name: string }[]).map((r) => ({ id: Number(r.id), queue: r.queue_name })).sort((a, b) => a.id - b.id);
}

export type { Now };
