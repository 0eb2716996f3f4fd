/** A canary run as the API answers it (and the CLI prints it): ids as strings, times in ISO. */
import { iso } from '../core/job-record.ts';
import type { CanaryEventRecord, CanaryRunRecord, CanaryStepRecord } from '../db/store/port.ts';
import type { CanaryRunWire } from './view-schemas.ts';

export function canaryRunWire(p: { run: CanaryRunRecord & { remaining: number }; steps?: CanaryStepRecord[]; events?: CanaryEventRecord[] }): CanaryRunWire {
  const { run } = p;
  const watchUntil = run.state === 'watching' && run.stepStartedAt !== null ? run.stepStartedAt + run.windowMs : null;
  return {
    id: String(run.id),
    queue: run.queue,
    state: run.state,
    force: run.force,
    first: run.first,
    growth: run.growth,
    windowMs: run.windowMs,
    maxFailures: run.maxFailures,
    maxStaleWrites: run.maxStaleWrites,
    maxDuplicates: run.maxDuplicates,
    maxHeartbeatLagMs: run.maxHeartbeatLagMs,
    selected: run.selected,
    step: run.step,
    stepStartedAt: iso(run.stepStartedAt),
    // A window already over waits for the next maintenance pass to judge it.
    watchUntil: iso(watchUntil),
    requeued: run.requeued,
    failedForGood: run.failedForGood,
    skipped: run.skipped,
    remaining: run.remaining,
    stopReason: run.stopReason,
    stopWhy: run.stopWhy,
    actor: run.actor,
    reason: run.reason,
    createdAt: iso(run.createdAt)!,
    finishedAt: iso(run.finishedAt),
    ...(p.steps
      ? {
          steps: p.steps.map((s) => ({
            step: s.step,
            jobIds: s.jobIds.map(String),
            requeued: s.requeued,
            failed: s.failed,
            skipped: s.skipped.map((k) => ({ id: String(k.id), why: k.why })),
          })),
        }
      : {}),
    ...(p.events ? { events: p.events.map((e) => ({ at: iso(e.at)!, type: e.type, step: e.step, reason: e.reason, message: e.message })) } : {}),
  };
}
