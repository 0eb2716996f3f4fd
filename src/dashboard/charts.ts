/**
 * Per-minute activity over the last hour, per queue, for the overview charts:
 * completed, failed and reaped per minute, and the worst heartbeat lag the
 * reaper saw in each minute. One read of queue_minutes (at most 60 rows per
 * queue), so the cost does not depend on how busy the hour was.
 *
 * Buckets are clock minutes: bucket CHART_MINUTES - 1 is the minute holding
 * `now` (still filling), bucket 0 the minute CHART_MINUTES - 1 before it.
 */
import { MINUTE_MS } from '../core/clock.ts';
import type { JobStore } from '../db/store/port.ts';

export const CHART_MINUTES = 60;

export type ChartSeries = 'completed' | 'failed' | 'reaped';

export interface QueueActivity {
  queue: string;
  /** Per series, CHART_MINUTES counts, oldest minute first. */
  completed: number[];
  failed: number[];
  reaped: number[];
  /** The worst heartbeat lag sampled in each minute; null where nothing was running or sampled. */
  heartbeatLagMs: (number | null)[];
}

/** Activity per queue (sorted by name) over the last CHART_MINUTES clock minutes; queues with no rows are absent. */
export async function activityLastHour(store: Pick<JobStore, 'queueMinutesSince'>, p: { now: number }): Promise<QueueActivity[]> {
  const currentMinute = p.now - (p.now % MINUTE_MS);
  const firstMinute = currentMinute - (CHART_MINUTES - 1) * MINUTE_MS;
  const rows = await store.queueMinutesSince({ sinceMinuteAt: firstMinute });
  const byQueue = new Map<string, QueueActivity>();
  for (const r of rows) {
    const b = (r.minuteAt - firstMinute) / MINUTE_MS;
    if (b < 0 || b >= CHART_MINUTES) continue; // a clock that moved back: not on this chart
    let a = byQueue.get(r.queue);
    if (!a) {
      const zeros = () => new Array<number>(CHART_MINUTES).fill(0);
      a = { queue: r.queue, completed: zeros(), failed: zeros(), reaped: zeros(), heartbeatLagMs: new Array<number | null>(CHART_MINUTES).fill(null) };
      byQueue.set(r.queue, a);
    }
    a.completed[b] = r.completed;
    a.failed[b] = r.failed;
    a.reaped[b] = r.reaped;
    a.heartbeatLagMs[b] = r.maxHeartbeatLagMs;
  }
  return [...byQueue.values()].sort((x, y) => (x.queue < y.queue ? -1 : x.queue > y.queue ? 1 : 0));
}
