/** A schedule as the API answers it: what it enqueues, when (its next runs), and its last run. */
import { iso } from '../core/job-record.ts';
import { nextOccurrences, type ScheduleSpec } from '../core/schedule.ts';
import type { ScheduleJobOptions, ScheduleRecord } from '../db/store/port.ts';

/** A schedule as the API answers it (its schema: src/api/view-schemas.ts). */
export type ScheduleView = ReturnType<typeof scheduleView>;

export function scheduleView(s: ScheduleRecord) {
  const spec: ScheduleSpec = { cron: s.cron, timeZone: s.time_zone, intervalMs: s.interval_ms };
  const upcoming = s.next_run_at >= Number.MAX_SAFE_INTEGER ? [] : [s.next_run_at, ...nextOccurrences(spec, s.next_run_at, 4, s.next_run_at)];
  return {
    name: s.name,
    queue: s.queue_name,
    cron: s.cron,
    timeZone: s.time_zone,
    intervalMs: s.interval_ms,
    payload: JSON.parse(s.payload) as unknown,
    jobOptions: JSON.parse(s.job_options) as ScheduleJobOptions,
    paused: Boolean(s.paused),
    nextRunAt: iso(upcoming[0] ?? null),
    nextRuns: s.paused ? [] : upcoming.map((t) => iso(t)),
    lastRunAt: iso(s.last_run_at),
    lastJobId: s.last_job_id === null ? null : String(s.last_job_id),
    catchUp: s.catch_up,
    catchUpWindowMs: s.catch_up_window_ms,
    overlap: s.overlap,
    skipped: { missed: s.skipped_missed, overlap: s.skipped_overlap },
    createdAt: iso(s.created_at),
    updatedAt: iso(s.updated_at),
  };
}
