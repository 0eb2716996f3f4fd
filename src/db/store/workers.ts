/**
 * The worker registry. Every claim and heartbeat touches the caller's row, so
 * the reaper can tell "the worker is gone" from "the job is slow" without
 * trusting anything but the database.
 *
 * Liveness is per worker process: the SDK picks a random instance id at each
 * start and sends it with its beats and claims. A beat or claim with a new
 * instance id under a known worker id is a restart: `restarts` goes up and
 * the row now speaks for the new process. The jobs the old process claimed
 * (`jobs.locked_by_instance`) then have no live owner (ownerLastSeenSql), so
 * a worker that crashed and came back under the same id does not keep its
 * predecessor's orphans alive. Callers that send no instance id (older SDKs,
 * hand-written HTTP workers) keep the per-id liveness they had.
 */
import { desc, gte, sql, type SQL } from 'drizzle-orm';
import type { Now } from '../../core/clock.ts';
import type { Db } from '../db.ts';
import { rowColumns } from '../row-columns.ts';
import { workers } from '../schema.ts';
import { nowSql } from '../sql.ts';
import type { WorkerBeat, WorkerRecord } from './port-types.ts';

/**
 * When the owner of the job aliased `jobAlias` was last seen, or NULL when it
 * has no live claim on the job: not registered, or the claim was made by a
 * process (instance) that is no longer the one using the worker id. The one
 * definition of "owner last seen" the reaper, requeue and dashboard share.
 * A primary-key lookup per job, so it costs the same as the join it replaces.
 */
/** The owner's host and pid, as its liveness row has them (null when the row is another instance's, or missing): what the owner check asks about. */
export function ownerProcessSql(jobAlias: string, column: 'host' | 'pid'): SQL {
  const j = sql.raw(jobAlias);
  return sql`(SELECT w.${sql.raw(column)} FROM workers w WHERE w.id = ${j}.locked_by
    AND (${j}.locked_by_instance IS NULL OR w.instance_id IS NULL OR w.instance_id = ${j}.locked_by_instance))`;
}

export function ownerLastSeenSql(jobAlias: string): SQL {
  const j = sql.raw(jobAlias);
  // An unknown instance on either side (an older SDK) falls back to the id:
  // the reaper stays as conservative as it was for them.
  return sql`(SELECT w.last_seen_at FROM workers w WHERE w.id = ${j}.locked_by
    AND (${j}.locked_by_instance IS NULL OR w.instance_id IS NULL OR w.instance_id = ${j}.locked_by_instance))`;
}

/** 1 when the job's owner id is now used by a newer process than the one that claimed it (a restart), else 0 or NULL. */
export function ownerReplacedSql(jobAlias: string): SQL {
  const j = sql.raw(jobAlias);
  return sql`(SELECT w.instance_id <> ${j}.locked_by_instance FROM workers w WHERE w.id = ${j}.locked_by)`;
}

/**
 * The ON CONFLICT part for a caller that names its instance: a new instance
 * under a known id is a restart (counted; the row's start time is the new
 * process's). SET reads the old row, so `instance_id` here is the previous one.
 */
const instanceUpdate = sql`restarts = restarts + (excluded.instance_id IS NOT NULL AND instance_id IS NOT NULL AND excluded.instance_id <> instance_id),
  started_at = CASE WHEN excluded.instance_id IS NOT NULL AND instance_id IS NOT NULL AND excluded.instance_id <> instance_id THEN excluded.started_at ELSE started_at END,
  instance_id = coalesce(excluded.instance_id, instance_id)`;

/** A statement (for a batch) recording that `workerId` (process `instanceId`, when known) was seen now. */
export function workerTouch(db: Db, workerId: string, now: Now, instanceId?: string | undefined) {
  const t = nowSql(now);
  return db.run(sql`INSERT INTO workers (id, instance_id, started_at, last_seen_at) VALUES (${workerId}, ${instanceId ?? null}, ${t}, ${t})
    ON CONFLICT (id) DO UPDATE SET last_seen_at = excluded.last_seen_at, ${instanceUpdate}`);
}

/**
 * workerTouch for a write that may be refused (heartbeat, complete, ...):
 * touches a known worker, and creates the row only for a worker that holds a
 * running job. A refused write from an id nobody knows (a typo, a stranger)
 * leaves the table as it was: a rejected request changes nothing.
 */
export function workerTouchIfKnown(db: Db, workerId: string, now: Now) {
  const t = nowSql(now);
  return db.run(sql`INSERT INTO workers (id, started_at, last_seen_at) SELECT ${workerId}, ${t}, ${t}
    WHERE EXISTS (SELECT 1 FROM workers WHERE id = ${workerId})
      OR EXISTS (SELECT 1 FROM jobs WHERE locked_by = ${workerId} AND status = 'running')
    ON CONFLICT (id) DO UPDATE SET last_seen_at = excluded.last_seen_at`);
}

/**
 * A worker's own liveness beat as a statement: who it is, how many jobs it
 * holds, and its counters. lost-claims.ts runs it (beatStatements), with the
 * release of the claims the beat says were lost, on its own or in the batch
 * of the heartbeats that carry it: one transaction.
 */
export function workerBeatStatement(db: Db, w: WorkerBeat) {
  const t = nowSql(w.now);
  const queues = w.queues ? JSON.stringify(w.queues) : null;
  const c = w.counters ?? {};
  return db.run(sql`INSERT INTO workers (id, instance_id, host, pid, version, queues, running_count,
      event_loop_blocks, longest_event_loop_block_ms, heartbeat_failures, leases_lost, started_at, last_seen_at)
    VALUES (${w.id}, ${w.instanceId ?? null}, ${w.host ?? null}, ${w.pid ?? null}, ${w.version ?? null}, ${queues}, ${w.runningCount ?? 0},
      ${c.eventLoopBlocks ?? null}, ${c.longestEventLoopBlockMs ?? null}, ${c.heartbeatFailures ?? null}, ${c.leasesLost ?? null}, ${t}, ${t})
    ON CONFLICT (id) DO UPDATE SET host = coalesce(excluded.host, host), pid = coalesce(excluded.pid, pid),
      version = coalesce(excluded.version, version), queues = coalesce(excluded.queues, queues),
      running_count = excluded.running_count, last_seen_at = excluded.last_seen_at,
      ${counterUpdate('event_loop_blocks')}, ${counterUpdate('longest_event_loop_block_ms')},
      ${counterUpdate('heartbeat_failures')}, ${counterUpdate('leases_lost')}, ${instanceUpdate}`);
}

/**
 * A counter takes the beat's value; a beat without it keeps the row's, unless
 * a new process took over the id: its predecessor's counts are not its own.
 * (SET reads the old row, so `instance_id` is the previous process's.)
 */
function counterUpdate(column: string): SQL {
  const c = sql.raw(column);
  return sql`${c} = CASE WHEN excluded.${c} IS NOT NULL THEN excluded.${c}
    WHEN excluded.instance_id IS NOT NULL AND instance_id IS NOT NULL AND excluded.instance_id <> instance_id THEN NULL ELSE ${c} END`;
}

/** Workers seen since `sinceMs`, most recent first. */
export async function workersList(db: Db, p: { sinceMs: number; limit: number }): Promise<WorkerRecord[]> {
  return db.select(rowColumns(workers)).from(workers).where(gte(workers.lastSeenAt, p.sinceMs)).orderBy(desc(workers.lastSeenAt)).limit(p.limit);
}

