/**
 * Held jobs (onLost 'hold', src/core/held.ts): a lost attempt's job waits
 * for a person.
 *
 * - hold (heldSetSql, inside the reaper's and the operator's requeue
 *   UPDATE; the owner's failure of a lost attempt builds the same columns,
 *   finish.ts): running -> pending with held_at set, available_at out of every
 *   claim's reach, and what was known of the attempt (held_attempt, read
 *   from the row's values before the same UPDATE clears the lease).
 * - release: held -> pending, due now (it runs again at the next claim).
 * - complete by hand: held -> completed, with the operator's result; the
 *   hold's message is no longer its error, and its due time is when it was held.
 * - fail: held -> failed for good, the reason as its error.
 * - the owner's own failure of a lost attempt (finish.ts) holds it too.
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
    held_attempt = ${heldAttemptSql(sql`${p.why}`)},
    last_error = ${heldMessage(p)}, last_event = ${HELD_EVENT}, last_event_reason = ${p.reason}`;
}

/**
 * What is known of the attempt being held (held_attempt, src/core/held.ts
 * LostAttempt), read from the running row inside the UPDATE that takes it;
 * `error`: what its worker reported, when the hold came from its own
 * failure (the failure's repeat is recognised by it, finish.ts).
 */
export function heldAttemptSql(why: SQL, error?: string): SQL {
  return sql`json_object('worker', locked_by, 'instance', locked_by_instance, 'attempt', attempt_count, 'fencingToken', lease_epoch,
      'startedAt', started_at, 'lastHeartbeatAt', last_heartbeat_at, 'leaseExpiresAt', lease_expires_at, 'why', ${why}${error === undefined ? sql`` : sql`, 'error', ${error}`})`;
}

/**
 * heldMessage (src/core/held.ts) in SQL, from the running row's own
 * columns, for a hold whose worker and last heartbeat are not known before
 * the statement runs (the owner's failure, finish.ts). The same words: the
 * conformance suite compares the two.
 */
export function heldMessageSql(why: SQL): SQL {
  return sql`('held for a person (onLost ''hold''): the attempt of ' || coalesce(locked_by, 'an unknown worker') || ' was lost ('
    || CASE WHEN last_heartbeat_at IS NULL THEN 'no heartbeat recorded' ELSE 'last heartbeat ' || strftime('%Y-%m-%dT%H:%M:%fZ', last_heartbeat_at / 1000.0, 'unixepoch') END
    || '): ' || ${why})`;
}

/** Whether the job's onLost, else its queue's, is 'hold' (for an UPDATE of jobs; the queue is read only when the job names none). */
export const onLostHoldSql = sql`(coalesce(jobs.on_lost, (SELECT q.on_lost FROM queues q WHERE q.name = jobs.queue_name), 'retry') = 'hold')`;

/**
 * A job leaving a lost attempt's hold by hand gets back a due time a person
 * can read: when it was held (what the API showed as its availableAt while
 * held), instead of HELD_AVAILABLE_AT in the year 275760. SET reads held_at
 * as it was, before the same statement clears it. A dependency's hold never
 * moved available_at, so it keeps its own.
 */
const heldDueSql = (now: SQL) => sql`available_at = CASE WHEN available_at >= ${HELD_AVAILABLE_AT} THEN coalesce(held_at, ${now}) ELSE available_at END`;

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
  // A lost attempt's hold leaves nothing on the completed row: no error (the
  // hold's words stay on its event) and a due time of its own (below). A
  // dependency's hold keeps its error, which says which dependency held it.
  return guardedWithAudit(db, p.id, sql`UPDATE jobs SET status = 'completed', result = ${jsonOrNull(p.result)}, completed_at = ${now}, finished_at = ${now}, held_at = NULL,
      ${heldDueSql(now)}, last_error = CASE WHEN dependency_failed_by IS NULL THEN NULL ELSE last_error END,
      updated_at = ${now}, ${audited(p, HELD_ACTION_EVENTS.complete)}
    WHERE ${heldGuard(p.id)} RETURNING *`, p.also);
}

export function jobFailIfHeld(db: Db, p: OperatorParams): Promise<OperatorOutcome> {
  const now = nowSql(p.now);
  return guardedWithAudit(db, p.id, sql`UPDATE jobs SET status = 'failed', failed_at = ${now}, finished_at = ${now}, held_at = NULL, ${heldDueSql(now)},
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
