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
 *
 * After a server's gap (it just started, or its own reaper stopped ticking:
 * a pause, a suspended VM, a stalled event loop) workers could not renew
 * through it, so the database keeps a hold (src/db/store/reaper-hold.ts),
 * read with every candidate: until it ends, what would be taken for an
 * expired lease is held instead (deadlines still apply), for every caller
 * above alike.
 */
import type { OnLost } from './wire.ts';

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
  /**
   * The reaper's hold, read with the row (src/db/store/reaper-hold.ts): until
   * then no expired lease is taken. Null or absent: no hold was ever written.
   */
  holdUntil?: number | null;
  /** Why the hold began, in words ("the server just started"). */
  holdCause?: string | null;
  /**
   * What the platform said of the owner's process, when an owner check is
   * configured (LEASEHOLD_OWNER_CHECK_URL; src/maintenance/owner-check.ts)
   * and the lease has expired. Absent: no check was made.
   */
  ownerCheck?: OwnerAnswer;
  /**
   * What the job's lost attempt leads to (the job's onLost, else its
   * queue's): 'hold' turns every requeue below into a hold for a person
   * (src/core/held.ts). Absent: 'retry'.
   */
  onLost?: OnLost | null;
}

/**
 * The owner check's answer: the process that holds the lease still exists
 * (`alive`), is known not to (`gone`), or the platform cannot tell (`unknown`,
 * also a timeout, an error or an answer not understood). `detail` says what
 * was asked and answered, for the event's message.
 */
export interface OwnerAnswer {
  state: 'alive' | 'gone' | 'unknown';
  detail: string;
}

export interface ReapRules {
  workerAliveMs: number;
  maxReapDeferMs: number;
}

/** Every reason a reaper take-back names (its event's reason; a label of leasehold_jobs_reaped_total). */
export const REAP_REASONS = ['reaped_due_to_expired_lease', 'owner_gone', 'deadline_exceeded', 'lost_too_many_times', 'attempts_exhausted'] as const;
export type ReapReason = (typeof REAP_REASONS)[number];

