/**
 * schedulesOnce: enqueue each due occurrence of every unpaused schedule,
 * exactly once however many passes run at once (one job per schedule and
 * occurrence time, held by a unique index: src/db/store/schedules.ts).
 *
 * Missed occurrences (nothing ran the pass for a while, or the server was
 * down): only the latest one that is due is enqueued, once; the earlier ones
 * are skipped and counted, never run as a burst. At most `SCHEDULES_PER_PASS`
 * schedules fire per pass; the rest fire in the next.
 */
import type { Config } from '../core/config.ts';
import { latestDueOccurrence, nextOccurrence, nextOccurrences, type ScheduleSpec } from '../core/schedule.ts';
import type { JobStore } from '../db/store/port.ts';
import type { ScheduleRecord } from '../db/store/schedules.ts';

export const SCHEDULES_PER_PASS = 100;

export interface SchedulesReport {
  /** Occurrences this pass enqueued a new job for. */
  enqueued: number;
  /** Occurrences whose job another pass (or an earlier try of this one) had made already. */
  alreadyEnqueued: number;
  /** Earlier occurrences skipped because a later one was due too (the missed-run policy). */
  missedSkipped: number;
  /** Schedules that could not fire, with why (a queue limit, a spec that no longer parses). */
  errors: { schedule: string; error: string }[];
}

export const specOf = (s: ScheduleRecord): ScheduleSpec => ({ cron: s.cron, timeZone: s.time_zone, intervalMs: s.interval_ms });

export async function schedulesOnce(
  store: Pick<JobStore, 'schedulesDue' | 'scheduleEnqueueOccurrence' | 'scheduleAdvanceIfUnchanged'>,
  at: number,
  config: Config,
): Promise<SchedulesReport> {
  const report: SchedulesReport = { enqueued: 0, alreadyEnqueued: 0, missedSkipped: 0, errors: [] };
  for (const s of await store.schedulesDue({ now: at, limit: SCHEDULES_PER_PASS })) {
    try {
      const spec = specOf(s);
      const occurrence = latestDueOccurrence(spec, s.next_run_at, at)!;
      // Occurrences between the one read and the one run: skipped (at most a day's worth are counted).
      if (occurrence > s.next_run_at) report.missedSkipped += nextOccurrences(spec, s.next_run_at, 1440, s.next_run_at).filter((o) => o < occurrence).length + 1;
      const { job, deduplicated } = await store.scheduleEnqueueOccurrence({ schedule: s, occurrence, now: at, defaults: config, maxQueues: config.maxQueues });
      if (deduplicated) report.alreadyEnqueued++;
      else report.enqueued++;
      const next = nextOccurrence(spec, occurrence, s.next_run_at);
      // A cron that never matches again: park the schedule far away rather than fire it every pass.
      await store.scheduleAdvanceIfUnchanged({ name: s.name, readNextRunAt: s.next_run_at, occurrence, nextRunAt: next ?? Number.MAX_SAFE_INTEGER, jobId: job.id, now: at });
    } catch (err) {
      report.errors.push({ schedule: s.name, error: err instanceof Error ? err.message : String(err) });
    }
  }
  return report;
}
