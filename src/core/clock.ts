/**
 * One clock for every lease deadline.
 *
 * Lease times are never taken from a worker's clock. By default every statement
 * reads the database's own clock (`DB_CLOCK`), so several servers or edge
 * isolates sharing one database agree on who holds a lease even when their
 * own clocks disagree. Tests and replays pass a fixed number instead.
 */
export const DB_CLOCK = 'db' as const;

/** A clock minute: the per-minute activity rows and the kept counts of delayed jobs (drizzle/0016) are keyed by it. */
export const MINUTE_MS = 60_000;

/** The time a statement runs at: epoch milliseconds, or "ask the database". */
export type Now = number | typeof DB_CLOCK;

export interface Clock {
  now(): Now;
}

/** The production clock: the database decides what time it is. */
export const databaseClock: Clock = { now: () => DB_CLOCK };

export interface ManualClock extends Clock {
  now(): number;
  advance(ms: number): number;
  set(ms: number): void;
}

/** A clock that moves only when told to: for tests. */
export function manualClock(startMs = Date.UTC(2030, 0, 1)): ManualClock {
  let t = startMs;
  return {
    now: () => t,
    advance(ms) {
      t += ms;
      return t;
    },
    set(ms) {
      t = ms;
    },
  };
}
