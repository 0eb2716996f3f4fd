/**
 * Ending an attempt, by its owner.
 *
 * Precondition for all: the owner's guard (see owned.ts).
 * - complete: running -> completed, with the result.
 * - fail: running -> pending (retryable and attempts left: due after the
 *   backoff, or after `retryAfterMs`) or -> failed (non-retryable, or attempts
 *   spent), with `last_error`; counted as an errored attempt. A failure that
 *   ends a lost attempt (lostFailure: its worker says it stopped the handler
 *   for a lost lease or a deadline, or the deadline or lease had run out) of a
 *   job whose onLost is 'hold' is held for a person instead of retried
 *   (held.ts), as the reaper holds it; a failure for good stays one.
 * - release: running -> pending now, the attempt given back (shutdown);
 *   refused past the attempt's deadline.
 * complete and fail are accepted past the deadline until the reaper takes the
 * job (see owned.ts, beforeDeadline).
 * Each records the token that ended the attempt and what it wrote
 * (finished_token, finished_write), so the same write sent again by the same
 * worker under the same token (its answer was lost) is answered with the job
 * as stored, changes nothing, and is not a stale write; until the job's next
 * claim clears them. A complete repeats only with the same result, a fail
 * only with the same error, retryable and retryAfterMs.
 * No row back: `lease_lost` (or `not_found`), and nothing changed.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { QueueDefaults } from '../../core/config.ts';
import type { Db } from '../db.ts';
import { backoffSql, nowSql } from '../sql.ts';
import { claimStatements, inFairOrder } from './claim.ts';
import { hasDependentsSql } from './dependencies.ts';
import { completionTallyStatement } from './attempt-stats.ts';
import { heldAttemptSql, heldMessageSql, onLostHoldSql } from './held.ts';
import { HELD_AVAILABLE_AT, HELD_EVENT } from '../../core/held.ts';
import { CLEAR_LEASE, finishedWriteSql, ownerGuard, ownedWrite, ownedWriteThen, returning } from './owned.ts';
import type { JobRecord } from '../../core/job-record.ts';
import type { Claimed, CompleteParams, FailParams, LeanJob, NextClaimParams, OwnedOutcome, ReleaseParams } from './port-types.ts';

/** Completes many jobs in one statement; each is still fenced by its own token. */
export function jobsCompleteIfOwned(db: Db, p: CompleteParams & { full: true }): Promise<OwnedOutcome<JobRecord>[]>;
export function jobsCompleteIfOwned(db: Db, p: CompleteParams): Promise<OwnedOutcome[]>;
export function jobsCompleteIfOwned(db: Db, p: CompleteParams): Promise<OwnedOutcome[]> {
  return ownedWrite(db, { refs: p.results, workerId: p.workerId, write: 'complete', now: p.now, repeat: completeRepeat(p), tally: completeTally(db, p) }, completeUpdate(p));
}

/**
 * The completion's counts, once for the whole batch (attempt-stats.ts): the
 * jobs its guard accepts, read with the update's own refs and guard right
 * before it in the same transaction, so exactly the jobs the update then
 * moves.
 */
const completeTally = (db: Db, p: CompleteParams) => (v: SQL, guard: SQL) => [
  completionTallyStatement(db, { refsJoinedUnderGuard: sql`FROM ${v} AS v JOIN jobs ON jobs.id = v.id WHERE ${guard}`, now: p.now }),
];

/** The same completion, already stored: this token, this worker, this result. */
const completeRepeat = (p: CompleteParams) => ({
  match: sql`j.finished_token IS v.token AND j.finished_write IS ${finishedWriteSql('complete', p.workerId)} AND j.result IS v.data`,
  returning: returning(p.full ?? false),
});

