/** Reads only the dashboard needs: running jobs that look like zombies, a job's owner and queue settings. */
import { sql } from 'drizzle-orm';
import type { Config } from '../core/config.ts';
import type { Db } from '../db/db.ts';
import type { JobRecord } from '../db/store/record.ts';
import { ownerLastSeenSql, ownerReplacedSql } from '../db/store/workers.ts';

export interface RunningJobView extends JobRecord {
  q_heartbeat_ms: number;
  q_grace_ms: number;
  owner_last_seen_at: number | null;
  /** 1: the owner's id was taken over by a new process (a restart) since this claim. */
  owner_replaced: number | null;
}

const withSettings = (config: Config) => sql`j.*,
  coalesce(q.heartbeat_ms, ${config.heartbeatMs}) AS q_heartbeat_ms,
  coalesce(q.grace_ms, ${config.graceMs}) AS q_grace_ms,
  ${ownerLastSeenSql('j')} AS owner_last_seen_at, ${ownerReplacedSql('j')} AS owner_replaced
  FROM jobs j LEFT JOIN queues q ON q.name = j.queue_name`;

/**
 * Running jobs whose lease has expired, or whose last heartbeat (or start)
 * is more than two heartbeat intervals old: oldest expiry first.
 */
export async function zombieCandidates(db: Db, p: { now: number; config: Config; limit: number }): Promise<RunningJobView[]> {
  return db.all<RunningJobView>(sql`SELECT ${withSettings(p.config)}
    WHERE j.status = 'running' AND (
      j.lease_expires_at < ${p.now}
      OR coalesce(j.last_heartbeat_at, j.started_at) < ${p.now} - 2 * coalesce(q.heartbeat_ms, ${p.config.heartbeatMs}))
    ORDER BY j.lease_expires_at, j.id LIMIT ${p.limit}`);
}

export async function jobWithSettings(db: Db, p: { id: number; config: Config }): Promise<RunningJobView | undefined> {
  const [row] = await db.all<RunningJobView>(sql`SELECT ${withSettings(p.config)} WHERE j.id = ${p.id}`);
  return row;
}

/**
 * When the reaper will take a running job back at the earliest, as the
 * reaper decides it (src/core/reaper.ts): lease expiry + grace; while its
 * owner looks alive, up to maxReapDeferMs more. The reaper runs every
 * reaperIntervalMs, so it acts at its first pass after that.
 */
export function reaperActsAt(j: RunningJobView, now: number, config: Config): { at: number; ownerAlive: boolean } | null {
  if (j.lease_expires_at === null) return null;
  const eligible = j.lease_expires_at + j.q_grace_ms;
  const ownerAlive = j.owner_last_seen_at !== null && j.owner_last_seen_at >= now - config.workerAliveMs;
  let at = ownerAlive ? eligible + config.maxReapDeferMs : eligible;
  if (j.deadline_at !== null) at = Math.min(at, j.deadline_at);
  return { at, ownerAlive };
}
