/**
 * schedulesOnce: enqueue each due occurrence of every unpaused schedule,
 * exactly once however many passes run at once (one job per schedule and
 * occurrence time, held by a unique index: src/db/store/schedules.ts).
 *
 * Missed occurrences (nothing ran the pass for a while, or the server was
 * down): only the latest one that is due is enqueued, once; the earlier ones
 * are skipped and counted, never run as a burst. At most `SCHEDULES_PER_PASS`
 * schedules fire per pass; the rest fire in the next.
 *
 * The work per pass is bounded: per schedule, the latest due occurrence and
 * the next are found directly (src/core/schedule.ts), never by walking the
 * missed ones; the missed ones are counted by arithmetic for intervals and
 * fixed-period expressions (every second, every minute...), and otherwise
 * one by one within MISSED_COUNT_STEPS_PER_PASS for the whole pass, past
 * which the count is a lower bound (`missedCountCapped`). The event loop gets
 * a turn between schedules every WORK_BEFORE_YIELD_MS.
 */
import type { Config } from '../core/config.ts';
import { latestDueOccurrence, missedOccurrences, nextOccurrence, type ScheduleSpec } from '../core/schedule.ts';
import type { JobStore, ScheduleRecord } from '../db/store/port.ts';

export const SCHEDULES_PER_PASS = 100;

/**
 * Most occurrences one pass steps through to count missed ones: each is a
 * cron match (tens to a few hundred microseconds), so this bounds the
 * counting to tens of milliseconds per pass.
 */
export const MISSED_COUNT_STEPS_PER_PASS = 250;

/**
 * The database calls of a local file run on this thread: a pass of many
 * schedules gives the event loop a turn after this much work, so /healthz,
 * heartbeats and claims are served while it runs.
 */
const WORK_BEFORE_YIELD_MS = 20;
const yieldToEventLoop = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

export interface SchedulesReport {
  /** Occurrences this pass enqueued a new job for. */
  enqueued: number;
  /** Occurrences whose job another pass (or an earlier try of this one) had made already. */
  alreadyEnqueued: number;
  /** Earlier occurrences skipped because a later one was due too (the missed-run policy). */
  missedSkipped: number;
  /** True: counting stopped at this pass's bound for some schedule, so missedSkipped is a lower bound ("at least"). */
  missedCountCapped: boolean;
  /** Schedules that could not fire, with why (a queue limit, a spec that no longer parses). */
  errors: { schedule: string; error: string }[];
}

export const specOf = (s: ScheduleRecord): ScheduleSpec => ({ cron: s.cron, timeZone: s.time_zone, intervalMs: s.interval_ms });

export async function schedulesOnce(
  store: Pick<JobStore, 'schedulesDue' | 'scheduleEnqueueOccurrence' | 'scheduleAdvanceIfUnchanged'>,
  at: number,
  config: Config,
  /** Told of each occurrence that made a new job, after its commit (claims waiting on the queue look now). */
  jobsBecameClaimable?: (queue: string, n: number) => void,
): Promise<SchedulesReport> {
  const report: SchedulesReport = { enqueued: 0, alreadyEnqueued: 0, missedSkipped: 0, missedCountCapped: false, errors: [] };
  let countSteps = MISSED_COUNT_STEPS_PER_PASS;
  let since = Date.now();
  for (const s of await store.schedulesDue({ now: at, limit: SCHEDULES_PER_PASS })) {
    if (Date.now() - since >= WORK_BEFORE_YIELD_MS) {
      await yieldToEventLoop();
      since = Date.now();
    }
    try {
      const spec = specOf(s);
      const occurrence = latestDueOccurrence(spec, s.next_run_at, at)!;
      const missed = missedOccurrences(spec, s.next_run_at, occurrence, countSteps);
      countSteps -= missed.steps;
      report.missedSkipped += missed.count;
      if (!missed.exact) report.missedCountCapped = true;
      const { job, deduplicated } = await store.scheduleEnqueueOccurrence({ schedule: s, occurrence, now: at, defaults: config, maxQueues: config.maxQueues });
      if (deduplicated) report.alreadyEnqueued++;
      else {
        report.enqueued++;
        jobsBecameClaimable?.(s.queue_name, 1);
      }
      const next = nextOccurrence(spec, occurrence, s.next_run_at);
      // A cron that never matches again: park the schedule far away rather than fire it every pass.
      await store.scheduleAdvanceIfUnchanged({ name: s.name, readNextRunAt: s.next_run_at, occurrence, nextRunAt: next ?? Number.MAX_SAFE_INTEGER, jobId: job.id, now: at });
    } catch (err) {
      report.errors.push({ schedule: s.name, error: err instanceof Error ? err.message : String(err) });
    }
  }
  return report;
}
