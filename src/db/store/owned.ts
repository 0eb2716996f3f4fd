/**
 * The owner's guard, shared by every write a worker makes to its running job
 * (heartbeat, extend, checkpoint, complete, fail, release).
 *
 * Precondition (restated in every WHERE): `jobs.id = ref.id AND status =
 * 'running' AND lock_token = ref.lockToken AND locked_by = workerId`. A write whose guard fails changes
 * nothing, and a `stale_write_rejected` event names the stale token's worker.
 * One batch (one transaction, one round trip): record the stale refs (their
 * statuses come back for the error message), touch the worker's liveness row
 * (or record its whole beat, when the write carries one), and run the guarded
 * UPDATE ... FROM json_each(refs) v.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { Now } from '../../core/clock.ts';
import { requireStorableText } from '../../core/errors.ts';
import { batchList, type Db } from '../db.ts';
import type { SQLiteRaw } from 'drizzle-orm/sqlite-core/query-builders/raw';
import type { JobStatus } from '../schema.ts';
import { nowSql } from '../sql.ts';
import type { JobRecord } from './record.ts';
import { workerBeatStatement, workerTouch, workerTouchIfKnown, type WorkerLiveness } from './workers.ts';

export interface OwnedRef {
  id: number;
  lockToken: string;
  /** Per-job JSON text for the write (progress, checkpoint or result): `v.data`. */
  data?: string | null;
}

/** The columns a batch answer needs (see `returning`). */
export type LeanJob = Pick<JobRecord, 'id' | 'status' | 'lease_expires_at' | 'deadline_at' | 'lease_epoch' | 'completed_at'>;

export type OwnedOutcome<T extends { id: number } = LeanJob> =
  | { id: number; ok: true; job: T }
  | { id: number; ok: false; reason: 'lease_lost'; status: JobStatus; cause?: 'deadline_exceeded' }
  | { id: number; ok: false; reason: 'not_found' };

export interface OwnedWriteParams {
  refs: readonly OwnedRef[];
  workerId: string;
  /** Which write this is, for the stale-write event: 'heartbeat', 'complete', ... */
  write: string;
  now: Now;
  /** The write also claims jobs: register the worker as a claim does (otherwise only a known worker's row is touched). */
  claims?: boolean;
  /**
   * The write keeps the job (heartbeat, extend, checkpoint, release): refused
   * once the attempt's deadline has passed, with cause `deadline_exceeded`.
   * Writes that end the attempt (complete, fail) are still accepted until the
   * reaper takes the job: the token still fences it, so no other worker can
   * be running it, and keeping a finished result avoids running it again.
   */
  beforeDeadline?: boolean;
  /** With `claims`: the claiming process, as for a claim. */
  instanceId?: string | undefined;
  /** The worker's liveness beat, recorded in the same batch instead of the plain touch (heartbeats that carry it). */
  beat?: WorkerLiveness | undefined;
}

/**
 * The guard, for an UPDATE jobs ... FROM <refs> AS v, by `workerId`. The
 * unary `+` keeps jobs_status_id_idx out of the plan: without statistics
 * (nothing runs ANALYZE) SQLite otherwise walked every running job once per
 * write instead of looking each ref up by id (test/query-plans.test.ts).
 */
export const ownerGuard = (workerId: string, deadlineNow?: SQL) =>
  deadlineNow === undefined
    ? sql`jobs.id = v.id AND +jobs.status = 'running' AND jobs.lock_token = v.token AND jobs.locked_by = ${workerId}`
    : sql`jobs.id = v.id AND +jobs.status = 'running' AND jobs.lock_token = v.token AND jobs.locked_by = ${workerId}
        AND (jobs.deadline_at IS NULL OR jobs.deadline_at > ${deadlineNow})`;

/**
 * The refs as a table `v(id, token, data)`. They travel as one JSON
 * parameter, so the statement text is the same for any number of refs and
 * stays prepared.
 */
function refsTableSql(refs: readonly OwnedRef[]): SQL {
  // Tokens come out through ->>: a lone surrogate must not get that far (src/core/text.ts).
  for (const r of refs) requireStorableText(r.lockToken, 'lockToken');
  const json = JSON.stringify(refs.map((r) => ({ i: r.id, t: r.lockToken, d: r.data ?? null })));
  return sql`(SELECT value ->> '$.i' AS id, value ->> '$.t' AS token, value ->> '$.d' AS data FROM json_each(${json}))`;
}

/**
 * Runs `update` (an `UPDATE jobs SET ... FROM ${refsTable} AS v WHERE ${guard}
 * RETURNING ${returning(...)}` built by the caller) under the owner's guard, and
 * says for every ref whether it was accepted. `guard` is ownerGuard, with the
 * deadline when `p.beforeDeadline`.
 */
