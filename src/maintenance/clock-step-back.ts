/**
 * rebaseAfterStepBackOnce: the first part of every maintenance pass. When the
 * database shows that the clock the leases use stepped back (it recorded a
 * sighting, a pass or a hold later than now: steppedBackBy in
 * src/core/clock-step.ts), the leases renewed before the step would end that
 * much later than they should, so a dead owner's job would wait that much
 * longer for the reaper. This moves each such running job onto the clock as
 * it is now (its lease counted from now: src/db/store/clock-step.ts), then the
 * evidence, so the next pass finds nothing.
 *
 * It needs no memory of its own, so it holds wherever a pass runs (a server's
 * timer, Deno.cron, the Workers cron, `leasehold reap`) and after a restart.
 * Bounded: `reaperBatchSize` rows per statement, at most 20 statements per
 * pass; what is left (and the evidence) waits for the next pass.
 */
import { steppedBackBy } from '../core/clock-step.ts';
import type { Now } from '../core/clock.ts';
import type { Config } from '../core/config.ts';
import type { JobStore } from '../db/store/port.ts';

/** What a pass found and did after a step back: how far the clock went back (at least), and the running jobs it rebased. */
export interface StepBackReport {
  stepMs: number;
  jobs: number;
  /** More rows were left for the next pass. */
  more: boolean;
}

const MAX_STATEMENTS = 20;

export async function rebaseAfterStepBackOnce(
  store: Pick<JobStore, 'clockLatestRecorded' | 'jobsRebaseAfterStepBack' | 'clockStepBackSettle'>,
  at: number,
  now: Now,
  config: Pick<Config, 'heartbeatMs' | 'graceMs' | 'reaperBatchSize'>,
): Promise<StepBackReport | undefined> {
  // Judged against the clock as the same statement reads it (a beat landing after `at` was read is no step).
  const seen = await store.clockLatestRecorded({ now });
  const behind = steppedBackBy(seen.latest, seen.now, config);
  if (behind === null) return undefined;
  const stepMs = Math.round(behind);
  let jobs = 0;
  for (let i = 0; i < MAX_STATEMENTS; i++) {
    const moved = await store.jobsRebaseAfterStepBack({ now: at, limit: config.reaperBatchSize });
    jobs += moved;
    if (moved < config.reaperBatchSize) {
      await store.clockStepBackSettle({ now: at });
      return { stepMs, jobs, more: false };
    }
  }
  return { stepMs, jobs, more: true };
}