/** Every decision says why, in words an operator reads (refusals, events, the dashboard). */
export type ReapDecision = (
  | { action: 'defer'; reason: 'owner_alive'; overdueMs: number }
  /**
   * Back to pending. `held`: the job's onLost is 'hold', so it waits for a
   * person (released, completed or failed by hand) instead of being claimed
   * again, and a lost attempt is not counted against maxLostAttempts.
   */
  | { action: 'requeue'; cause: 'lost' | 'deadline'; reason: ReapReason; held?: true }
  | { action: 'fail'; cause: 'lost' | 'deadline'; reason: ReapReason; message: string }
  /**
   * A server's gap holds expired leases for their owners until `until`; then
   * the reaper would do `then` (if nothing arrives meanwhile).
   */
  | { action: 'hold'; reason: 'server_gap'; until: number; then: { action: 'requeue' | 'fail'; reason: ReapReason } }
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

/** When the reaper would take the job for a lost lease, if no heartbeat or beat arrives from now on (a hold in force pushes it back). */
function lostTakesAt(c: ReapCandidate, rules: ReapRules): number {
  const overdueFrom = c.leaseExpiresAt + c.graceMs + 1;
  const hold = c.holdUntil ?? -Infinity;
  if (c.ownerLastSeenAt === null) return Math.max(overdueFrom, hold);
  const ownerLooksDeadAt = c.ownerLastSeenAt + rules.workerAliveMs + 1;
  return Math.max(overdueFrom, Math.min(ownerLooksDeadAt, c.leaseExpiresAt + c.graceMs + rules.maxReapDeferMs), hold);
}

/** Whether a hold is in force at `now`: expired leases wait for their owners. */
export const holdInForce = (c: Pick<ReapCandidate, 'holdUntil'>, now: number): c is { holdUntil: number } => c.holdUntil != null && now < c.holdUntil;

/**
 * The hold in words, with when it ends (the reap_held events, the reaper's
 * log line, and every refusal of a requeue during the hold).
 */
export function holdWhy(hold: { holdUntil: number; holdCause?: string | null }, now: number): string {
  return `${hold.holdCause ?? 'a server had a gap'}: owners get ${seconds(hold.holdUntil - now)} more to renew (the hold ends at ${new Date(hold.holdUntil).toISOString()}) before expired leases are taken back`;
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
    return { action: 'requeue', cause: 'deadline', reason: 'deadline_exceeded', why, takesAt: c.deadlineAt, ...heldIf(c) };
  }
  const takesAt = Math.min(lostTakesAt(c, rules), c.deadlineAt ?? Infinity);
  const owner = c.lockedBy ?? 'the owner';
  const overdueMs = now - c.leaseExpiresAt - c.graceMs;
  if (now <= c.leaseExpiresAt) return { action: 'none', why: `the lease runs for ${seconds(c.leaseExpiresAt - now)} more`, takesAt };
  const check = c.ownerCheck;
  // The platform says the owner's process no longer exists: nobody can renew
  // this lease, so the grace and the wait for a live owner protect nothing.
  // A server's hold still applies (it lasts one heartbeat plus grace).
  if (check?.state === 'gone' && !holdInForce(c, now)) {
    return lostTake(c, `lease expired ${seconds(now - c.leaseExpiresAt)} ago and the owner check says ${owner}'s process is gone (${check.detail})`, now, 'owner_gone');
  }
  if (overdueMs <= 0) {
    return { action: 'none', why: `lease expired ${seconds(now - c.leaseExpiresAt)} ago, inside the ${setting(c.graceMs)} grace`, takesAt };
  }
  const expired = `lease expired ${seconds(now - c.leaseExpiresAt)} ago (grace ${setting(c.graceMs)})`;
  const seenAlive = c.ownerLastSeenAt !== null && c.ownerLastSeenAt >= now - rules.workerAliveMs;
  // The platform's word that the process exists counts like a recent beat: a
  // hung or cut-off process may still finish, so it gets the same bounded wait.
  const checkedAlive = check?.state === 'alive';
  const ownerAlive = seenAlive || checkedAlive;
  if (ownerAlive && overdueMs < rules.maxReapDeferMs) {
    const seen = seenAlive ? `owner ${owner} was seen ${seconds(now - c.ownerLastSeenAt!)} ago` : `the owner check says ${owner}'s process is alive (${check!.detail})`;
    const why = `${seen}; the reaper waits for a live owner up to ${setting(rules.maxReapDeferMs)} past the grace`;
    return { action: 'defer', reason: 'owner_alive', overdueMs, why, takesAt };
  }
  const ownerState = ownerAlive
    ? `owner ${owner} still looks alive, but the reaper has waited its ${setting(rules.maxReapDeferMs)} limit`
    : c.ownerLastSeenAt === null
      ? `owner ${owner} is not registered`
      : `owner ${owner} was last seen ${seconds(now - c.ownerLastSeenAt)} ago`;
  const why = `${expired} and ${ownerState}${check && !checkedAlive ? `; owner check: ${check.state} (${check.detail})` : ''}`;
  const take = lostTake(c, why, now);
  // After a server's gap the owner may not have been able to renew: wait for it.
  if (holdInForce(c, now)) {
    return {
      action: 'hold',
      reason: 'server_gap',
      until: c.holdUntil,
      then: { action: take.action, reason: take.reason },
      why: holdWhy(c, now),
      takesAt: Math.min(c.holdUntil, c.deadlineAt ?? Infinity),
    };
  }
  return take;
}

