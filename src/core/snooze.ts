/**
 * Snooze: a handler's "not now, try again in N". The job goes back to
 * pending, due after the delay, and its attempt is given back: no attempt is
 * spent and no error is recorded. Each snooze is counted on the job (and per
 * queue); a queue's maxSnoozes bounds it so a job cannot snooze forever.
 * Past the limit the snooze is refused (the job is still the worker's), and
 * the SDK retries it after the same delay instead, spending an attempt, so
 * the job's attempts still end it.
 */

/** How many times one job may snooze when its queue does not say (queues.max_snoozes). */
export const DEFAULT_MAX_SNOOZES = 100;

/** The longest one snooze may be: a year, as for a retry's delay. */
export const MAX_SNOOZE_MS = 365 * 24 * 3600 * 1000;

/** The one text of a snooze refused at the limit (API, in-process transport, SDK log). */
export function snoozeLimitText(id: number | string, snoozes: number, maxSnoozes: number): string {
  return `job ${id} has snoozed ${snoozes} times, its queue's limit (maxSnoozes ${maxSnoozes}): the snooze is refused and the job is still yours; fail it or retry it (RetryAfter spends an attempt)`;
}
