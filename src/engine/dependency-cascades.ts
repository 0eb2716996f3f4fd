/**
 * Runs the failure cascades the database says are owed (a failed, cancelled
 * or retried job's dependents: src/db/store/dependency-cascades.ts), one
 * bounded step at a time, giving the event loop back between steps so other
 * requests (a heartbeat, /healthz) run in between: with the embedded driver
 * a statement holds the loop while it runs, so the step's size
 * (LEASEHOLD_CASCADE_STEP_ROWS) bounds how long anyone waits.
 *
 * The call whose write made a cascade owed (a worker's failure, an
 * operator's cancel or retry) waits for its first steps (`settle`), so a
 * small flow is settled when its answer arrives, as it was when the
 * cascade ran inside the statement; the rest runs on, here, one step a
 * turn. What this process does not finish (it stopped, another server's
 * write) is found in the database by the next maintenance pass, on any
 * server. One loop per engine: a step on a cascade another server stepped
 * meanwhile does nothing, and the next reads the database again.
 */
import type { Clock } from '../core/clock.ts';
import type { Logger } from '../core/log.ts';
import type { CascadeStep, JobStore } from '../db/store/port.ts';
import { nextTurn } from '../maintenance/cascades.ts';

/** Steps the call that made a cascade owed waits for before it answers; the rest go on in the background. */
export const CASCADE_STEPS_IN_CALL = 8;


export interface CascadeRunnerDeps {
  store: JobStore;
  clock: Clock;
  log: Logger;
  rows: number;
  /** A request cannot keep working after its answer (Workers): no background loop; the maintenance pass goes on with what is left. */
  isolated: boolean;
  /** After each step, what it changed (waits on those jobs look again) and released (claims on those queues wake). */
  stepped(step: CascadeStep): void;
}

export class CascadeRunner {
  private loop: Promise<void> | undefined;
  private readonly waiters: { until: number; resolve: () => void }[] = [];
  private again = false;
  private closed = false;
  /** Steps this runner has taken (tests read it). */
  steps = 0;

  constructor(private readonly deps: CascadeRunnerDeps) {}

  /**
   * A cascade may be owed: steps until none is (or, isolated, only those the
   * caller waits for); resolves after `steps` more steps, or sooner when none
   * is left. Never rejects: a failed step is logged, and the maintenance
   * pass tries again.
   */
  settle(steps = CASCADE_STEPS_IN_CALL): Promise<void> {
    if (this.closed) return Promise.resolve();
    const done = new Promise<void>((resolve) => this.waiters.push({ until: this.steps + steps, resolve }));
    if (this.loop) this.again = true;
    else this.loop = this.run().finally(() => (this.loop = undefined));
    return done;
  }

  /** Stops after the step in flight (shutdown). */
  close(): void {
    this.closed = true;
  }

  private async run(): Promise<void> {
    try {
      for (;;) {
        this.again = false;
        const step = await this.deps.store.dependencyCascadeStep({ rows: this.deps.rows, now: this.deps.clock.now() });
        if (step) {
          this.steps++;
          this.deps.stepped(step);
        } else if (!this.again) break;
        this.wake(false);
        if (this.closed || (this.deps.isolated && this.waiters.length === 0)) break;
        await nextTurn();
      }
    } catch (err) {
      this.deps.log.warn(`leasehold: a dependency cascade step failed (the next maintenance pass goes on with it): ${err instanceof Error ? err.message : String(err)}`, { event: 'cascade_step_failed' });
    } finally {
      this.wake(true);
    }
  }

  private wake(all: boolean): void {
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      if (!all && this.waiters[i]!.until > this.steps) continue;
      this.waiters[i]!.resolve();
      this.waiters.splice(i, 1);
    }
  }
}
