/**
 * Notices when this process's reaper stopped ticking: the process was paused
 * (SIGSTOP, a VM or laptop suspended), its event loop stalled, or it just
 * started. During such a gap the server answered nobody, so workers that were
 * alive could not renew their leases, and on resume the reaper would take
 * their jobs before their queued heartbeats were even read. After a gap
 * expired leases are held (deadlines still apply) until owners have had one
 * heartbeat interval plus grace to renew: the server writes the hold to the
 * database (`noticed()`, src/runtime/reaper-timer.ts), so every reaper and
 * every operator's requeue sees it, not only this process's timer.
 *
 * A server back from a gap is still catching up for a while: it reads the
 * requests queued meanwhile (every worker's heartbeats) one after the other,
 * slowly on a starved host. While it does, its own ticks come late; each
 * tick later than half a heartbeat (or half an interval, the smaller) while
 * the hold is in force moves the hold's end to one heartbeat plus grace past
 * that tick, so owners get that window from a server that is answering, not
 * from one still working through the backlog. It never runs on for more than
 * one lease past the gap, so a host that stays starved still recovers its
 * zombies.
 *
 * Time is monotonic (performance.now keeps counting while a process is
 * stopped), so a wall-clock jump is not a gap and a pause always is.
 *
 * The wall clock the leases use (the database's, as its statements return
 * it, or a test's fixed clock) is watched beside it: `readClock` reads it
 * between two monotonic instants, and a reading that moved further or less
 * far than the monotonic clock did is a step (src/core/clock-step.ts). The
 * reaper reads the clock this way before each pass and decides at that very
 * reading, so a forward step's hold is in the database before the pass looks
 * at a lease. Deno, Bun and Node all have performance.now; on Workers no
 * process lives between cron runs, so nothing watches there.
 */
import { clockStepWatch, type ClockStep } from '../core/clock-step.ts';
import type { Config } from '../core/config.ts';

export interface Hold {
  /** How long the reaper did not tick (null: the process just started). */
  gapMs: number | null;
  /** Milliseconds from now until the hold ends. */
  remainingMs: number;
}

export interface GapWatch {
  /** A tick of the interval timer: notices a gap since the previous one; the hold in force, if any. */
  tick(): Hold | undefined;
  /** The hold in force, without counting as a tick (a cron pass has its own cadence). */
  current(): Hold | undefined;
  /** The gap a tick noticed (a start, a pause) and how long to hold for it, once: what the server writes to the database. */
  noticed(): { gapMs: number | null; holdMs: number } | undefined;
  /** Reads the wall clock through `read`, timed on the monotonic clock: the time read, and the step since the previous reading, if any. */
  readClock(read: () => Promise<number>): Promise<{ at: number; step?: ClockStep }>;
}

export function gapWatch(config: Pick<Config, 'reaperIntervalMs' | 'heartbeatMs' | 'graceMs' | 'leaseMs'>, monotonic: () => number = () => performance.now()): GapWatch {
  const steps = clockStepWatch(config);
  let lastTick: number | undefined;
  let hold: { gapMs: number | null; until: number; latest: number } | undefined;
  let fresh: { gapMs: number | null; holdMs: number } | undefined;
  // A late tick within one heartbeat is ordinary jitter: no beat was missed.
  const allowedMs = config.reaperIntervalMs + config.heartbeatMs;
  const holdMs = config.heartbeatMs + config.graceMs;
  // Late enough, during a hold, to say the server is still catching up.
  const catchingUpMs = Math.min(config.reaperIntervalMs, config.heartbeatMs) / 2;
  const current = () => {
    const t = monotonic();
    if (!hold || t >= hold.until) return undefined;
    return { gapMs: hold.gapMs, remainingMs: hold.until - t };
  };
  return {
    tick() {
      const t = monotonic();
      const gapMs = lastTick === undefined ? null : t - lastTick;
      lastTick = t;
      if (gapMs === null || gapMs > allowedMs) {
        hold = { gapMs, until: t + holdMs, latest: t + holdMs + config.leaseMs };
        fresh = { gapMs, holdMs };
      } else if (hold && t < hold.until && gapMs - config.reaperIntervalMs > catchingUpMs) {
        const until = Math.min(hold.latest, t + holdMs);
        if (until > hold.until) {
          hold.until = until;
          fresh = { gapMs: hold.gapMs, holdMs: until - t };
        }
      }
      return current();
    },
    current,
    noticed() {
      const gap = fresh;
      fresh = undefined;
      return gap;
    },
    async readClock(read) {
      const monoStartMs = monotonic();
      const wallMs = await read();
      const step = steps.observe({ wallMs, monoStartMs, monoEndMs: monotonic() });
      return step ? { at: wallMs, step } : { at: wallMs };
    },
  };
}
