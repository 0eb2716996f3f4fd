/**
 * Time as the worker sees it: a monotonic `now()` and one-shot timers.
 *
 * Every part of the worker (claim loop, lease keeper, completer, close)
 * reads time and waits only through this, so a test can run a worker on a
 * fake clock (WorkerOptions.timers) and watch a lease run out, a deadline
 * pass or a drain time out without waiting for it in real time.
 */
export interface WorkerTimers {
  /** Monotonic milliseconds (the default is performance.now()). */
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The runtime's own clock and timers. */
export const realTimers: WorkerTimers = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** Waits `ms`, or less if `signal` aborts; never leaves a listener behind on the signal. */
export function sleep(timers: WorkerTimers, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      timers.clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = timers.setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** A check that turns true once `ms` have passed. */
export function after(timers: WorkerTimers, ms: number): () => boolean {
  const until = timers.now() + ms;
  return () => timers.now() > until;
}

/** ±20 %, so a fleet of workers does not poll in step. */
export function jitter(ms: number): number {
  return ms * (0.8 + Math.random() * 0.4);
}
