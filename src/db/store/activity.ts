/**
 * Per-queue, per-minute activity (the queue_minutes table, drizzle/0004).
 *
 * Completed, failed and reaped are counted by triggers on jobs as they
 * happen. The worst heartbeat lag of running jobs is sampled here, by each
 * reaper pass, so the history exists on every runtime (an edge cron samples
 * once a minute). Rows older than a day are pruned by the reaper.
 */
import { gte, lt, sql } from 'drizzle-orm';
import { MINUTE_MS } from '../../core/clock.ts';
import type { Db } from '../db.ts';
import { queueMinutes } from '../schema.ts';
import type { MinuteRow } from './port-types.ts';

/** queue_minutes rows are kept this long. */
const ACTIVITY_KEEP_MS = 24 * 3_600_000;

/** Minutes whose start is at or after `sinceMinuteAt`, every queue. Reads queue_minutes_minute_idx. */
export async function queueMinutesSince(db: Db, p: { sinceMinuteAt: number }): Promise<MinuteRow[]> {
  const m = queueMinutes;
  return db
    .select({ queue: m.queueName, minuteAt: m.minuteAt, completed: m.completed, failed: m.failed, reaped: m.reaped, maxHeartbeatLagMs: m.maxHeartbeatLagMs })
    .from(m)
    .where(gte(m.minuteAt, p.sinceMinuteAt));
}

/**
 * Records, in the minute holding `now`, the worst heartbeat lag of each
 * queue's running jobs (keeping the larger of this sample and earlier ones in
 * the same minute). Queues with nothing running record nothing. Returns the
 * queues sampled.
 */
export function queueMinutesSampleHeartbeatLag(db: Db, p: { now: number }) {
  const minuteAt = p.now - (p.now % MINUTE_MS);
  // INDEXED BY the partial index of running jobs: grouped by queue, SQLite
  // otherwise walked jobs_queue_status_id_idx end to end, ~300 ms per reaper
  // pass at 1M jobs (test/store/query-plans.test.ts guards this).
  return db.all<{ queue_name: string }>(sql`INSERT INTO queue_minutes (queue_name, minute_at, max_heartbeat_lag_ms)
    SELECT queue_name, ${minuteAt}, max(${p.now} - coalesce(last_heartbeat_at, started_at))
    FROM jobs INDEXED BY jobs_lease_expiry_idx WHERE status = 'running' GROUP BY queue_name
    ON CONFLICT (queue_name, minute_at) DO UPDATE SET
      max_heartbeat_lag_ms = max(coalesce(max_heartbeat_lag_ms, 0), excluded.max_heartbeat_lag_ms)
    RETURNING queue_name`);
}

/** Deletes minutes older than ACTIVITY_KEEP_MS. */
export function queueMinutesPrune(db: Db, p: { now: number }) {
  return db.delete(queueMinutes).where(lt(queueMinutes.minuteAt, p.now - ACTIVITY_KEEP_MS));
}
