/**
 * The reaper's decisions, as a pure function: what to do with one running job
 * whose lease expired past its grace, or whose hard deadline passed.
 *
 * Conservative by design. A candidate whose owner still beats its liveness row
 * and whose lease is only a little late is deferred (a GC pause, a slow
 * network), up to `maxReapDeferMs`; past that it is taken anyway. Taking a job
 * back can run it twice (at-least-once): the old worker's writes are then
 * refused by its lock token. A job that keeps losing its worker (a crash loop:
 * it kills or hangs its worker) fails for good after `maxLostAttempts`, so it
 * cannot loop forever.
 */
export interface ReapCandidate {
  id: number;
  attemptCount: number;
  maxAttempts: number;
  lostAttempts: number;
  maxLostAttempts: number;
  leaseExpiresAt: number;
  graceMs: number;
  deadlineAt: number | null;
  /** When the owner was last seen (claim, heartbeat or liveness beat), if it is registered. */
  ownerLastSeenAt: number | null;
}

export interface ReapRules {
  workerAliveMs: number;
  maxReapDeferMs: number;
}

/** Every reason a reaper take-back names (its event's reason; a label of leasehold_jobs_reaped_total). */
export const REAP_REASONS = ['reaped_due_to_expired_lease', 'deadline_exceeded', 'lost_too_many_times', 'attempts_exhausted'] as const;
export type ReapReason = (typeof REAP_REASONS)[number];

export type ReapDecision =
  | { action: 'defer'; reason: 'owner_alive'; overdueMs: number }
  | { action: 'requeue'; cause: 'lost' | 'deadline'; reason: ReapReason }
  | { action: 'fail'; cause: 'lost' | 'deadline'; reason: ReapReason; message: string }
  | { action: 'none' };

export function decideReap(c: ReapCandidate, now: number, rules: ReapRules): ReapDecision {
  if (c.deadlineAt !== null && c.deadlineAt <= now) {
    // Past its hard deadline the job is stopped even while it heartbeats: it
    // counts as an errored attempt, not a lost one.
    if (c.attemptCount >= c.maxAttempts) {
      return { action: 'fail', cause: 'deadline', reason: 'deadline_exceeded', message: `deadline exceeded on attempt ${c.attemptCount} of ${c.maxAttempts}` };
    }
    return { action: 'requeue', cause: 'deadline', reason: 'deadline_exceeded' };
  }
  const overdueMs = now - c.leaseExpiresAt - c.graceMs;
  if (overdueMs <= 0) return { action: 'none' };
  const ownerAlive = c.ownerLastSeenAt !== null && c.ownerLastSeenAt >= now - rules.workerAliveMs;
  if (ownerAlive && overdueMs < rules.maxReapDeferMs) return { action: 'defer', reason: 'owner_alive', overdueMs };
  if (c.lostAttempts + 1 >= c.maxLostAttempts) {
    return {
      action: 'fail',
      cause: 'lost',
      reason: 'lost_too_many_times',
      message: `lost its worker ${c.lostAttempts + 1} times (limit ${c.maxLostAttempts}): the job may be crashing or hanging its worker`,
    };
  }
  if (c.attemptCount >= c.maxAttempts) {
    return { action: 'fail', cause: 'lost', reason: 'attempts_exhausted', message: `lease expired on the last attempt (${c.attemptCount} of ${c.maxAttempts})` };
  }
  return { action: 'requeue', cause: 'lost', reason: 'reaped_due_to_expired_lease' };
}