/** What the reaper does with an expired lease it takes: fail it when its budgets are spent, else requeue it. */
function lostTake(c: ReapCandidate, why: string, now: number, reason: 'reaped_due_to_expired_lease' | 'owner_gone' = 'reaped_due_to_expired_lease'): Extract<ReapDecision, { action: 'requeue' | 'fail' }> {
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
  return { action: 'requeue', cause: 'lost', reason, why, takesAt: now, ...heldIf(c) };
}

/** A requeue of a job whose onLost is 'hold' goes to the held state. */
const heldIf = (c: Pick<ReapCandidate, 'onLost'>): { held?: true } => (c.onLost === 'hold' ? { held: true } : {});

/** A decision that takes the job now. */
export type ReapTake = Extract<ReapDecision, { action: 'requeue' | 'fail' }>;

/** Whether the decision takes the job now (requeue or fail): what a requeue without force may do. */
export const takesNow = (d: ReapDecision): d is ReapTake => d.action === 'requeue' || d.action === 'fail';

/**
 * What an operator's requeue did, or would do (src/db/store/requeue.ts):
 * without force, the reaper's take; with force, back to pending, and what
 * that went past.
 */
export interface RequeueDone {
  /** requeue: back to pending now; fail: failed for good, as the reaper would (the job's budgets are spent). */
  action: 'requeue' | 'fail';
  /** The reaper's reason for its take, or forced. */
  reason: ReapReason | 'forced';
  /** In words: the reaper's own, or (forced) what the reaper would have done. */
  why: string;
  forced: boolean;
  /** The job's onLost is 'hold': it went (or goes) to the held state, for a person, rather than back to the queue. */
  held?: true;
  /** Forced during a server's hold: the hold it overrode. */
  overrodeHold?: { until: number; why: string };
  /** Forced past the job's attempt or lost-attempt budget: what that grants. */
  beyondBudget?: string;
}

/**
 * What a forced requeue of this candidate does now: back to pending, and what
 * that goes past (a hold in force, the job's budgets), beside what the
 * reaper itself would have done.
 */
export function forcedRequeueOf(c: ReapCandidate, now: number, rules: ReapRules): RequeueDone {
  const d = decideReap(c, now, rules);
  const beyondBudget = forceBeyondBudget(c);
  return {
    action: 'requeue',
    reason: 'forced',
    why: takesNow(d) ? `the reaper would ${d.action === 'fail' ? 'fail it for good' : 'take it back'} now` : `the reaper would not take it now: ${d.why}`,
    forced: true,
    ...heldIf(c),
    // The hold concerns expired leases only: forcing a live one goes past the lease, not the hold.
    ...(holdInForce(c, now) && c.leaseExpiresAt < now ? { overrodeHold: { until: c.holdUntil, why: holdWhy(c, now) } } : {}),
    ...(beyondBudget ? { beyondBudget } : {}),
  };
}

/** The reaper's take as what a requeue without force does. */
export const requeueDoneOf = (d: ReapTake): RequeueDone => ({
  action: d.action,
  reason: d.reason,
  why: d.action === 'fail' ? `${d.message}: ${d.why}` : d.why,
  forced: false,
  ...(d.action === 'requeue' && d.held ? { held: true as const } : {}),
});

/**
 * What a forced requeue grants beyond the job's budgets, in words (null:
 * nothing). Force puts the job back to pending whatever the reaper would do,
 * so a job whose attempts are spent runs once more: the answer and its event
 * say so.
 */
export function forceBeyondBudget(c: Pick<ReapCandidate, 'attemptCount' | 'maxAttempts' | 'lostAttempts' | 'maxLostAttempts'>): string | null {
  if (c.attemptCount >= c.maxAttempts) return `its attempts were spent (${c.attemptCount} of ${c.maxAttempts}): the next claim is attempt ${c.attemptCount + 1} of ${c.maxAttempts}`;
  if (c.lostAttempts + 1 >= c.maxLostAttempts) return `it has now lost its worker ${c.lostAttempts + 1} times (limit ${c.maxLostAttempts}), where the reaper would fail it for good`;
  return null;
}
