/**
 * Numbers for /metrics, computed from the database so they hold on stateless
 * runtimes. Counters come from the events table, so they survive restarts
 * (but shrink when retention prunes old jobs' events).
 */
import { sql } from 'drizzle-orm';
import type { Now } from '../../core/clock.ts';
import type { Db } from '../db.ts';
import { nowSql } from '../sql.ts';

export interface MetricsSnapshot {
  jobs: { queue: string; status: string; count: number }[];
  running: { queue: string; expired: number; oldestStartedAt: number | null; maxHeartbeatLagMs: number | null }[];
  events: { type: string; reason: string | null; count: number }[];
  now: number;
}

export async function metricsSnapshot(db: Db, p: { now: Now }): Promise<MetricsSnapshot> {
  const now = nowSql(p.now);
  const [jobs, running, events, clock] = await db.batch([
    db.all<{ queue: string; status: string; count: number }>(
      sql`SELECT queue_name AS queue, status, count(*) AS count FROM jobs GROUP BY queue_name, status`,
    ),
    db.all<{ queue: string; expired: number; oldestStartedAt: number | null; maxHeartbeatLagMs: number | null }>(
      sql`SELECT queue_name AS queue, sum(lease_expires_at < ${now}) AS expired, min(started_at) AS oldestStartedAt,
          max(${now} - last_heartbeat_at) AS maxHeartbeatLagMs
        FROM jobs WHERE status = 'running' GROUP BY queue_name`,
    ),
    db.all<{ type: string; reason: string | null; count: number }>(
      sql`SELECT type, reason, count(*) AS count FROM events
        WHERE type IN ('stale_write_rejected', 'deduplicated', 'reaped', 'reap_deferred')
          AND type NOT IN ('enqueued', 'claimed', 'completed') -- lets SQLite use events_rare_type_at_idx
        GROUP BY type, reason`,
    ),
    db.all<{ now: number }>(sql`SELECT ${now} AS now`),
  ]);
  return { jobs, running, events, now: clock[0]!.now };
}
