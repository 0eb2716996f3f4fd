/**
 * The owner's guard, shared by every write a worker makes to its running job
 * (heartbeat, extend, checkpoint, complete, fail, release).
 *
 * Precondition (restated in every WHERE): `jobs.id = ref.id AND status =
 * 'running' AND lock_token = ref.lockToken AND locked_by = workerId`. A write whose guard fails changes
 * nothing, and a `stale_write_rejected` event names the stale token's worker.
 * A write that ends the attempt may also be a repeat: the same write, by the
 * same worker under the same token, that already ended it (its answer was
 * lost on the way back, and the worker sent it again). A repeat changes
 * nothing and is not a stale write: it is answered with the job as stored.
 * One batch (one transaction, one round trip): record the stale refs (their
 * statuses come back for the error message), touch the worker's liveness row
 * (or record its whole beat, when the write carries one), read the repeats,
 * and run the guarded UPDATE ... FROM json_each(refs) v.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { Now } from '../../core/clock.ts';
import { requireStorableText } from '../../core/errors.ts';
import { batchList, type Db } from '../db.ts';
import type { SQLiteRaw } from 'drizzle-orm/sqlite-core/query-builders/raw';
import type { JobStatus } from '../schema.ts';
import { nowSql } from '../sql.ts';
import { beatStatements } from './lost-claims.ts';
import { workerTouch, workerTouchIfKnown } from './workers.ts';
import type { LeanJob, OwnedOutcome, WorkerLiveness } from './port-types.ts';

export interface OwnedRef {
  id: number;
  lockToken: string;
  /** Per-job JSON text for the write (progress, checkpoint or result): `v.data`. */
  data?: string | null;
}

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
  /**
   * For writes that end the attempt (complete, fail, release): `match`, over
   * `j` (the job) and `v` (the ref), holds when the job already records this
   * very write under `v.token` (see finishedWriteSql); `returning`, the
   * columns to answer such a repeat with, as the update returns them.
   */
  repeat?: { match: SQL; returning: SQL } | undefined;
  /**
   * Statements run right before the update, in the same transaction, over
   * the same refs and guard: what the update is about to move, counted once
   * for the batch (a completion's counts, finish.ts). Their rows are not read.
   */
  tally?: ((refsTable: SQL, guard: SQL) => SQLiteRaw<unknown[]>[]) | undefined;
}

/**
 * The guard, for an UPDATE jobs ... FROM <refs> AS v, by `workerId`. The
 * unary `+` keeps jobs_status_id_idx out of the plan: without statistics
 * (nothing runs ANALYZE) SQLite otherwise walked every running job once per
 * write instead of looking each ref up by id (test/store/query-plans.test.ts).
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
 * ownedWrite, with more statements run after the update in the same
 * transaction (a completion that also claims the next jobs, or a read of
 * what the write left: one commit, one round trip); `then` answers their
 * rows, one statement's after the other's.
 */
export async function ownedWriteThen<T extends { id: number }, A>(
  db: Db,
  p: OwnedWriteParams,
  update: (refsTable: SQL, guard: SQL) => SQL,
  then: readonly SQLiteRaw<A[]>[] = [],
): Promise<{ outcomes: OwnedOutcome<T>[]; then: A[] }> {
  const refsTable = refsTableSql(p.refs);
  const now = nowSql(p.now);
  const owns = sql`j.status = 'running' AND j.lock_token = v.token AND j.locked_by = ${p.workerId}`;
  const inTime = p.beforeDeadline ? sql`AND (j.deadline_at IS NULL OR j.deadline_at > ${now})` : sql``;
  // A repeat is neither refused nor written: read as it stands, before the
  // update (which can only touch running jobs, and a repeat's is not).
  const repeat = p.repeat ? sql`AND NOT coalesce(${p.repeat.match}, 0)` : sql``;
  const repeats = p.repeat
    ? [db.all<T>(sql`SELECT ${p.repeat.returning} FROM jobs WHERE id IN (SELECT v.id FROM ${refsTable} AS v JOIN jobs j ON j.id = v.id WHERE ${p.repeat.match})`)]
    : [];
  // With a claim the worker may take jobs: register it as a claim does. A
  // beat registers the worker with what it says about itself (and gives back
  // the claims it says it lost: lost-claims.ts).
  const guard = ownerGuard(p.workerId, p.beforeDeadline ? now : undefined);
  const tally = p.tally ? p.tally(refsTable, guard) : [];
  const touch = p.beat
    ? beatStatements(db, { ...p.beat, id: p.workerId, now: p.now })
    : [p.claims ? workerTouch(db, p.workerId, p.now, p.instanceId) : workerTouchIfKnown(db, p.workerId, p.now)];
  const [refusedRows, ...results] = await batchList(db, [
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
      WHERE NOT (${owns} ${inTime}) ${repeat}
      RETURNING job_id AS id, from_status AS status, substr(message, 1, 18) = 'deadline_exceeded:' AS deadline`),
    ...touch,
    ...repeats,
    ...tally,
    db.all<T>(update(refsTable, guard)),
    ...then,
  ]);
  const rest = results.slice(touch.length);
  const repeated = new Map(((p.repeat ? rest.shift() : []) as T[]).map((j) => [Number(j.id), j]));
  rest.splice(0, tally.length);
  const [accepted, ...after] = rest as [T[], ...A[][]];
  const byId = new Map(accepted.map((j) => [j.id, j]));
  const refusedById = new Map((refusedRows as { id: number; status: JobStatus; deadline: number }[]).map((r) => [Number(r.id), r]));
  const outcomes = p.refs.map((r): OwnedOutcome<T> => {
    const job = byId.get(r.id);
    // has_dependents: the update's RETURNING asked (hasDependentsSql, dependencies.ts).
    if (job) return (job as { has_dependents?: number }).has_dependents ? { id: r.id, ok: true, job, dependents: true } : { id: r.id, ok: true, job };
    const again = repeated.get(r.id);
    if (again) return { id: r.id, ok: true, job: again, repeated: true };
    const refused = refusedById.get(r.id);
    if (refused === undefined) return { id: r.id, ok: false, reason: 'not_found' };
    return { id: r.id, ok: false, reason: 'lease_lost', status: refused.status, ...(refused.deadline ? { cause: 'deadline_exceeded' as const } : {}) };
  });
  return { outcomes, then: after.flat() };
}

/**
 * What an owned write returns per accepted job: every column for one job's
 * answer, or only what a batch answer needs (a full row per job is most of the
 * cost of a large batch).
 */
export const returning = (full: boolean) =>
  full ? sql`*` : sql`id, queue_name, status, lease_expires_at, deadline_at, lease_epoch, completed_at`;

/**
 * What a write that ends the attempt records of itself besides its effect
 * (jobs.finished_write): which write, by which worker, and the parameters the
 * row does not keep. With the token (jobs.finished_token), a repeat of the
 * write is recognised by it until the job's next claim; a different outcome
 * from the same token (another result, a failure after a completion) is not
 * a repeat, and is refused and recorded like any stale write.
 */
export const finishedWriteSql = (write: 'complete' | 'fail' | 'release' | 'snooze', workerId: string, ...params: unknown[]) =>
  sql`${JSON.stringify([write, workerId, ...params])}`;

export { CLEAR_LEASE } from '../sql.ts';
