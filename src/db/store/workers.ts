/**
 * The worker registry. Every claim and heartbeat touches the caller's row, so
 * the reaper can tell "the worker is gone" from "the job is slow" without
 * trusting anything but the database.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { Now } from '../../core/clock.ts';
import type { Db } from '../db.ts';
import { nowSql } from '../sql.ts';

/**
 * When the owner of the job aliased `jobAlias` was last seen (claim,
 * heartbeat, liveness beat), or NULL if it is not registered. The one
 * definition of "owner last seen": the reaper's candidates, the operator's
 * requeue and the dashboard all read it from here, so they cannot disagree
 * about whether an owner is alive.
 */
export function ownerLastSeenSql(jobAlias: string): SQL {
  const job = sql.raw(jobAlias);
  return sql`(SELECT w.last_seen_at FROM workers w WHERE w.id = ${job}.locked_by)`;
}

/** A statement (for a batch) recording that `workerId` was seen now. */
export function workerTouch(db: Db, workerId: string, now: Now) {
  const t = nowSql(now);
  return db.run(sql`INSERT INTO workers (id, started_at, last_seen_at) VALUES (${workerId}, ${t}, ${t})
    ON CONFLICT (id) DO UPDATE SET last_seen_at = excluded.last_seen_at`);
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

export interface WorkerBeat {
  id: string;
  host?: string | undefined;
  pid?: number | undefined;
  version?: string | undefined;
  queues?: readonly string[] | undefined;
  runningCount?: number | undefined;
  now: Now;
}

/** A worker's own liveness beat: who it is, and how many jobs it holds. */
export async function workerBeat(db: Db, w: WorkerBeat): Promise<void> {
  const t = nowSql(w.now);
  const queues = w.queues ? JSON.stringify(w.queues) : null;
  await db.run(sql`INSERT INTO workers (id, host, pid, version, queues, running_count, started_at, last_seen_at)
    VALUES (${w.id}, ${w.host ?? null}, ${w.pid ?? null}, ${w.version ?? null}, ${queues}, ${w.runningCount ?? 0}, ${t}, ${t})
    ON CONFLICT (id) DO UPDATE SET host = coalesce(excluded.host, host), pid = coalesce(excluded.pid, pid),
      version = coalesce(excluded.version, version), queues = coalesce(excluded.queues, queues),
      running_count = excluded.running_count, last_seen_at = excluded.last_seen_at`);
}

export interface WorkerRecord {
  id: string;
  host: string | null;
  pid: number | null;
  version: string | null;
  queues: string | null;
  running_count: number;
  started_at: number;
  last_seen_at: number;
}

/** Workers seen since `sinceMs`, most recent first. */
export async function workersList(db: Db, p: { sinceMs: number; limit: number }): Promise<WorkerRecord[]> {
  return db.all<WorkerRecord>(sql`SELECT * FROM workers WHERE last_seen_at >= ${p.sinceMs} ORDER BY last_seen_at DESC LIMIT ${p.limit}`);
}

