/**
 * The reaper's decisions, as a pure function: what to do with one running job
 * whose lease expired past its grace, or whose hard deadline passed.
 *
 * One function decides for everyone who takes a running job back without
 * force: the reaper pass, the operator's requeue (API, dashboard single and
 * bulk), and the dashboard's "reaper acts in ..." figure. So an operator can
 * never take a job the reaper would still leave with its owner.
 *
 * Conservative by design. A candidate whose owner still beats its liveness row
 * and whose lease is only a little late is deferred (a GC pause, a slow
 * network), up to `maxReapDeferMs`; past that it is taken anyway. Taking a job
 * back can run it twice (at-least-once): the old worker's writes are then
 * refused by its lock token. A job that keeps losing its worker (a crash loop:
 * it kills or hangs its worker) fails for good after `maxLostAttempts`, so it
 * cannot loop forever. Every claim has a deadline (the job's, the queue's or
 * the server's timeout): past it the job is taken even while it heartbeats, so
 * a hung handler cannot hold its job forever.
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
  /** When this attempt was claimed (for the deadline's message). */
  startedAt: number | null;
  /** The worker holding the job (for messages). */
  lockedBy: string | null;
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

/** Every decision says why, in words an operator reads (refusals, events, the dashboard). */
export type ReapDecision = (
  | { action: 'defer'; reason: 'owner_alive'; overdueMs: number }
  | { action: 'requeue'; cause: 'lost' | 'deadline'; reason: ReapReason }
  | { action: 'fail'; cause: 'lost' | 'deadline'; reason: ReapReason; message: string }
  | { action: 'none' }
) & {
  why: string;
  /**
   * When the reaper takes the job if nothing changes from now (no heartbeat,
   * no liveness beat): `now` or earlier when it takes it now.
   */
  takesAt: number;
};

/** A measured span: one decimal ("1.3 s", "5.0 s"). */
export const seconds = (ms: number) => `${(Math.max(0, ms) / 1000).toFixed(1)} s`;
/** A configured span: as short as it is exact ("10 s", "0.5 s", "1 h"). */
export function setting(ms: number): string {
  if (ms >= 3_600_000 && ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms >= 60_000 && ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${Number((ms / 1000).toFixed(3))} s`;
}

/** When the reaper would take the job for a lost lease, if no heartbeat or beat arrives from now on. */
function lostTakesAt(c: ReapCandidate, rules: ReapRules): number {
  const overdueFrom = c.leaseExpiresAt + c.graceMs + 1;
  if (c.ownerLastSeenAt === null) return overdueFrom;
  const ownerLooksDeadAt = c.ownerLastSeenAt + rules.workerAliveMs + 1;
  return Math.max(overdueFrom, Math.min(ownerLooksDeadAt, c.leaseExpiresAt + c.graceMs + rules.maxReapDeferMs));
}

export function decideReap(c: ReapCandidate, now: number, rules: ReapRules): ReapDecision {
  if (c.deadlineAt !== null && c.deadlineAt <= now) {
    // Past its hard deadline the job is stopped even while it heartbeats: it
    // counts as an errored attempt, not a lost one.
    const started = c.startedAt ?? c.deadlineAt;
    const why = `deadline_exceeded: ran ${seconds(now - started)}, timeout ${setting(c.deadlineAt - started)}`;
    if (c.attemptCount >= c.maxAttempts) {
      return { action: 'fail', cause: 'deadline', reason: 'deadline_exceeded', message: `${why} (attempt ${c.attemptCount} of ${c.maxAttempts})`, why, takesAt: c.deadlineAt };
    }
    return { action: 'requeue', cause: 'deadline', reason: 'deadline_exceeded', why, takesAt: c.deadlineAt };
  }
  const takesAt = Math.min(lostTakesAt(c, rules), c.deadlineAt ?? Infinity);
  const owner = c.lockedBy ?? 'the owner';
  const overdueMs = now - c.leaseExpiresAt - c.graceMs;
  if (now <= c.leaseExpiresAt) return { action: 'none', why: `the lease runs for ${seconds(c.leaseExpiresAt - now)} more`, takesAt };
  if (overdueMs <= 0) {
    return { action: 'none', why: `lease expired ${seconds(now - c.leaseExpiresAt)} ago, inside the ${setting(c.graceMs)} grace`, takesAt };
  }
  const expired = `lease expired ${seconds(now - c.leaseExpiresAt)} ago (grace ${setting(c.graceMs)})`;
  const ownerAlive = c.ownerLastSeenAt !== null && c.ownerLastSeenAt >= now - rules.workerAliveMs;
  if (ownerAlive && overdueMs < rules.maxReapDeferMs) {
    const why = `owner ${owner} was seen ${seconds(now - c.ownerLastSeenAt!)} ago; the reaper waits for a live owner up to ${setting(rules.maxReapDeferMs)} past the grace`;
    return { action: 'defer', reason: 'owner_alive', overdueMs, why, takesAt };
  }
  const ownerState = ownerAlive
    ? `owner ${owner} still looks alive, but the reaper has waited its ${setting(rules.maxReapDeferMs)} limit`
    : c.ownerLastSeenAt === null
      ? `owner ${owner} is not registered`
      : `owner ${owner} was last seen ${seconds(now - c.ownerLastSeenAt)} ago`;
  const why = `${expired} and ${ownerState}`;
  if (c.lostAttempts + 1 >= c.maxLostAttempts) {
    return {
      action: 'fail',
      cause: 'lost',
      reason: 'lost_too_many_times',
      message: `lost its worker ${c.lostAttempts + 1} times (limit ${c.maxLostAttempts}): the job may be crashing or hanging its worker`,
      why,
      takesAt: now,
    };
  }
  if (c.attemptCount >= c.maxAttempts) {
    return { action: 'fail', cause: 'lost', reason: 'attempts_exhausted', message: `lease expired on the last attempt (${c.attemptCount} of ${c.maxAttempts})`, why, takesAt: now };
  }
  return { action: 'requeue', cause: 'lost', reason: 'reaped_due_to_expired_lease', why, takesAt: now };
}
