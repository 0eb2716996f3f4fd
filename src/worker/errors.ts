/** What a handler can throw to steer the outcome, and the reasons a job's signal is aborted. */

/** Fail the job for good: no more attempts. */
export class NonRetryableError extends Error {
  override readonly name = 'NonRetryableError';
}

/**
 * step() found the step uncertain (an earlier claim started it and never
 * recorded it done: it may or may not have run) and the handler did not say
 * what to do (`ifUncertain`). Fails the job for good: another attempt would
 * find the same; decide in the handler (`'run'` or `'skip'`), then retry it.
 */
export class StepUncertainError extends NonRetryableError {
  constructor(
    readonly step: string,
    readonly startedOnAttempt: number,
  ) {
    super(
      `step ${JSON.stringify(step)} was started on attempt ${startedOnAttempt} and never recorded done: it may or may not have run. ` +
        `Say what to do with step(name, fn, { ifUncertain: 'run' | 'skip' }) after checking downstream`,
    );
  }
}

/** Fail this attempt and retry after `delayMs` instead of the server's backoff. */
export class RetryAfter extends Error {
  override readonly name = 'RetryAfter';
  constructor(
    readonly delayMs: number,
    message = `retry after ${delayMs} ms`,
  ) {
    super(message);
  }
}

/**
 * Not now, try again in `delayMs`, without spending an attempt or counting a
 * failure: the job goes back to pending, due then, and its snoozes are
 * counted. Past its queue's maxSnoozes (default 100) the server refuses the
 * snooze and the worker retries it after the same delay instead, spending an
 * attempt (as RetryAfter), so a job that keeps snoozing still ends.
 */
export class JobSnooze extends Error {
  override readonly name = 'JobSnooze';
  constructor(
    readonly delayMs: number,
    message = `snoozed for ${delayMs} ms`,
  ) {
    super(message);
  }
}

export type AbortCause = 'lease_lost' | 'lease_expired_locally' | 'deadline_exceeded' | 'shutdown';

/** The value of `signal.reason` when leasehold stops a handler. */
export class JobAbortedError extends Error {
  override readonly name = 'JobAbortedError';
  constructor(
    /** Why the job was stopped. */
    readonly reason: AbortCause,
    message: string,
  ) {
    super(message);
  }
}
