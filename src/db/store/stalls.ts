/**
 * Stalled jobs in SQL (the rule is src/core/stall.ts): running, lease still
 * live, and no progress or checkpoint change (progressed_at, else the claim)
 * for longer than the queue's stall_ms. Off for queues without stall_ms.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db.ts';
import type { StalledJob } from './port-types.ts';

/** The condition, for a query over `jobs ${jobAlias} LEFT JOIN queues ${queueAlias}`. */
export function stalledSql(jobAlias: string, queueAlias: string, now: number | SQL): SQL {
  const j = sql.raw(jobAlias);
  const q = sql.raw(queueAlias);
  return sql`(${j}.status = 'running' AND ${q}.stall_ms IS NOT NULL AND ${j}.lease_expires_at >= ${now}
    AND coalesce(${j}.progressed_at, ${j}.started_at) < ${now} - ${q}.stall_ms)`;
}

/**
 * Stalled jobs, longest stalled first, at most `limit`. Only queues with
 * stall_ms set are read, each through the running-jobs index.
 */
export async function jobsListStalled(db: Db, p: { now: number; limit: number }): Promise<StalledJob[]> {
  return db.all<StalledJob>(sql`SELECT j.id AS id, j.queue_name AS queueName, j.locked_by AS lockedBy,
      ${p.now} - coalesce(j.progressed_at, j.started_at) AS stalledMs, q.stall_ms AS stallMs
    FROM queues q JOIN jobs j ON j.queue_name = q.name
    WHERE q.stall_ms IS NOT NULL AND ${stalledSql('j', 'q', p.now)}
    ORDER BY stalledMs DESC, j.id LIMIT ${p.limit}`);
}

/** Per queue: how many jobs are stalled and the first few ids (lowest first), for the metrics snapshot's batch. */
export function stalledByQueueSql(now: SQL): SQL {
  return sql`SELECT j.queue_name AS queue, count(*) AS count, json_group_array(j.id) AS ids
    FROM queues q JOIN jobs j ON j.queue_name = q.name
    WHERE q.stall_ms IS NOT NULL AND ${stalledSql('j', 'q', now)}
    GROUP BY j.queue_name`;
}
