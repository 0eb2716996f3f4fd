/**
 * Suspect jobs in SQL (the rule is src/core/suspect.ts): running, lease live,
 * and running (this attempt) longer than their queue's learned threshold.
 * The threshold needs a percentile, worked out in JS; it reaches a statement
 * as one JSON parameter of { queue, afterMs, basis } (suspectThresholdsSql),
 * joined on the queue name.
 *
 * Costs: no queue's threshold is under its lease, so only queues with a live
 * job running longer than one lease need one. suspectThresholds finds them
 * with a range of jobs_lease_expiry_idx (live leases: running jobs only),
 * and only for those reads the runtime sample (runtime-sample.ts: at most
 * 5,000 rows of jobs_finished_idx). In the usual case, no job past a lease,
 * that is one index range and nothing else.
 */
import { sql, type SQL } from 'drizzle-orm';
import { effectiveAlertThresholds, parseQueueAlertThresholds } from '../../core/alerts.ts';
import type { QueueDefaults } from '../../core/config.ts';
import { suspectThreshold } from '../../core/suspect.ts';
import type { Db } from '../db.ts';
import { percentiles, recentFinishedSql } from './runtime-sample.ts';
import type { QueueSuspectThreshold } from './port-types.ts';

/** The thresholds as a subquery `(name, after_ms, basis)`, one bound parameter whatever their number (D1 allows 100). */
export function suspectThresholdsSql(thresholds: readonly QueueSuspectThreshold[]): SQL {
  return sql`(SELECT json_extract(value, '$.queue') AS name, json_extract(value, '$.afterMs') AS after_ms, json_extract(value, '$.basis') AS basis
    FROM json_each(${JSON.stringify(thresholds)}))`;
}

/** The condition, over `jobs ${jobAlias}` left-joined with the thresholds as `${thresholdAlias}`. */
export function suspectSql(jobAlias: string, thresholdAlias: string, now: number | SQL): SQL {
  const j = sql.raw(jobAlias);
  const s = sql.raw(thresholdAlias);
  return sql`(${j}.status = 'running' AND ${s}.after_ms IS NOT NULL AND ${j}.lease_expires_at >= ${now} AND ${j}.started_at < ${now} - ${s}.after_ms)`;
}

/**
 * The thresholds of the queues that may have suspect jobs now (a live job
 * running longer than the queue's lease), from the runtime sample, the
 * queue's lease and its alert thresholds.
 */
export async function suspectThresholds(db: Db, p: { now: number; defaults: Pick<QueueDefaults, 'leaseMs'> }): Promise<QueueSuspectThreshold[]> {
  const lease = sql`coalesce(q.lease_ms, ${p.defaults.leaseMs})`;
  const rows = await db.all<{ queue: string; leaseMs: number; alertThresholds: string | null; runtimes: string | null }>(sql`WITH
      cand AS MATERIALIZED (SELECT DISTINCT j.queue_name AS name FROM jobs j INDEXED BY jobs_lease_expiry_idx LEFT JOIN queues q ON q.name = j.queue_name
        WHERE j.status = 'running' AND j.lease_expires_at >= ${p.now} AND j.started_at < ${p.now} - ${lease}),
      s AS MATERIALIZED ${recentFinishedSql(sql`${p.now}`)}
    SELECT cand.name AS queue, ${lease} AS leaseMs, q.alert_thresholds AS alertThresholds,
      (SELECT group_concat(s.completed_at - s.started_at) FROM s WHERE s.queue_name = cand.name AND s.status = 'completed' AND s.started_at IS NOT NULL) AS runtimes
    FROM cand LEFT JOIN queues q ON q.name = cand.name`);
  return rows.map((r) => {
    const runtime = r.runtimes ? percentiles(r.runtimes.split(',').map(Number)) : null;
    const t = suspectThreshold({ runtime, leaseMs: Number(r.leaseMs), thresholds: effectiveAlertThresholds(parseQueueAlertThresholds(r.alertThresholds)) });
    return { queue: r.queue, afterMs: t.afterMs, basis: t.basis };
  });
}

/** Suspect jobs per queue under the given thresholds: how many, and the first ids (longest running first). */
export async function suspectsByQueue(db: Db, p: { now: number; thresholds: readonly QueueSuspectThreshold[]; idsPerQueue: number }): Promise<Map<string, { count: number; ids: string[] }>> {
  const out = new Map<string, { count: number; ids: string[] }>();
  if (p.thresholds.length === 0) return out;
  const rows = await db.all<{ queue: string; id: number; n: number; rn: number }>(sql`SELECT queue, id, n, rn FROM (
      SELECT j.queue_name AS queue, j.id AS id, count(*) OVER (PARTITION BY j.queue_name) AS n,
        row_number() OVER (PARTITION BY j.queue_name ORDER BY j.started_at, j.id) AS rn
      FROM jobs j INDEXED BY jobs_lease_expiry_idx JOIN ${suspectThresholdsSql(p.thresholds)} sa ON sa.name = j.queue_name
      WHERE j.status = 'running' AND j.lease_expires_at >= ${p.now} AND ${suspectSql('j', 'sa', p.now)})
    WHERE rn <= ${p.idsPerQueue} ORDER BY queue, rn`);
  for (const r of rows) {
    const entry = out.get(r.queue) ?? { count: Number(r.n), ids: [] };
    entry.ids.push(String(r.id));
    out.set(r.queue, entry);
  }
  return out;
}
