/**
 * Retry backoff: exponential in the attempt number, capped, with "equal jitter"
 * (half fixed, half random) so a burst of failures does not come back as a
 * burst of retries.
 *
 * The same formula runs inside SQL (src/db/sql.ts `backoffSql`) so a fail or a
 * reap stays one statement; this copy documents it and is what tests check
 * the database's numbers against.
 */
export interface BackoffSettings {
  baseMs: number;
  maxMs: number;
}

/** The un-jittered delay before attempt `attempt + 1`, after `attempt` attempts. */
export function backoffCeilingMs(attempt: number, { baseMs, maxMs }: BackoffSettings): number {
  const exponent = Math.min(Math.max(attempt - 1, 0), 30);
  return Math.min(maxMs, baseMs * 2 ** exponent);
}

/** The range a jittered delay falls in: [ceiling / 2, ceiling]. */
export function backoffRangeMs(attempt: number, settings: BackoffSettings): [number, number] {
  const ceiling = backoffCeilingMs(attempt, settings);
  return [Math.floor(ceiling / 2), ceiling];
}
