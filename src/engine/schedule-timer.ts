/**
 * Schedules on time, whatever the reaper interval: a timer armed for the
 * earliest next run of an unpaused schedule, which fires the due
 * occurrences (schedulesOnce) when it comes and arms itself for the next.
 * Without it occurrences are enqueued only by the maintenance pass, so a
 * per-second schedule under a 5 s reaper interval would make one job in
 * five. The pass still fires schedules too (the fallback where a runtime
 * keeps no timers: the Workers cron), and every firing is guarded by the
 * schedule's next_run_at, so the timer, the pass and other servers' timers
 * enqueue each occurrence once.
 *
 * The timer re-reads the earliest next run at least every refreshMs (the
 * reaper interval), to see schedules another server created or changed;
 * `poke()` re-reads now (this server's schedule API calls it).
 */
import type { Clock } from '../core/clock.ts';
import type { Config } from '../core/config.ts';
import type { Logger } from '../core/log.ts';
import type { JobStore } from '../db/store/port.ts';
import { schedulesOnce } from '../maintenance/schedules.ts';

export class ScheduleTimer {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private running = false;
  private again = false;
  private closed = false;

  constructor(
    private readonly deps: { store: JobStore; config: Config; clock: Clock; log: Logger; jobsBecameClaimable: (queue: string, n: number) => void },
    private readonly refreshMs = deps.config.reaperIntervalMs,
  ) {}

  start(): void {
    this.poke();
  }

  /** Look at the schedules now (one changed here, or the timer came due). */
  poke(): void {
    if (this.closed) return;
    if (this.running) return void (this.again = true);
    clearTimeout(this.timer);
    this.timer = undefined;
    void this.cycle();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
  }

  private async cycle(): Promise<void> {
    this.running = true;
    let waitMs = this.refreshMs;
    try {
      const { store, config, clock } = this.deps;
      const read = clock.now();
      const now = typeof read === 'number' ? read : await store.readNow();
      const next = await store.schedulesNextDueAt();
      if (next !== null && next <= now) {
        const report = await schedulesOnce(store, now, config, this.deps.jobsBecameClaimable);
        // Errors (a queue past its cap) leave a schedule due: wait the refresh rather than spin on it.
        waitMs = report.errors.length > 0 ? this.refreshMs : 0;
      } else if (next !== null) {
        waitMs = Math.min(this.refreshMs, next - now);
      }
    } catch (err) {
      this.deps.log.error('schedule timer: could not fire schedules (the maintenance pass still will)', { event: 'schedule_timer_failed', error: err });
    } finally {
      this.running = false;
    }
    if (this.closed) return;
    if (this.again) {
      this.again = false;
      waitMs = 0;
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.cycle();
    }, Math.max(0, waitMs));
    // Never what keeps a process alive (Deno's timers have no unref).
    (this.timer as { unref?: () => void }).unref?.();
  }
}
