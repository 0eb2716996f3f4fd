/**
 * The producer client's errors. Every one has a `code`: the API's own code
 * (invalid_request, unauthorized, forbidden, not_found, conflict,
 * payload_too_large...) for an answer the server gave, `network` when the
 * server could not be reached, `timeout` when waitForJob or waitForJobs
 * gave up.
 */

/** The server answered with an error: its `code`, `message` and the `field` it blames. */
export class LeaseholdApiError extends Error {
  override readonly name = 'LeaseholdApiError';
  constructor(
    /** The HTTP status (400, 401, 403, 404, 409, 413, 415, 5xx...). */
    readonly status: number,
    /** The API's error code, e.g. `invalid_request`. */
    readonly code: string,
    message: string,
    /** The request field the error names, e.g. `priority`, when there is one. */
    readonly field?: string,
    /** A 429 or 503's Retry-After, in ms: when the server asks to be tried again. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/** The server could not be reached, or answered without JSON (a proxy's error page). */
export class LeaseholdNetworkError extends Error {
  override readonly name = 'LeaseholdNetworkError';
  readonly code = 'network';
}

/** waitForJob's (or waitForJobs') timeoutMs passed before the job (or every job) finished. */
export class LeaseholdTimeoutError extends Error {
  override readonly name = 'LeaseholdTimeoutError';
  readonly code = 'timeout';
}
