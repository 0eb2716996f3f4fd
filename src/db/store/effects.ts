/**
 * The effects ledger behind the worker's `once(key, fn)`.
 *
 * - start: (none | started) -> started, only under the owner's guard (the job
 *   is running with this lock token), so a stale worker cannot start an
 *   effect. A `done` row is left alone and its result returned.
 * - finish: started -> done with the result, under the same owner's guard as
 *   every owned write (src/db/store/owned.ts: the job is running with this
 *   lock token and worker), and only for the effect this worker started in
 *   this attempt. A refused finish changes nothing and is recorded as a stale
 *   write. A finish sent again after it landed answers the result on record.
 * Counted (drizzle/0006): a start answered `done` is an effect skipped; a
 * start of a key an earlier attempt or another worker started is an effect
 * run again.
 * What it cannot promise: if the process dies (or loses its lease) after the
 * effect but before finish, the effect stays `started` and the next attempt
 * runs it again.
 */
import { and, eq, sql } from 'drizzle-orm';
import type { Now } from '../../core/clock.ts';
import type { Db } from '../db.ts';
import { effects } from '../schema.ts';
import { nowSql } from '../sql.ts';
import { ownerGuard, ownedWriteThen } from './owned.ts';
import type { EffectFinishOutcome, EffectRow, EffectStartOutcome, StepsOutcome } from './port-types.ts';

export async function effectStartIfOwned(
  db: Db,
  p: { jobId: number; key: string; lockToken: string; workerId: string; now: Now },
): Promise<EffectStartOutcome> {
  const now = nowSql(p.now);
  const [, , rows, job] = await db.batch([
    // A key already done is skipped: recorded (and counted) in the same
    // transaction that answers it. A rerun of a key started but never done is
    // recorded by a trigger on the upsert below (drizzle/0006).
    db.run(sql`INSERT INTO events (job_id, queue_name, type, reason, message, actor, worker_id, attempt, at)
      SELECT j.id, j.queue_name, 'effect_skipped', e.key,
        'once(' || e.key || ') was recorded as done on attempt ' || e.attempt || ': not run again',
        ${p.workerId}, ${p.workerId}, j.attempt_count, ${now}
      FROM effects e JOIN jobs j ON j.id = e.job_id
      WHERE e.job_id = ${p.jobId} AND e.key = ${p.key} AND e.state = 'done'`),
    db.run(sql`INSERT INTO effects (job_id, key, state, attempt, worker_id, created_at)
      SELECT id, ${p.key}, 'started', attempt_count, ${p.workerId}, ${now} FROM jobs
      WHERE id = ${p.jobId} AND status = 'running' AND lock_token = ${p.lockToken} AND locked_by = ${p.workerId}
      ON CONFLICT (job_id, key) DO UPDATE SET attempt = excluded.attempt, worker_id = excluded.worker_id, created_at = excluded.created_at
      WHERE effects.state = 'started'`),
    db.select({ state: effects.state, result: effects.result }).from(effects).where(and(eq(effects.jobId, p.jobId), eq(effects.key, p.key))),
    db.all<{ status: string; owned: number }>(
      sql`SELECT status, (status = 'running' AND lock_token = ${p.lockToken} AND locked_by = ${p.workerId}) AS owned FROM jobs WHERE id = ${p.jobId}`,
    ),
  ]);
  const effect = rows[0];
  const current = job[0];
  if (!current) return { kind: 'not_found' };
  if (effect?.state === 'done') return { kind: 'done', result: effect.result };
  if (!current.owned) return { kind: 'lease_lost', status: current.status };
  return { kind: 'run' };
}

