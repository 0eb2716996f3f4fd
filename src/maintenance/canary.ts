/**
 * canaryRunsOnce: moves every canary run that is still watching one
 * decision forward, inside the maintenance pass (so it runs on every
 * server and on the Workers cron; the state is in the database, so a
 * restart or another server's pass picks up where the last one left).
 *
 * For each run: no step yet -> take the first; else read the watched
 * step's health and judge it (src/core/canary.ts judgeCanaryStep): a
 * threshold passed -> stopped, with the reason; window not over -> wait;
 * healthy -> take the next step, or done when every frozen job is taken.
 * Each write is guarded by the step the pass read (src/db/store/canary.ts),
 * so two passes at once take a step once, and a cancel that lands first
 * wins. Every decision is an event on the run and an audit entry.
 */
import { canaryStepSize, judgeCanaryStep } from '../core/canary.ts';
import type { Config } from '../core/config.ts';
import type { CanaryRunRecord, JobStore } from '../db/store/port.ts';

export interface CanaryReport {
  /** Steps taken by this pass. */
  steps: number;
  /** Runs this pass stopped by themselves, and runs it found done. */
  stopped: number;
  done: number;
}

/** Runs advanced per pass (the rest wait for the next pass). */
const RUNS_PER_PASS = 20;

export type CanaryDecision = { action: 'step'; step: number; requeued: number } | { action: 'stopped' | 'done'; reason: string; why: string } | { action: 'wait' | 'raced' };

/** One decision for one run (what the pass makes for each, and what the API makes right after a start). */
export async function advanceCanaryRun(
  store: JobStore,
  run: CanaryRunRecord & { remaining: number },
  at: number,
  config: Config,
  jobsBecameClaimable?: (queue: string, n: number) => void,
): Promise<CanaryDecision> {
  const take = async (): Promise<CanaryDecision> => {
    const size = canaryStepSize({ first: run.first, growth: run.growth, cap: config.bulkActionCap ?? 100 }, run.step + 1);
    const taken = await store.canaryStepTake({ runId: run.id, fromStep: run.step, size, rules: config, now: at });
    if (!taken.taken) return { action: 'raced' };
    if (taken.requeued.length > 0) jobsBecameClaimable?.(run.queue, taken.requeued.length);
    return { action: 'step', step: taken.step, requeued: taken.requeued.length };
  };
  if (run.step === 0 || run.stepStartedAt === null) return take();
  const health = await store.canaryStepHealth({ runId: run.id, step: run.step, afterEvent: run.stepAfterEvent ?? 0, now: at });
  const verdict = judgeCanaryStep(health, { ...run, stepStartedAt: run.stepStartedAt }, at);
  if (verdict.verdict === 'wait') return { action: 'wait' };
  if (verdict.verdict === 'stop') {
    const ok = await store.canaryRunFinish({ runId: run.id, step: run.step, state: 'stopped', reason: verdict.reason, why: verdict.why, now: at });
    return ok ? { action: 'stopped', reason: verdict.reason, why: verdict.why } : { action: 'raced' };
  }
  if (run.remaining > 0) return take();
  const why = `every one of the ${run.selected} jobs taken (${run.requeued} requeued, ${run.failedForGood} failed for good as the reaper would, ${run.skipped} skipped); ${verdict.why}`;
  const ok = await store.canaryRunFinish({ runId: run.id, step: run.step, state: 'done', reason: 'all_taken', why, now: at });
  return ok ? { action: 'done', reason: 'all_taken', why } : { action: 'raced' };
}

/** One decision for each watching run. */
export async function canaryRunsOnce(store: JobStore, at: number, config: Config, jobsBecameClaimable?: (queue: string, n: number) => void): Promise<CanaryReport> {
  const report: CanaryReport = { steps: 0, stopped: 0, done: 0 };
  for (const run of await store.canaryRunsActive({ limit: RUNS_PER_PASS })) {
    const d = await advanceCanaryRun(store, run, at, config, jobsBecameClaimable);
    if (d.action === 'step') report.steps++;
    else if (d.action === 'stopped') report.stopped++;
    else if (d.action === 'done') report.done++;
  }
  return report;
}
