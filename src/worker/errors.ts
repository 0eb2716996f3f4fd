/** What a handler can throw to steer the outcome, and the reasons a job's signal is aborted. */

/** Fail the job for good: no more attempts. */
export class NonRetryableError extends Error {
  override readonly name = 'NonRetryableError';
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