/** Records the effect's result under the owner's guard; answers the result on record. */
export async function effectFinishIfOwned(
  db: Db,
  p: { jobId: number; key: string; lockToken: string; workerId: string; result: string; now: Now; checkpoint?: string | undefined },
): Promise<EffectFinishOutcome> {
  const now = nowSql(p.now);
  const { outcomes, then } = await ownedWriteThen<{ id: number; result: string | null }, { state: string; result: string | null }>(
    db,
    { refs: [{ id: p.jobId, lockToken: p.lockToken, data: p.result }], workerId: p.workerId, write: 'effect_finish', now: p.now },
    (refs) => sql`UPDATE effects SET state = 'done', result = v.data, completed_at = ${now}
      FROM ${refs} AS v, jobs
      WHERE ${ownerGuard(p.workerId)} AND effects.job_id = jobs.id AND effects.key = ${p.key}
        AND effects.state = 'started' AND effects.worker_id = ${p.workerId} AND effects.attempt = jobs.attempt_count
      RETURNING job_id AS id, result`,
    [
      db.all(sql`SELECT state, result FROM effects WHERE job_id = ${p.jobId} AND key = ${p.key}`),
      // step(): the checkpoint goes with the result, in the same transaction,
      // under the same guard, and only once the effect is done: a step is
      // never checkpointed past without its result on record.
      ...(p.checkpoint === undefined
        ? []
        : [
            db.all<never>(sql`UPDATE jobs SET checkpoint = ${p.checkpoint},
                progressed_at = CASE WHEN ${p.checkpoint} IS NOT jobs.checkpoint THEN ${now} ELSE jobs.progressed_at END
              WHERE id = ${p.jobId} AND status = 'running' AND lock_token = ${p.lockToken} AND locked_by = ${p.workerId}
                AND EXISTS (SELECT 1 FROM effects WHERE job_id = ${p.jobId} AND key = ${p.key} AND state = 'done')`),
          ]),
    ],
  );
  const o = outcomes[0]!;
  if (o.ok) return { kind: 'done', result: o.job.result };
  if (o.reason === 'lease_lost') return { kind: 'lease_lost', status: o.status };
  // Owned (no refusal was recorded) but not updated: already done, or never started by this worker in this attempt.
  const effect = then[0];
  if (effect?.state === 'done') return { kind: 'done', result: effect.result };
  return effect ? { kind: 'not_started' } : { kind: 'not_found' };
}

/** What step() keys its ledger rows with: a step named `n` is the effect `step:n`. */
export const STEP_PREFIX = 'step:';

/**
 * The job's steps as this claim finds them (ctx.steps), read under the
 * owner's guard; each uncertain one is recorded, in the same batch, as a
 * `step_uncertain` event that says who started it and when, so the handler's
 * choice (run again, skip, stop) has its reason on the job's history.
 * "Earlier claim": started on another attempt, by another worker, or before
 * this claim began (a released job keeps its attempt number).
 */
export async function stepsListIfOwned(db: Db, p: { jobId: number; lockToken: string; workerId: string; now: Now }): Promise<StepsOutcome> {
  const now = nowSql(p.now);
  const owned = sql`j.status = 'running' AND j.lock_token = ${p.lockToken} AND j.locked_by = ${p.workerId}`;
  const uncertain = sql`(e.state = 'started' AND (e.attempt <> j.attempt_count OR e.worker_id IS NOT ${p.workerId} OR e.created_at < j.started_at))`;
  const isStep = sql`substr(e.key, 1, ${STEP_PREFIX.length}) = ${STEP_PREFIX}`;
  const [, rows, job] = await db.batch([
    db.run(sql`INSERT INTO events (job_id, queue_name, type, reason, message, actor, worker_id, attempt, at)
      SELECT j.id, j.queue_name, 'step_uncertain', substr(e.key, ${STEP_PREFIX.length + 1}),
        'step ' || substr(e.key, ${STEP_PREFIX.length + 1}) || ' was started on attempt ' || e.attempt || ' by worker ' || coalesce(e.worker_id, '(unknown)')
          || ' and never recorded done: it may or may not have run, the handler decides',
        ${p.workerId}, ${p.workerId}, j.attempt_count, ${now}
      FROM effects e JOIN jobs j ON j.id = e.job_id
      WHERE e.job_id = ${p.jobId} AND ${isStep} AND ${uncertain} AND ${owned}`),
    db.all<{ name: string; state: 'started' | 'done'; attempt: number; result: string | null; uncertain: number }>(
      sql`SELECT substr(e.key, ${STEP_PREFIX.length + 1}) AS name, e.state, e.attempt, e.result, ${uncertain} AS uncertain
        FROM effects e JOIN jobs j ON j.id = e.job_id WHERE e.job_id = ${p.jobId} AND ${isStep} ORDER BY e.created_at, e.key`,
    ),
    db.all<{ status: string; owned: number }>(sql`SELECT j.status, (${owned}) AS owned FROM jobs j WHERE j.id = ${p.jobId}`),
  ]);
  const current = job[0];
  if (!current) return { kind: 'not_found' };
  if (!current.owned) return { kind: 'lease_lost', status: current.status };
  return { kind: 'ok', steps: rows.map((r) => ({ name: r.name, state: r.state, attempt: Number(r.attempt), result: r.result, uncertain: Boolean(r.uncertain) })) };
}

/** The job's effects ledger as it stands (the job page, a held job's lost attempt): every key, started or done, oldest first. */
export function effectsForJob(db: Db, p: { jobId: number }): Promise<EffectRow[]> {
  return db.all<EffectRow>(sql`SELECT key, state, attempt, worker_id AS workerId, created_at AS createdAt, completed_at AS completedAt
    FROM effects WHERE job_id = ${p.jobId} ORDER BY created_at, key LIMIT 1000`);
}
