/**
 * Per-minute activity over the last hour, per queue, for the overview charts.
 *
 * Both reads are index ranges, never scans of all jobs or events:
 * - completed / failed: the partial index jobs_finished_idx
 *   (`finished_at IS NOT NULL AND finished_at >= since`), status filtered after;
 *   `+status` keeps the planner off jobs_status_id_idx, which it would otherwise
 *   pick for `status IN (...)` and then read every completed and failed job.
 * - reaped: events_rare_type_at_idx; the `type NOT IN (...)` term repeats the
 *   index's predicate so SQLite may use the partial index.
 *
 * Bucket 0 is the oldest minute, bucket CHART_MINUTES - 1 the minute ending now;
 * a row exactly one hour old falls in bucket 0.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/db.ts';

export const CHART_MINUTES = 60;
const MINUTE = 60_000;
const HOUR = CHART_MINUTES * MINUTE;

export type ChartSeries = 'completed' | 'failed' | 'reaped';

export interface QueueActivity {
  queue: string;
  /** Per series, CHART_MINUTES counts, oldest minute first. */
  completed: number[];
  failed: number[];
  reaped: number[];
}

const empty = () => new Array<number>(CHART_MINUTES).fill(0);

/** Minutes ago (0 = the last minute) to a bucket index, clamped to the chart. */
const bucketOf = (minutesAgo: number) => CHART_MINUTES - 1 - Math.min(CHART_MINUTES - 1, Math.max(0, minutesAgo));

/** The two statements, exported so a test can check their query plans. */
export function activitySql(now: number): { finished: SQL; reaped: SQL } {
  const since = now - HOUR;
  return {
    finished: sql`SELECT queue_name AS queue, (${now} - finished_at) / ${MINUTE} AS ago,
        sum(status = 'completed') AS completed, sum(status = 'failed') AS failed
      FROM jobs
      WHERE finished_at IS NOT NULL AND finished_at >= ${since} -- jobs_finished_idx range
        AND +status IN ('completed', 'failed') -- unary +: not jobs_status_id_idx (every finished job ever)
      GROUP BY queue_name, ago`,
    reaped: sql`SELECT queue_name AS queue, (${now} - at) / ${MINUTE} AS ago, count(*) AS count
      FROM events
      WHERE type = 'reaped' AND type NOT IN ('enqueued', 'claimed', 'completed') -- events_rare_type_at_idx
        AND at >= ${since}
      GROUP BY queue_name, ago`,
  };
}

/** Activity per queue (sorted by name) over [now - 1 h, now]; queues with no activity are absent. */
export async function activityLastHour(db: Db, p: { now: number }): Promise<QueueActivity[]> {
  const q = activitySql(p.now);
  const [finished, reaped] = await db.batch([
    db.all<{ queue: string; ago: number; completed: number | null; failed: number | null }>(q.finished),
    db.all<{ queue: string; ago: number; count: number }>(q.reaped),
  ]);
  const byQueue = new Map<string, QueueActivity>();
  const get = (queue: string) => {
    let a = byQueue.get(queue);
    if (!a) byQueue.set(queue, (a = { queue, completed: empty(), failed: empty(), reaped: empty() }));
    return a;
  };
  for (const r of finished) {
    const a = get(r.queue);
    const b = bucketOf(Math.floor(Number(r.ago)));
    a.completed[b]! += Number(r.completed ?? 0);
    a.failed[b]! += Number(r.failed ?? 0);
  }
  for (const r of reaped) get(r.queue).reaped[bucketOf(Math.floor(Number(r.ago)))]! += Number(r.count);
  return [...byQueue.values()].sort((x, y) => (x.queue < y.queue ? -1 : x.queue > y.queue ? 1 : 0));
}
