/** Reads only the dashboard needs: running jobs that look like zombies, a job's owner and queue settings. */
import { sql } from 'drizzle-orm';
import type { Config } from '../core/config.ts';
import { decideReap, type ReapDecision } from '../core/reaper.ts';
import { stalledForMs } from '../core/stall.ts';
import type { Db } from '../db/db.ts';
import type { JobRecord } from '../db/store/record.ts';
import { claimHeartbeatSql } from '../db/store/claim.ts';
import { stalledSql } from '../db/store/stalls.ts';
import { ownerLastSeenSql, ownerReplacedSql } from '../db/store/workers.ts';

export interface RunningJobView extends JobRecord {
  progressed_at: number | null;
  q_heartbeat_ms: number;
  /**
   * The interval this job's worker was told at its claim: the queue's, at
   * most a third of the job's own lease (lease_ms). Null when not running.
   */
  job_heartbeat_ms: number | null;
  q_grace_ms: number;
  q_max_lost_attempts: number;
  /** The queue's stall setting (null: not watched). */
  q_stall_ms: number | null;
  owner_last_seen_at: number | null;
  /** 1: the owner's id was taken over by a new process (a restart) since this claim. */
  owner_replaced: number | null;
}

const queueHeartbeat = (config: Config) => sql`coalesce(q.heartbeat_ms, ${config.heartbeatMs})`;
/** The job's own interval where it has a lease, else the queue's. */
const jobHeartbeat = (config: Config) => sql`coalesce(${claimHeartbeatSql(queueHeartbeat(config), sql`j.lease_ms`)}, ${queueHeartbeat(config)})`;

const withSettings = (config: Config, extra = sql``) => sql`j.*,${extra}
  coalesce(q.heartbeat_ms, ${config.heartbeatMs}) AS q_heartbeat_ms,
  CASE WHEN j.lease_ms IS NULL THEN NULL ELSE ${jobHeartbeat(config)} END AS job_heartbeat_ms,
  coalesce(q.grace_ms, ${config.graceMs}) AS q_grace_ms,
  coalesce(q.max_lost_attempts, ${config.maxLostAttempts}) AS q_max_lost_attempts,
  q.stall_ms AS q_stall_ms,
  ${ownerLastSeenSql('j')} AS owner_last_seen_at, ${ownerReplacedSql('j')} AS owner_replaced
  FROM jobs j LEFT JOIN queues q ON q.name = j.queue_name`;

/**
 * Running jobs whose lease has expired, whose last heartbeat (or start) is
 * more than two heartbeat intervals old, or that are stalled (heartbeating
 * without progress for longer than their queue's stallMs): oldest expiry first.
 */
export async function zombieCandidates(db: Db, p: { now: number; config: Config; limit: number }): Promise<RunningJobView[]> {
  return db.all<RunningJobView>(sql`SELECT ${withSettings(p.config)}
    WHERE ${zombieCandidateSql(p.now, p.config)}
    ORDER BY j.lease_expires_at, j.id LIMIT ${p.limit}`);
}

/** Who is on the zombies page: the one condition, also used to mark jobs in the jobs list. */
function zombieCandidateSql(now: number, config: Config) {
  return sql`(j.status = 'running' AND (
      j.lease_expires_at < ${now}
      OR coalesce(j.last_heartbeat_at, j.started_at) < ${now} - 2 * ${jobHeartbeat(config)}
      OR ${stalledSql('j', 'q', now)}))`;
}

/** A running job as the zombies page sees it, with whether it is on that page. */
export interface FlaggableJobView extends RunningJobView {
  /** 1: the zombies page lists it (expired lease, heartbeat over two intervals late, or stalled). */
  zombie_candidate: number;
}

/** The running jobs among `ids` (a page of the jobs list), each with whether the zombies page lists it. */
export async function runningJobViews(db: Db, p: { ids: number[]; now: number; config: Config }): Promise<FlaggableJobView[]> {
  if (p.ids.length === 0) return [];
  // One JSON parameter, not one per id: D1 allows at most 100 bound parameters per statement.
  return db.all<FlaggableJobView>(sql`SELECT ${withSettings(p.config, sql` ${zombieCandidateSql(p.now, p.config)} AS zombie_candidate,`)}
    WHERE j.status = 'running' AND j.id IN (SELECT value FROM json_each(${JSON.stringify(p.ids)}))`);
}

export async function jobWithSettings(db: Db, p: { id: number; config: Config }): Promise<RunningJobView | undefined> {
  const [row] = await db.all<RunningJobView>(sql`SELECT ${withSettings(p.config)} WHERE j.id = ${p.id}`);
  return row;
}

/**
 * What the reaper would do with a running job now, from the same decision
 * function the reaper and the operator's requeue use (src/core/reaper.ts):
 * `takesAt` is when it takes the job if nothing changes (no heartbeat, no
 * beat); the reaper acts at its first pass after that.
 */
export function reaperView(j: RunningJobView, now: number, config: Config): ReapDecision | null {
  if (j.status !== 'running' || j.lease_expires_at === null) return null;
  return decideReap(
    {
      id: j.id,
      attemptCount: j.attempt_count,
      maxAttempts: j.max_attempts,
      lostAttempts: j.lost_attempts,
      maxLostAttempts: j.q_max_lost_attempts,
      leaseExpiresAt: j.lease_expires_at,
      graceMs: j.q_grace_ms,
      deadlineAt: j.deadline_at,
      startedAt: j.started_at,
      lockedBy: j.locked_by,
      ownerLastSeenAt: j.owner_last_seen_at,
    },
    now,
    config,
  );
}

/** How long a running job has been stalled (heartbeating, no progress past its queue's stallMs), or null. */
export const jobStalledForMs = (j: RunningJobView, now: number) =>
  j.status === 'running'
    ? stalledForMs({ progressedAt: j.progressed_at, startedAt: j.started_at, leaseExpiresAt: j.lease_expires_at, stallMs: j.q_stall_ms }, now)
    : null;
