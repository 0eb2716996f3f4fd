/**
 * Reads only the dashboard makes: running jobs that look like zombies or are suspect (the
 * zombies page, the bulk requeue's "left alone" list), the same condition as
 * a flag on a page of the jobs list, and one job with its queue's settings
 * and its owner's liveness (the job page). Each row carries what the reaper's
 * own decision (src/core/reaper.ts) needs, so the dashboard can say what the
 * reaper will do without a query of its own.
 */
import { sql } from 'drizzle-orm';
import type { Db } from '../db.ts';
import { claimHeartbeatSql } from './claim.ts';
import { stalledSql } from './stalls.ts';
import { suspectSql, suspectThresholds, suspectThresholdsSql } from './suspects.ts';
import { ownerLastSeenSql, ownerReplacedSql } from './workers.ts';
import { reaperHoldColumns } from './reaper-hold.ts';
import { DEFAULT_MAX_SNOOZES } from '../../core/snooze.ts';
import type { DashboardReadDefaults, FlaggableJobView, JobPageView, QueueSuspectThreshold, RunningJobView, SuspectAware } from './port-types.ts';

const queueHeartbeat = (d: DashboardReadDefaults) => sql`coalesce(q.heartbeat_ms, ${d.heartbeatMs})`;
/** The job's own interval where it has a lease, else the queue's. */
const jobHeartbeat = (d: DashboardReadDefaults) => sql`coalesce(${claimHeartbeatSql(queueHeartbeat(d), sql`j.lease_ms`)}, ${queueHeartbeat(d)})`;

/** `suspects`: the thresholds of the queues that may have suspect jobs (suspects.ts), joined as `sa`. */
const withSettings = (d: DashboardReadDefaults, suspects: readonly QueueSuspectThreshold[], extra = sql``) => sql`j.*,${extra}
  sa.after_ms AS suspect_after_ms, sa.basis AS suspect_basis,
  coalesce(q.heartbeat_ms, ${d.heartbeatMs}) AS q_heartbeat_ms,
  CASE WHEN j.lease_ms IS NULL THEN NULL ELSE ${jobHeartbeat(d)} END AS job_heartbeat_ms,
  coalesce(q.grace_ms, ${d.graceMs}) AS q_grace_ms,
  coalesce(q.max_lost_attempts, ${d.maxLostAttempts}) AS q_max_lost_attempts,
  q.stall_ms AS q_stall_ms,
  ${ownerLastSeenSql('j')} AS owner_last_seen_at, ${ownerReplacedSql('j')} AS owner_replaced,
  ${reaperHoldColumns({ until: 'hold_until', cause: 'hold_cause' })}
  FROM jobs j LEFT JOIN queues q ON q.name = j.queue_name LEFT JOIN ${suspectThresholdsSql(suspects)} sa ON sa.name = j.queue_name`;

/** Who is on the zombies page: the one condition, also used to mark jobs in the jobs list. */
function zombieCandidateSql(now: number, d: DashboardReadDefaults) {
  return sql`(j.status = 'running' AND (
      j.lease_expires_at < ${now}
      OR coalesce(j.last_heartbeat_at, j.started_at) < ${now} - 2 * ${jobHeartbeat(d)}
      OR ${stalledSql('j', 'q', now)}
      OR ${suspectSql('j', 'sa', now)}))`;
}

/**
 * Running jobs whose lease has expired, whose last heartbeat (or start) is
 * more than two heartbeat intervals old, that are stalled (heartbeating
 * without progress for longer than their queue's stallMs), or that are
 * suspect (heartbeating far past their queue's learned runtime,
 * src/core/suspect.ts): oldest expiry first. Two statements: the suspect
 * thresholds (suspects.ts), then the list.
 */
export async function jobsListZombieCandidates(db: Db, p: SuspectAware & { limit: number }): Promise<RunningJobView[]> {
  const suspects = p.suspects ?? (await suspectThresholds(db, p));
  return db.all<RunningJobView>(sql`SELECT ${withSettings(p.defaults, suspects)}
    WHERE ${zombieCandidateSql(p.now, p.defaults)}
    ORDER BY j.lease_expires_at, j.id LIMIT ${p.limit}`);
}

/** The running jobs among `ids` (a page of the jobs list), each with whether the zombies page lists it. */
export async function jobsRunningFlagged(db: Db, p: SuspectAware & { ids: readonly number[] }): Promise<FlaggableJobView[]> {
  if (p.ids.length === 0) return [];
  const suspects = p.suspects ?? (await suspectThresholds(db, p));
  // One JSON parameter, not one per id: D1 allows at most 100 bound parameters per statement.
  return db.all<FlaggableJobView>(sql`SELECT ${withSettings(p.defaults, suspects, sql` ${zombieCandidateSql(p.now, p.defaults)} AS zombie_candidate,`)}
    WHERE j.status = 'running' AND j.id IN (SELECT value FROM json_each(${JSON.stringify(p.ids)}))`);
}

/**
 * One job, in any status, with its queue's settings (its snooze limit too)
 * and its owner's liveness (the job page), and whether any job waits for it
 * (one probe of job_dependencies_dependency_idx: the page reads the graph
 * only for a job in one); given `now`, also its queue's suspect threshold
 * when it may apply.
 */
export async function jobGetWithSettings(db: Db, p: { id: number; defaults: DashboardReadDefaults; now?: number; suspects?: readonly QueueSuspectThreshold[] }): Promise<JobPageView | undefined> {
  const suspects = p.suspects ?? (p.now === undefined ? [] : await suspectThresholds(db, { now: p.now, defaults: p.defaults }));
  const extra = sql` coalesce(q.max_snoozes, ${DEFAULT_MAX_SNOOZES}) AS q_max_snoozes,
  EXISTS (SELECT 1 FROM job_dependencies e WHERE e.dependency_id = j.id) AS has_dependents,`;
  const [row] = await db.all<JobPageView>(sql`SELECT ${withSettings(p.defaults, suspects, extra)} WHERE j.id = ${p.id}`);
  return row;
}
