/**
 * A failed dependency's cascade, in bounded steps (docs/flows.md).
 *
 * A job failed for good or cancelled while jobs wait for it, or retried
 * after its failure settled some, owes a cascade: a row of
 * dependency_cascades, written by a trigger in the very statement that made
 * the transition, whichever path made it (drizzle/0040). Each step here
 * settles at most `rows` edges and at most `rows` jobs per statement, in one
 * batch (one transaction) that restates its preconditions, and the next
 * step starts from what the database says, so a crash between steps, or two
 * servers stepping at once, leave nothing undone or done twice.
 *
 * - 'fail' (job Q failed or was cancelled): the waiting edges from Q, and
 *   from every job the cascade failed (dependency_failed_by = Q), in id
 *   order from `cursor` (every failed job of the cascade below it is
 *   settled). Each dependent by its policy: 'fail' fails it, naming its own
 *   dependency (and Q when that is not Q); 'hold' holds it for a person;
 *   'run' counts the edge as met, and releases the job at its last one. A
 *   dependent failed here has a larger id than its dependency (a job can
 *   only wait for jobs stored before it), so pulling the cursor back to the
 *   smallest dependent of the step keeps every failed job ahead of it. Done
 *   when no failed job of the cascade is left at or past the cursor.
 * - 'retry' (Q back to pending): first the 'failed' edges of Q and of the
 *   jobs the cascade failed wait again ('retry', by cursor), then those jobs
 *   ('retry_jobs') go back to pending, waiting again. Edges first: should Q
 *   fail again midway, the new cascade finds the jobs still failed, with
 *   their edges waiting, and settles them again.
 *
 * A step on a row another step moved meanwhile (its cursor changed) does
 * nothing and says so; the caller steps again.
 */
import { sql, type SQL } from 'drizzle-orm';
import { HELD_AVAILABLE_AT } from '../../core/held.ts';
import { batchList, type Db } from '../db.ts';
import { nowSql } from '../sql.ts';
import type { CascadeProgress, CascadeStep, CascadeStepParams } from './port-types.ts';

type CascadeRow = { job_id: number; action: 'fail' | 'retry' | 'retry_jobs'; cursor: number };
type Touched = { id: number; queue_name: string; dependencies_unmet: number; held_at: number | null };

/** Q and the failed jobs its cascade failed, from `cursor` on, in id order, at most `rows`; for 'fail' Q counts while it is failed or cancelled. */
function sourcesSql(q: number, cursor: number, rows: number, action: 'fail' | 'retry'): SQL {
  const own = action === 'fail' ? sql` AND status IN ('failed', 'cancelled')` : sql``;
  return sql`SELECT id FROM (
      SELECT id FROM jobs WHERE id = ${q} AND id >= ${cursor}${own}
      UNION ALL
      SELECT id FROM jobs WHERE dependency_failed_by = ${q} AND status = 'failed' AND id >= ${cursor}
    ) ORDER BY id LIMIT ${rows}`;
}

/**
 * The first `rows` edges in `state` of the sources, in (source, dependent)
 * order: read in that order from job_dependencies_dependency_idx, the IN
 * list walked in ascending order, so no sort of all their edges (a source
 * may have MAX_DEPENDENTS) comes before the LIMIT.
 */
function edgesOfSql(sources: SQL, state: 'waiting' | 'failed', r: CascadeRow, rows: number): SQL {
  return sql`SELECT e.dependent_id, e.dependency_id FROM job_dependencies AS e
    WHERE e.dependency_id IN (${sources}) AND e.state = ${state} AND ${rowIs(r)}
    ORDER BY e.dependency_id, e.dependent_id LIMIT ${rows}`;
}

/** The row still as this step read it (no other step moved it meanwhile). */
const rowIs = (r: CascadeRow) => sql`EXISTS (SELECT 1 FROM dependency_cascades WHERE job_id = ${r.job_id} AND action = ${r.action} AND cursor = ${r.cursor})`;

/**
 * The cursor after a step that took the batch: past every source taken
 * whole (all of them when the batch is short of `rows`), and never past a
 * dependent of the batch (one failed now becomes a source).
 */
function nextCursorSql(r: CascadeRow, rows: number, sources: SQL, pullBack: boolean): SQL {
  const past = sql`CASE WHEN (SELECT count(*) FROM dependency_cascade_batch) >= ${rows} THEN (SELECT max(dependency_id) FROM dependency_cascade_batch)
    ELSE coalesce((SELECT max(id) FROM (${sources})) + 1, ${r.cursor}) END`;
  return pullBack ? sql`min(${past}, coalesce((SELECT min(dependent_id) FROM dependency_cascade_batch), ${past}))` : past;
}

/**
 * Why a dependent failed or is held: its own dependency (the first of the
 * step's edges into it), and the cascade's job when that is another.
 */
