/**
 * Notices when this process's reaper stopped ticking: the process was paused
 * (SIGSTOP, a VM or laptop suspended), its event loop stalled, or it just
 * started. During such a gap the server answered nobody, so workers that were
 * alive could not renew their leases, and on resume the reaper would take
 * their jobs before their queued heartbeats were even read. After a gap the
 * reaper holds back what it would take for an expired lease (deadlines still
 * apply) until owners have had one heartbeat interval plus grace to renew.
 *
 * Time is monotonic (performance.now keeps counting while a process is
 * stopped), so a wall-clock jump is not a gap and a pause always is.
 */
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
}

export function gapWatch(config: Pick<Config, 'reaperIntervalMs' | 'heartbeatMs' | 'graceMs'>, monotonic: () => number = () => performance.now()): GapWatch {
  let lastTick: number | undefined;
  let hold: { gapMs: number | null; until: number } | undefined;
  // A late tick within one heartbeat is ordinary jitter: no beat was missed.
  const allowedMs = config.reaperIntervalMs + config.heartbeatMs;
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
      if (gapMs === null || gapMs > allowedMs) hold = { gapMs, until: t + config.heartbeatMs + config.graceMs };
      return current();
    },
    current,
  };
}
