/**
 * Worker timers on a test's manual clock (WorkerOptions.timers): the worker's
 * time is the server's time, and it moves only when the test advances it.
 * Timers due in between fire in order, each followed by a few real turns of
 * the event loop so the async work it starts (a call to the app, a write to
 * the database file) finishes before the next one fires.
 */
import type { ManualClock } from '../src/core/clock.ts';
import type { WorkerTimers } from '../src/worker/timers.ts';

export interface FakeTimers extends WorkerTimers {
  /** Moves the clock `ms` forward, firing every timer due on the way. */
  advance(ms: number): Promise<void>;
  /** Advances in `stepMs` steps until `check` holds; throws after `maxMs` of fake time. */
  advanceUntil<T>(what: string, check: () => T | Promise<T>, opts?: { stepMs?: number; maxMs?: number }): Promise<T>;
}

/** A few real event-loop turns: enough for in-process calls to the app and the database to finish. */
export async function settle(turns = 5): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise((r) => setImmediate(r));
}

export function fakeTimers(clock: ManualClock): FakeTimers {
  let seq = 0;
  const due = new Map<number, { at: number; fn: () => void }>();
  const next = (until: number) => {
    let best: [number, { at: number; fn: () => void }] | undefined;
    for (const entry of due) if (entry[1].at <= until && (!best || entry[1].at < best[1].at || (entry[1].at === best[1].at && entry[0] < best[0]))) best = entry;
    return best;
  };
  const timers: FakeTimers = {
    now: () => clock.now(),
    setTimeout(fn, ms) {
      const id = ++seq;
      due.set(id, { at: clock.now() + Math.max(0, ms), fn });
      return id;
    },
    clearTimeout(handle) {
      due.delete(handle as number);
    },
    async advance(ms) {
      const end = clock.now() + ms;
      await settle();
      for (let entry = next(end); entry; entry = next(end)) {
        due.delete(entry[0]);
        if (entry[1].at > clock.now()) clock.set(entry[1].at);
        entry[1].fn();
        await settle();
      }
      clock.set(end);
      await settle();
    },
    async advanceUntil(what, check, opts = {}) {
      const step = opts.stepMs ?? 50;
      const max = opts.maxMs ?? 60_000;
      for (let spent = 0; ; spent += step) {
        const value = await check();
        if (value) return value;
        if (spent >= max) throw new Error(`fake clock: ${what} did not happen within ${max} ms`);
        await timers.advance(step);
      }
    },
  };
  return timers;
}