export async function ownedWrite<T extends LeanJob = LeanJob>(
  db: Db,
  p: OwnedWriteParams,
  update: (refsTable: SQL, guard: SQL) => SQL,
): Promise<OwnedOutcome<T>[]> {
  return (await ownedWriteThen<T, never>(db, p, update)).outcomes;
}

/**
 * ownedWrite, with one more statement run after the update in the same
 * transaction (a completion that also claims the next jobs, or a read of
 * what the write left: one commit, one round trip).
 */
export async function ownedWriteThen<T extends { id: number }, A>(
  db: Db,
  p: OwnedWriteParams,
  update: (refsTable: SQL, guard: SQL) => SQL,
  then?: SQLiteRaw<A[]>,
): Promise<{ outcomes: OwnedOutcome<T>[]; then: A[] }> {
  const refsTable = refsTableSql(p.refs);
  const now = nowSql(p.now);
  const owns = sql`j.status = 'running' AND j.lock_token = v.token AND j.locked_by = ${p.workerId}`;
  const inTime = p.beforeDeadline ? sql`AND (j.deadline_at IS NULL OR j.deadline_at > ${now})` : sql``;
  const [refusedRows, , accepted, after] = await batchList(db, [
    // RETURNING: the status each refused job had, read in the same statement
    // that recorded the refusal (a ref in neither answer has no job).
    // A refusal whose message starts with deadline_exceeded carries that cause
    // to the worker: its own attempt ran out of time (still held past the
    // deadline, or already taken back for it). CAST: a fixed `now` is bound
    // as REAL by libSQL and D1 alike, which would print "1000.0 ms".
    db.all<{ id: number; status: JobStatus; deadline: number }>(sql`INSERT INTO events (job_id, queue_name, type, from_status, to_status, reason, message, actor, worker_id, attempt, at)
      SELECT j.id, j.queue_name, 'stale_write_rejected', j.status, j.status, ${p.write},
        CASE WHEN ${owns} THEN 'deadline_exceeded: the attempt passed its deadline ' || CAST(${now} - j.deadline_at AS INTEGER) || ' ms ago'
          WHEN j.status <> 'running' AND j.last_event_reason = 'deadline_exceeded' THEN 'deadline_exceeded: job is ' || j.status || ', taken back by the reaper at its deadline'
          WHEN j.status <> 'running' THEN 'job is ' || j.status
          WHEN j.lock_token = v.token THEN 'the claim belongs to worker ' || j.locked_by
          ELSE 'lock token is not the current claim''s' END,
        ${p.workerId}, ${p.workerId}, j.attempt_count, ${now}
      FROM ${refsTable} AS v JOIN jobs j ON j.id = v.id
      WHERE NOT (${owns} ${inTime})
      RETURNING job_id AS id, from_status AS status, substr(message, 1, 18) = 'deadline_exceeded:' AS deadline`),
    // With a claim the worker may take jobs: register it as a claim does. A
    // beat registers the worker with what it says about itself.
    p.beat ? workerBeatStatement(db, { ...p.beat, id: p.workerId, now: p.now })
    : p.claims ? workerTouch(db, p.workerId, p.now, p.instanceId) : workerTouchIfKnown(db, p.workerId, p.now),
    db.all<T>(update(refsTable, ownerGuard(p.workerId, p.beforeDeadline ? now : undefined))),
    ...(then ? [then] : []),
  ]);
  const byId = new Map((accepted as T[]).map((j) => [j.id, j]));
  const refusedById = new Map((refusedRows as { id: number; status: JobStatus; deadline: number }[]).map((r) => [Number(r.id), r]));
  const outcomes = p.refs.map((r): OwnedOutcome<T> => {
    const job = byId.get(r.id);
    if (job) return { id: r.id, ok: true, job };
    const refused = refusedById.get(r.id);
    if (refused === undefined) return { id: r.id, ok: false, reason: 'not_found' };
    return { id: r.id, ok: false, reason: 'lease_lost', status: refused.status, ...(refused.deadline ? { cause: 'deadline_exceeded' as const } : {}) };
  });
  return { outcomes, then: (after as A[] | undefined) ?? [] };
}

/**
 * What an owned write returns per accepted job: every column for one job's
 * answer, or only what a batch answer needs (a full row per job is most of the
 * cost of a large batch).
 */
export const returning = (full: boolean) =>
  full ? sql`*` : sql`id, status, lease_expires_at, deadline_at, lease_epoch, completed_at`;

/** Columns that leave the running state: no token, no owner, no lease. */
export const CLEAR_LEASE = sql`lock_token = NULL, locked_by = NULL, locked_by_instance = NULL, lease_expires_at = NULL, lease_ms = NULL`;