function causeSql(q: number): SQL {
  return sql`(SELECT 'dependency ' || s.id || ' (' || s.queue_name || ') was ' || s.status
      || CASE WHEN s.id = ${q} THEN coalesce(': ' || s.last_error, '')
        ELSE coalesce(', after job ' || r.id || ' (' || r.queue_name || ') was ' || r.status || coalesce(': ' || r.last_error, ''), '') END
    FROM dependency_cascade_batch b JOIN jobs s ON s.id = b.dependency_id LEFT JOIN jobs r ON r.id = ${q}
    WHERE b.dependent_id = jobs.id ORDER BY s.id LIMIT 1)`;
}

const inBatch = sql`id IN (SELECT dependent_id FROM dependency_cascade_batch)`;
const edgeInBatch = sql`(dependent_id, dependency_id) IN (SELECT dependent_id, dependency_id FROM dependency_cascade_batch)`;

function failStep(db: Db, r: CascadeRow, rows: number, now: SQL) {
  const q = r.job_id;
  const sources = sourcesSql(q, r.cursor, rows, 'fail');
  return [
    db.run(sql`INSERT INTO dependency_cascade_batch (dependent_id, dependency_id) ${edgesOfSql(sources, 'waiting', r, rows)}`),
    db.run(sql`UPDATE dependency_cascades SET cursor = ${nextCursorSql(r, rows, sources, true)}, steps = steps + 1,
        settled = settled + (SELECT count(*) FROM dependency_cascade_batch)
      WHERE job_id = ${q} AND action = 'fail' AND cursor = ${r.cursor}`),
    db.all<Touched>(sql`UPDATE jobs SET status = 'failed', failed_at = ${now}, finished_at = ${now}, dependency_failed_by = ${q}, last_error = ${causeSql(q)},
        last_event = 'failed', last_event_reason = 'dependency_failed', last_event_actor = NULL, updated_at = ${now}
      WHERE ${inBatch} AND status = 'pending' AND held_at IS NULL AND coalesce(dependency_policy, 'fail') = 'fail'
      RETURNING id, queue_name, dependencies_unmet, held_at`),
    db.all<Touched>(sql`UPDATE jobs SET held_at = ${now}, dependency_failed_by = ${q}, last_error = ${causeSql(q)},
        last_event = 'dependency_failed', last_event_reason = 'hold', last_event_actor = NULL, updated_at = ${now}
      WHERE ${inBatch} AND status = 'pending' AND held_at IS NULL AND dependency_policy = 'hold'
      RETURNING id, queue_name, dependencies_unmet, held_at`),
    // 'run': each of the step's edges into the job counts as met; the last one releases it (at the time it was enqueued for, or now).
    db.all<Touched>(sql`UPDATE jobs SET dependencies_unmet = dependencies_unmet - (SELECT count(*) FROM dependency_cascade_batch b WHERE b.dependent_id = jobs.id),
        available_at = CASE WHEN dependencies_unmet - (SELECT count(*) FROM dependency_cascade_batch b WHERE b.dependent_id = jobs.id) <= 0 AND held_at IS NULL
          THEN max(coalesce(dependencies_run_at, 0), ${now}) ELSE available_at END,
        last_event = CASE WHEN dependencies_unmet - (SELECT count(*) FROM dependency_cascade_batch b WHERE b.dependent_id = jobs.id) <= 0 THEN 'dependencies_met' ELSE 'dependency_failed' END,
        last_event_reason = 'run', last_event_actor = NULL, updated_at = ${now}
      WHERE ${inBatch} AND status = 'pending' AND dependency_policy = 'run'
      RETURNING id, queue_name, dependencies_unmet, held_at`),
    db.run(sql`UPDATE job_dependencies SET state = CASE WHEN (SELECT j.dependency_policy FROM jobs AS j WHERE j.id = job_dependencies.dependent_id) = 'run' THEN 'ignored' ELSE 'failed' END
      WHERE state = 'waiting' AND ${edgeInBatch}`),
  ];
}

function retryStep(db: Db, r: CascadeRow, rows: number) {
  const q = r.job_id;
  const sources = sourcesSql(q, r.cursor, rows, 'retry');
  const undo = [
    db.run(sql`INSERT INTO dependency_cascade_batch (dependent_id, dependency_id) ${edgesOfSql(sources, 'failed', r, rows)}`),
    db.run(sql`UPDATE dependency_cascades SET cursor = ${nextCursorSql(r, rows, sources, false)}, steps = steps + 1,
        settled = settled + (SELECT count(*) FROM dependency_cascade_batch),
        action = CASE WHEN NOT EXISTS (${sources}) THEN 'retry_jobs' ELSE action END
      WHERE job_id = ${q} AND action = 'retry' AND cursor = ${r.cursor}`),
    db.run(sql`UPDATE job_dependencies SET state = 'waiting' WHERE state = 'failed' AND ${edgeInBatch}`),
  ];
  return r.action === 'retry' ? undo : [];
}

