/**
 * The last completed maintenance pass (maintenance_state, drizzle/0019) and
 * what it is judged by (src/core/maintenance-watch.ts): how many jobs run and
 * how many of them are past lease + grace, read at the moment of the read
 * from the database's clock, so they say "leases are expiring" even while no
 * reaper runs.
 *
 * Costs: the state is one primary-key row; running jobs are summed from
 * live_counts (kept by triggers, drizzle/0014: a few rows per queue); the
 * expired ones are a range of jobs_lease_expiry_idx (lease_expires_at < now,
 * running only), so the read stays flat however many finished jobs are kept,
 * and grows only with leases that expired and were not taken back.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { Now } from '../../core/clock.ts';
import type { QueueDefaults } from '../../core/config.ts';
import type { Db } from '../db.ts';
import { nowSql } from '../sql.ts';
import type { MaintenancePassRow, MaintenanceWatchRow } from './port-types.ts';

const ROW = 'pass';

/**
 * Records a completed pass: started at `startedAt`, completed now (the
 * database's clock, or the pass's fixed time). The newest completion wins, so
 * a slow pass finishing after a quicker one cannot move the time back.
 */
export async function maintenancePassRecord(db: Db, p: { startedAt: number; now: Now }): Promise<void> {
  const now = nowSql(p.now);
  // max(): on a fixed clock the completion is the start; never before it (the CHECK).
  await db.run(sql`INSERT INTO maintenance_state (name, last_started_at, last_completed_at, passes)
    VALUES (${ROW}, ${p.startedAt}, max(${now}, ${p.startedAt}), 1)
    ON CONFLICT (name) DO UPDATE SET
      last_started_at = CASE WHEN excluded.last_completed_at >= last_completed_at THEN excluded.last_started_at ELSE last_started_at END,
      last_completed_at = max(last_completed_at, excluded.last_completed_at),
      passes = passes + 1`);
}

/** The state row, for a batch. */
export const maintenancePassSql = (): SQL =>
  sql`SELECT max(last_started_at) AS lastStartedAt, max(last_completed_at) AS lastCompletedAt, coalesce(sum(passes), 0) AS passes
    FROM maintenance_state WHERE name = ${ROW}`;

/**
 * Running jobs past lease + grace, per queue, for a batch. Each job's grace is
 * its queue's (or the default); the range is on the partial index, so only
 * expired leases are read.
 */
export const expiredPastGraceByQueueSql = (now: SQL, graceMs: number): SQL =>
  sql`SELECT j.queue_name AS queue, count(*) AS expired
    FROM jobs j INDEXED BY jobs_lease_expiry_idx LEFT JOIN queues q ON q.name = j.queue_name
    WHERE j.status = 'running' AND j.lease_expires_at < ${now} AND j.lease_expires_at + coalesce(q.grace_ms, ${graceMs}) < ${now}
    GROUP BY j.queue_name`;

/** The last pass and the figures it is judged by, in one batch (one round trip). */
export async function maintenanceWatch(db: Db, p: { now: Now; defaults: Pick<QueueDefaults, 'graceMs'> }): Promise<MaintenanceWatchRow> {
  const now = nowSql(p.now);
  const [clock, pass, running, expired] = await db.batch([
    db.all<{ now: number; databaseNow: number }>(sql`SELECT ${now} AS now, ${nowSql('db')} AS databaseNow`),
    db.all<{ lastStartedAt: number | null; lastCompletedAt: number | null; passes: number }>(maintenancePassSql()),
    db.all<{ n: number | null }>(sql`SELECT sum(jobs) AS n FROM live_counts WHERE status = 'running'`),
    db.all<{ queue: string; expired: number }>(expiredPastGraceByQueueSql(now, p.defaults.graceMs)),
  ]);
  return {
    now: Number(clock[0]!.now),
    databaseNow: Number(clock[0]!.databaseNow),
    ...toPassRow(pass[0]),
    runningJobs: Number(running[0]?.n ?? 0),
    expiredLeases: expired.reduce((s, r) => s + Number(r.expired), 0),
  };
}

export function toPassRow(row: { lastStartedAt: unknown; lastCompletedAt: unknown; passes: unknown } | undefined): MaintenancePassRow {
  const orNull = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return { lastStartedAt: orNull(row?.lastStartedAt), lastCompletedAt: orNull(row?.lastCompletedAt), passes: Number(row?.passes ?? 0) };
}
