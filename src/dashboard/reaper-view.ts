/**
 * What the dashboard says about a running job from the rules themselves: what
 * the reaper would do with it now (src/core/reaper.ts decideReap, the function
 * the reaper and the operator's requeue use) and how long it has been stalled
 * (src/core/stall.ts), and whether it is suspect (src/core/suspect.ts). Pure:
 * the rows come from the store's dashboard reads.
 */
import type { Config } from '../core/config.ts';
import { decideReap, forcedRequeueOf, type ReapCandidate, type ReapDecision, type RequeueDone } from '../core/reaper.ts';
import { stalledForMs } from '../core/stall.ts';
import { suspectRanForMs } from '../core/suspect.ts';
import type { RunningJobView } from '../db/store/port.ts';

/**
 * What the reaper would do with a running job now: `takesAt` is when it takes
 * the job if nothing changes (no heartbeat, no beat); the reaper acts at its
 * first pass after that.
 */
export function reaperView(j: RunningJobView, now: number, config: Config): ReapDecision | null {
  const c = candidateOf(j);
  return c === null ? null : decideReap(c, now, config);
}

/** What a forced requeue would do to this running job now, and what it would go past (the hold, the budget). */
export function forceView(j: RunningJobView, now: number, config: Config): RequeueDone | null {
  const c = candidateOf(j);
  return c === null ? null : forcedRequeueOf(c, now, config);
}

/** A running job's row as the reaper's candidate (the hold read with it). */
function candidateOf(j: RunningJobView): ReapCandidate | null {
  if (j.status !== 'running' || j.lease_expires_at === null) return null;
  return {
    id: j.id,
    attemptCount: j.attempt_count,
    maxAttempts: j.max_attempts,
    lostAttempts: j.lost_attempts,
    maxLostAttempts: j.q_max_lost_attempts,
    leaseExpiresAt: j.lease_expires_at,
    graceMs: j.q_grace_ms,
    deadlineAt: j.deadline_at,
    startedAt: j.started_at,
    lockedBy: j.locked_by,
    ownerLastSeenAt: j.owner_last_seen_at,
    holdUntil: j.hold_until,
    holdCause: j.hold_cause,
  };
}

/** How long a running job has been stalled (heartbeating, no progress past its queue's stallMs), or null. */
export const jobStalledForMs = (j: RunningJobView, now: number) =>
  j.status === 'running'
    ? stalledForMs({ progressedAt: j.progressed_at, startedAt: j.started_at, leaseExpiresAt: j.lease_expires_at, stallMs: j.q_stall_ms }, now)
    : null;

/**
 * How long a running job has run when it is suspect (lease live, past its
 * queue's learned threshold, which the row carries), or null.
 */
export const jobSuspectForMs = (j: RunningJobView, now: number) =>
  j.status === 'running' ? suspectRanForMs({ startedAt: j.started_at, leaseExpiresAt: j.lease_expires_at }, j.suspect_after_ms, now) : null;