/** The jobs the cascade failed or held, back to waiting (after their edges: retryStep). */
function retryJobsStep(db: Db, q: number, rows: number, now: SQL) {
  return db.all<Touched>(sql`UPDATE jobs SET status = 'pending', failed_at = NULL, finished_at = NULL, held_at = NULL, dependency_failed_by = NULL,
      available_at = CASE WHEN dependencies_unmet > 0 THEN ${HELD_AVAILABLE_AT} ELSE max(coalesce(dependencies_run_at, 0), ${now}) END,
      last_event = 'dependency_retried', last_event_reason = 'job ' || ${q} || ' retried',
      last_event_actor = (SELECT actor FROM dependency_cascades WHERE job_id = ${q}), updated_at = ${now}
    WHERE id IN (SELECT id FROM jobs WHERE dependency_failed_by = ${q} AND status IN ('failed', 'pending') ORDER BY id LIMIT ${rows})
      AND EXISTS (SELECT 1 FROM dependency_cascades WHERE job_id = ${q} AND action = 'retry_jobs')
    RETURNING id, queue_name, dependencies_unmet, held_at`);
}

/** The row goes once nothing is left for it; the batch is emptied whatever happened. */
function closeStep(db: Db, q: number) {
  const cursor = sql`(SELECT cursor FROM dependency_cascades WHERE job_id = ${q})`;
  return [
    db.all<{ n: number }>(sql`SELECT count(*) AS n FROM dependency_cascade_batch`),
    db.run(sql`DELETE FROM dependency_cascades WHERE job_id = ${q} AND (
        (action = 'fail' AND NOT EXISTS (SELECT 1 FROM jobs WHERE id = ${q} AND id >= ${cursor} AND status IN ('failed', 'cancelled'))
          AND NOT EXISTS (SELECT 1 FROM jobs WHERE dependency_failed_by = ${q} AND status = 'failed' AND id >= ${cursor}))
        OR (action = 'retry_jobs' AND NOT EXISTS (SELECT 1 FROM jobs WHERE dependency_failed_by = ${q} AND status IN ('failed', 'pending'))))`),
    db.run(sql`DELETE FROM dependency_cascade_batch`),
    db.all<{ action: string }>(sql`SELECT action FROM dependency_cascades WHERE job_id = ${q}`),
  ];
}

/**
 * One step of the cascade owed longest without a step (fewest steps so
 * far), or of `p.jobId`'s; undefined when none is owed.
 */
export async function dependencyCascadeStep(db: Db, p: CascadeStepParams): Promise<CascadeStep | undefined> {
  const rows = Math.max(1, Math.floor(p.rows));
  const [r] = await db.all<CascadeRow>(p.jobId === undefined
    ? sql`SELECT job_id, action, cursor FROM dependency_cascades ORDER BY steps, job_id LIMIT 1`
    : sql`SELECT job_id, action, cursor FROM dependency_cascades WHERE job_id = ${p.jobId}`);
  if (!r) return undefined;
  const now = nowSql(p.now);
  const work = r.action === 'fail' ? failStep(db, r, rows, now) : [...retryStep(db, r, rows), retryJobsStep(db, r.job_id, rows, now)];
  const results = await batchList(db, [...work, ...closeStep(db, r.job_id)]);
  const [batchCount, , , left] = results.slice(work.length) as [{ n: number }[], unknown, unknown, { action: string }[]];
  // What each step's UPDATEs returned: fail: [insert, cursor, failed, held, ran, edges]; retry: [insert, cursor, edges]?, retried.
  const failed = r.action === 'fail' ? (results[2] as Touched[]) : [];
  const held = r.action === 'fail' ? (results[3] as Touched[]) : [];
  const ran = r.action === 'fail' ? (results[4] as Touched[]) : [];
  const retried = r.action === 'fail' ? [] : (results[work.length - 1] as Touched[]);
  // Jobs a person does not hold and that wait for nothing more are claimable now.
  const released = [...ran, ...retried].filter((j) => j.dependencies_unmet <= 0 && j.held_at === null).map((j) => ({ id: j.id, queue: j.queue_name }));
  return {
    jobId: r.job_id,
    action: r.action,
    edges: batchCount[0]?.n ?? 0,
    changed: [...failed, ...held, ...ran, ...retried].map((j) => j.id),
    released,
    done: left.length === 0,
  };
}

/** The cascade still owed for a job's failure or retry (the job page, GET /jobs/:id), or undefined. */
export async function dependencyCascadeOf(db: Db, p: { jobId: number }): Promise<CascadeProgress | undefined> {
  const [row] = await db.all<CascadeProgress>(sql`SELECT job_id AS jobId, action, steps, settled, queued_at AS queuedAt FROM dependency_cascades WHERE job_id = ${p.jobId}`);
  return row;
}

/** How many cascades are owed (the metrics). */
export async function dependencyCascadesOwed(db: Db): Promise<number> {
  const [row] = await db.all<{ n: number }>(sql`SELECT count(*) AS n FROM dependency_cascades`);
  return row?.n ?? 0;
}
