/**
 * A duplicate the handler found downstream (the worker's
 * `ctx.reportDuplicate(key)`): the handler saw that what it was about to do
 * had already been done (a payment with this key exists, a row is already
 * there), which leasehold cannot see itself.
 *
 * An owned write (src/db/store/owned.ts): only the job's current owner may
 * report, so the count is one per report of a live attempt, and a stale
 * worker's report is refused and recorded as a stale write like any other.
 * One batch: the `duplicate_reported` event (reason: the key) and its counter,
 * written by the same guarded statements, so the count never runs ahead of
 * the events or behind them.
 */
import { sql } from 'drizzle-orm';
import type { Now } from '../../core/clock.ts';
import type { Db } from '../db.ts';
import { nowSql } from '../sql.ts';
import { ownedWriteThen } from './owned.ts';
import type { OwnedOutcome } from './port-types.ts';

/** The counter (counters.name) and event type a report is kept under. */
export const DUPLICATE_REPORTED = 'duplicate_reported';

export async function duplicateReportIfOwned(
  db: Db,
  p: { jobId: number; key: string; lockToken: string; workerId: string; now: Now },
): Promise<OwnedOutcome<{ id: number }>> {
  const now = nowSql(p.now);
  // The counter after the event, in the same transaction and under the same
  // guard (nothing between them changes the job): counted iff recorded.
  const { outcomes } = await ownedWriteThen<{ id: number }, { value: number }>(
    db,
    { refs: [{ id: p.jobId, lockToken: p.lockToken }], workerId: p.workerId, write: 'report_duplicate', now: p.now },
    (refs, guard) => sql`INSERT INTO events (job_id, queue_name, type, reason, message, actor, worker_id, attempt, at)
      SELECT jobs.id, jobs.queue_name, ${DUPLICATE_REPORTED}, ${p.key},
        'the handler found ' || ${JSON.stringify(p.key)} || ' already done downstream on attempt ' || jobs.attempt_count,
        ${p.workerId}, ${p.workerId}, jobs.attempt_count, ${now}
      FROM ${refs} AS v, jobs WHERE ${guard}
      RETURNING job_id AS id`,
    [
      db.all(sql`INSERT INTO counters (queue_name, name, label, value)
        SELECT queue_name, ${DUPLICATE_REPORTED}, '', 1 FROM jobs
        WHERE id = ${p.jobId} AND status = 'running' AND lock_token = ${p.lockToken} AND locked_by = ${p.workerId}
        ON CONFLICT (queue_name, name, label) DO UPDATE SET value = value + 1
        RETURNING value`),
    ],
  );
  return outcomes[0]!;
}
