/**
 * Held jobs (onLost 'hold', src/core/held.ts): a lost attempt's job waits
 * for a person.
 *
 * - hold (heldSetSql, inside the reaper's and the operator's requeue
 *   UPDATE): running -> pending with held_at set, available_at out of every
 *   claim's reach, and what was known of the attempt (held_attempt, read
 *   from the row's values before the same UPDATE clears the lease).
 * - release: held -> pending, due now (it runs again at the next claim).
 * - complete by hand: held -> completed, with the operator's result.
 * - fail: held -> failed for good, the reason as its error.
 * A job held because a dependency failed (policy 'hold', drizzle/0031) is
 * held the same way, and lost no attempt. It is not released: released, it
 * would still wait for that dependency, which will not complete unless a
 * person retries it; so a release is refused (`heldByDependency` names the
 * dependency), and retrying the dependency is what lets it go on. Completed
 * or failed by hand, its error, failed, says which dependency held it.
 * Precondition of the three (in the WHERE): the job is pending and held.
 * Each writes its event (released_by_operator, completed_by_operator,
 * failed_by_operator) with the operator's reason, and its audit entry.
 * No row back: `conflict` with the job's status, or `not_found`; a pending
 * job that is not held answers `conflict` too (status pending).
 * A trigger (drizzle/0027) clears held_at when a held job leaves pending.
 */
import { sql, type SQL } from 'drizzle-orm';
import { HELD_ACTION_EVENTS, HELD_AVAILABLE_AT, HELD_EVENT, heldMessage, type HeldReason } from '../../core/held.ts';
import type { Db } from '../db.ts';
import { jsonOrNull, nowSql } from '../sql.ts';
import { guardedWithAudit } from './operator-outcome.ts';
import type { JobRecord } from '../../core/job-record.ts';
import type { HeldCount, OperatorOutcome, OperatorParams } from './port-types.ts';

/**
 * The SET of a hold, for an UPDATE of a running job that also clears its
 * lease (CLEAR_LEASE): SQLite reads every SET expression from the row as it
 * was, so held_attempt records the attempt being taken.
 */
export function heldSetSql(p: { now: SQL | number; reason: HeldReason; why: string; worker: string | null; lastHeartbeatAt: number | null }): SQL {
  const now = typeof p.now === 'number' ? sql`${p.now}` : p.now;
  return sql`status = 'pending', held_at = ${now}, available_at = ${HELD_AVAILABLE_AT},
    held_attempt = json_object('worker', locked_by, 'instance', locked_by_instance, 'attempt', attempt_count, 'fencingToken', lease_epoch,
      'startedAt', started_at, 'lastHeartbeatAt', last_heartbeat_at, 'leaseExpiresAt', lease_expires_at, 'why', ${p.why}),
    last_error = ${heldMessage(p)}, last_event = ${HELD_EVENT}, last_event_reason = ${p.reason}`;
}

const heldGuard = (id: number) => sql`id = ${id} AND status = 'pending' AND held_at IS NOT NULL`;
const audited = (p: OperatorParams, event: string) => sql`last_event = ${event}, last_event_reason = ${p.reason}, last_event_actor = ${p.actor}`;

export async function jobReleaseIfHeld(db: Db, p: OperatorParams): Promise<OperatorOutcome> {
  const now = nowSql(p.now);
  const outcome = await guardedWithAudit(db, p.id, sql`UPDATE jobs SET held_at = NULL, available_at = ${now}, updated_at = ${now}, ${audited(p, HELD_ACTION_EVENTS.release)}
    WHERE ${heldGuard(p.id)} AND dependency_failed_by IS NULL RETURNING *`, p.also);
  if (outcome.ok || outcome.reason !== 'conflict' || outcome.status !== 'pending') return outcome;
  // Refused while pending: say so when it is a dependency's hold (read after the refusal: nothing was written).
  const [row] = await db.all<{ dependency_failed_by: number | null }>(sql`SELECT dependency_failed_by FROM jobs WHERE ${heldGuard(p.id)}`);
  return row?.dependency_failed_by != null ? { ...outcome, heldByDependency: row.dependency_failed_by } : outcome;
}

export function jobCompleteIfHeld(db: Db, p: OperatorParams & { result?: unknown }): Promise<OperatorOutcome> {
  const now = nowSql(p.now);
  return guardedWithAudit(db, p.id, sql`UPDATE jobs SET status = 'completed', result = ${jsonOrNull(p.result)}, completed_at = ${now}, finished_at = ${now}, held_at = NULL,
      updated_at = ${now}, ${audited(p, HELD_ACTION_EVENTS.complete)}
    WHERE ${heldGuard(p.id)} RETURNING *`, p.also);
}

export function jobFailIfHeld(db: Db, p: OperatorParams): Promise<OperatorOutcome> {
  const now = nowSql(p.now);
  return guardedWithAudit(db, p.id, sql`UPDATE jobs SET status = 'failed', failed_at = ${now}, finished_at = ${now}, held_at = NULL,
      last_error = CASE WHEN dependency_failed_by IS NULL THEN 'failed by hand after a lost attempt: '
        ELSE 'failed by hand while held for failed dependency ' || dependency_failed_by || ': ' END || ${p.reason ?? 'no reason given'},
      updated_at = ${now}, ${audited(p, HELD_ACTION_EVENTS.fail)}
    WHERE ${heldGuard(p.id)} RETURNING *`, p.also);
}

/** Held jobs, longest held first (jobs_held_idx), of one queue or all, at most `limit`. */
export function jobsHeldList(db: Db, p: { queue?: string | undefined; limit: number }): Promise<JobRecord[]> {
  const queue = p.queue === undefined ? sql`` : sql`queue_name = ${p.queue} AND `;
  return db.all<JobRecord>(sql`SELECT * FROM jobs WHERE ${queue}held_at IS NOT NULL AND status = 'pending' ORDER BY held_at, id LIMIT ${p.limit}`);
}

/** How many jobs each queue holds for a person, and since when the oldest (queues with none are left out). */
export function jobsHeldCounts(db: Db): Promise<HeldCount[]> {
  return db.all<HeldCount>(sql`SELECT queue_name AS queue, count(*) AS held, min(held_at) AS oldestHeldAt FROM jobs
    WHERE held_at IS NOT NULL AND status = 'pending' GROUP BY queue_name ORDER BY queue_name`);
}
