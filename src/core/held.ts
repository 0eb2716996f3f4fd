/**
 * Held jobs (onLost 'hold'): a job whose attempt was lost waits for a person
 * instead of running again by itself.
 *
 * Which attempts are "lost": the reaper's take of an expired lease (its
 * worker died, hung or was cut off; the owner check said its process is
 * gone), of a passed deadline, an operator's requeue of a running job
 * (forced or not), and the owner's own failure of an attempt that lost its
 * lease or ran out of time (its worker says it stopped the handler for that,
 * or the deadline or lease had run out by the database's clock): in each the
 * old attempt may have done part of its work, and only a person can tell
 * whether running it again is safe. An attempt whose budgets are spent still fails as it would with
 * 'retry'. A held lost attempt does not count toward maxLostAttempts.
 *
 * In the database a held job is `pending` with `held_at` set and
 * `available_at` at HELD_AVAILABLE_AT, which no claim reaches, and a trigger
 * (drizzle/0027) skips any write that would make it running. An operator
 * ends the hold: release (pending, due now: it runs again), complete by hand
 * (with a result) or fail (for good), each audited with a required reason.
 */

/** The largest time a JavaScript Date can name (year 275760): a held job's available_at, after every claim's `now`. */
export const HELD_AVAILABLE_AT = 8_640_000_000_000_000;

/** What an operator does to a held job. */
export const HELD_ACTIONS = ['release', 'complete', 'fail'] as const;
export type HeldAction = (typeof HELD_ACTIONS)[number];

/** The event type of a hold, and its reasons: which take of a lost attempt held the job. */
export const HELD_EVENT = 'held';
export const HELD_REASONS = ['lost_attempt_held', 'deadline_held', 'requeue_held'] as const;
export type HeldReason = (typeof HELD_REASONS)[number];

/** The event each operator action on a held job writes. */
export const HELD_ACTION_EVENTS: Record<HeldAction, string> = {
  release: 'released_by_operator',
  complete: 'completed_by_operator',
  fail: 'failed_by_operator',
};

/** The one text of "this job is not held", for API, dashboard and CLI. */
export const ONLY_HELD = 'only a held job (one whose lost attempt waits for a person) can be released, completed or failed by hand';
export const HELD_NEEDS_REASON = 'acting on a held job needs a reason: it is kept in the audit trail';

/** What is known of a held job's lost attempt, kept on the row when it was held (held_attempt). */
export interface LostAttempt {
  worker: string | null;
  instance: string | null;
  attempt: number;
  fencingToken: number;
  startedAt: number | null;
  lastHeartbeatAt: number | null;
  leaseExpiresAt: number | null;
  /** Why the attempt was taken back, in the reaper's words. */
  why: string;
  /** What the worker reported, when its own failure of the lost attempt held the job. */
  error?: string;
}

/** The stored held_attempt text, read back (null when absent or not understood). */
export function parseLostAttempt(text: string | null | undefined): LostAttempt | null {
  if (!text) return null;
  try {
    const v = JSON.parse(text) as LostAttempt;
    return typeof v === 'object' && v !== null ? v : null;
  } catch {
    return null;
  }
}

/** The hold's event message: who had it, when it last beat, why it was taken. */
export function heldMessage(p: { worker: string | null; lastHeartbeatAt: number | null; why: string }): string {
  const beat = p.lastHeartbeatAt === null ? 'no heartbeat recorded' : `last heartbeat ${new Date(p.lastHeartbeatAt).toISOString()}`;
  return `held for a person (onLost 'hold'): the attempt of ${p.worker ?? 'an unknown worker'} was lost (${beat}): ${p.why}`;
}