const completeUpdate = (p: CompleteParams) => (v: SQL, guard: SQL) => {
  const now = nowSql(p.now);
  return sql`UPDATE jobs SET status = 'completed', result = v.data, completed_at = ${now}, finished_at = ${now},
      ${CLEAR_LEASE}, finished_token = v.token, finished_write = ${finishedWriteSql('complete', p.workerId)}, updated_at = ${now},
      last_event = 'completed', last_event_reason = NULL, last_event_actor = ${p.workerId}
    FROM ${v} AS v WHERE ${guard} RETURNING ${returning(p.full ?? false)}, ${hasDependentsSql}`;
};

/**
 * Completes jobs and claims the next ones in one transaction: the slots the
 * completions free are refilled without a second commit or round trip. The
 * completions come first, so a worker never holds more than it asked for.
 */
export async function jobsCompleteThenClaim(
  db: Db,
  p: CompleteParams & { claim: NextClaimParams; instanceId?: string | undefined; defaults: QueueDefaults },
): Promise<{ outcomes: OwnedOutcome[]; claimed: Claimed[] }> {
  // Sent again with its claim id, the claim answers the jobs it took the first time (claim.ts).
  const claim = claimStatements(db, { ...p.claim, workerId: p.workerId, instanceId: p.instanceId, now: p.now, defaults: p.defaults });
  const { outcomes, then } = await ownedWriteThen<LeanJob, Claimed>(
    db,
    { refs: p.results, workerId: p.workerId, instanceId: p.instanceId, write: 'complete', now: p.now, claims: true, repeat: completeRepeat(p), tally: completeTally(db, p) },
    completeUpdate(p),
    claim,
  );
  return { outcomes, claimed: inFairOrder(then) };
}

export function jobFailIfOwned(db: Db, p: FailParams): Promise<OwnedOutcome<JobRecord>[]> {
  const now = nowSql(p.now);
  const retry = sql`(${p.retryable ? 1 : 0} = 1 AND jobs.attempt_count < jobs.max_attempts)`;
  const delay = sql`coalesce(${p.retryAfterMs ?? null}, ${backoffSql(sql`jobs.attempt_count`, sql`jobs.queue_name`, p.defaults)})`;
  const lost = lostFailure(p, now);
  // A retry of a lost attempt whose onLost is 'hold' holds it instead, as the reaper would.
  const hold = sql`(${retry} AND ${lost.lost} AND ${onLostHoldSql})`;
  const write = finishedWriteSql('fail', p.workerId, p.retryable, p.retryAfterMs ?? null, ...(p.abortedBy ? [p.abortedBy] : []));
  // The same failure, already stored: this token, this worker, this error,
  // retryable, delay and abort (a held one keeps the error in held_attempt).
  const sameError = sql`(j.last_error IS ${p.error} OR (j.held_at IS NOT NULL AND json_extract(j.held_attempt, '$.error') IS ${p.error}))`;
  const repeat = { match: sql`j.finished_token IS v.token AND j.finished_write IS ${write} AND ${sameError}`, returning: sql`*` };
  return ownedWrite<JobRecord>(
    db,
    { refs: [{ id: p.id, lockToken: p.lockToken }], workerId: p.workerId, write: 'fail', now: p.now, repeat },
    (v) => sql`UPDATE jobs SET
        status = CASE WHEN ${retry} THEN 'pending' ELSE 'failed' END,
        available_at = CASE WHEN ${hold} THEN ${HELD_AVAILABLE_AT} WHEN ${retry} THEN ${now} + ${delay} ELSE jobs.available_at END,
        held_at = CASE WHEN ${hold} THEN ${now} ELSE jobs.held_at END,
        held_attempt = CASE WHEN ${hold} THEN ${heldAttemptSql(lost.why, p.error)} ELSE jobs.held_attempt END,
        failed_at = CASE WHEN ${retry} THEN NULL ELSE ${now} END,
        finished_at = CASE WHEN ${retry} THEN NULL ELSE ${now} END,
        errored_attempts = jobs.errored_attempts + CASE WHEN ${hold} AND NOT ${lost.deadline} THEN 0 ELSE 1 END,
        last_error = CASE WHEN ${hold} THEN ${heldMessageSql(lost.why)} ELSE ${p.error} END,
        ${CLEAR_LEASE}, finished_token = v.token, finished_write = ${write}, updated_at = ${now},
        last_event = CASE WHEN ${hold} THEN ${HELD_EVENT} WHEN ${retry} THEN 'retry_scheduled' ELSE 'failed' END,
        last_event_reason = CASE WHEN ${hold} THEN CASE WHEN ${lost.deadline} THEN 'deadline_held' ELSE 'lost_attempt_held' END
          WHEN ${retry} THEN NULL WHEN ${p.retryable ? 1 : 0} = 0 THEN 'non_retryable' ELSE 'attempts_exhausted' END,
        last_event_actor = ${p.workerId}
      FROM ${v} AS v WHERE ${ownerGuard(p.workerId)} RETURNING *, ${hasDependentsSql}`,
  );
}

