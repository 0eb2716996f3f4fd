/**
 * What the database says each worker holds: its running jobs, counted from
 * the jobs table. A worker reports its own running count with its beats; a
 * dead worker's report is stale, while these are the jobs the reaper will
 * take back from it.
 */
import { sql } from 'drizzle-orm';
import type { Now } from '../../core/clock.ts';
import type { Db } from '../db.ts';
import { nowSql } from '../sql.ts';

/** Running jobs per worker id (and how many of them have an expired lease), for the given ids (absent: none). */
export async function workersHeldJobs(db: Db, p: { workerIds: readonly string[]; now: Now }): Promise<Map<string, { held: number; expired: number }>> {
  const out = new Map<string, { held: number; expired: number }>();
  if (p.workerIds.length === 0) return out;
  // The ids as one JSON parameter: D1 binds at most 100 parameters per statement (test/store/conformance/limits).
  const rows = await db.all<{ locked_by: string; held: number; expired: number }>(sql`SELECT locked_by, count(*) AS held,
      sum(lease_expires_at < ${nowSql(p.now)}) AS expired
    FROM jobs WHERE status = 'running' AND locked_by IN (SELECT value FROM json_each(${JSON.stringify(p.workerIds)})) GROUP BY locked_by`);
  for (const r of rows) out.set(r.locked_by, { held: Number(r.held), expired: Number(r.expired ?? 0) });
  return out;
}