/**
 * Whether a failure ends a lost attempt, as SQL over the running row: the
 * worker says it stopped its handler because the attempt lost its lease or
 * ran out of time (`abortedBy`), or, whatever the worker says, the attempt's
 * deadline or lease had already run out by the database's clock (a worker
 * built on the HTTP API without the SDK sends no abortedBy). `deadline`:
 * it ran out of time (held as `deadline_held`, counted as an errored
 * attempt, as the reaper counts it); otherwise it lost its lease (held as
 * `lost_attempt_held`, not counted). `why`: in words, for held_attempt and
 * the hold's message.
 */
function lostFailure(p: FailParams, now: SQL): { lost: SQL; deadline: SQL; why: SQL } {
  const pastDeadline = sql`(jobs.deadline_at IS NOT NULL AND jobs.deadline_at <= ${now})`;
  const leaseExpired = sql`(jobs.lease_expires_at <= ${now})`;
  const deadline = p.abortedBy === 'deadline_exceeded' ? sql`1` : pastDeadline;
  const reported = `${p.workerId} failed the attempt`;
  const why = p.abortedBy
    ? sql`${`${reported} after it stopped its handler (${p.abortedBy}): ${p.error}`}`
    : sql`CASE WHEN ${pastDeadline} THEN ${`${reported} after its deadline passed (deadline_exceeded): ${p.error}`}
        ELSE ${`${reported} after its lease expired: ${p.error}`} END`;
  return { lost: p.abortedBy ? sql`1` : sql`(${pastDeadline} OR ${leaseExpired})`, deadline, why };
}

/**
 * Gives leases back (a worker shutting down): the jobs are claimable at once,
 * in their old place in the queue, and the attempt does not count.
 */
export function jobsReleaseIfOwned(db: Db, p: ReleaseParams & { full: true }): Promise<OwnedOutcome<JobRecord>[]>;
export function jobsReleaseIfOwned(db: Db, p: ReleaseParams): Promise<OwnedOutcome[]>;
export function jobsReleaseIfOwned(db: Db, p: ReleaseParams): Promise<OwnedOutcome[]> {
  const now = nowSql(p.now);
  const write = finishedWriteSql('release', p.workerId);
  // The same release, already stored (whatever its reason: the job was given back either way).
  const repeat = { match: sql`j.finished_token IS v.token AND j.finished_write IS ${write}`, returning: returning(p.full ?? false) };
  // Past the deadline a release would give back an attempt that ran out of
  // time: refused, and the reaper counts it.
  return ownedWrite(db, { refs: p.leases, workerId: p.workerId, write: 'release', now: p.now, beforeDeadline: true, repeat }, (v, guard) =>
    sql`UPDATE jobs SET status = 'pending', attempt_count = jobs.attempt_count - 1, ${CLEAR_LEASE},
        finished_token = v.token, finished_write = ${write}, updated_at = ${now},
        last_event = 'released', last_event_reason = ${p.reason}, last_event_actor = ${p.workerId}
      FROM ${v} AS v WHERE ${guard} RETURNING ${returning(p.full ?? false)}`,
  );
}
