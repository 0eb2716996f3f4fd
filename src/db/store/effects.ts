/**
 * The effects ledger behind the worker's `once(key, fn)`.
 *
 * - start: (none | started) -> started, only under the owner's guard (the job
 *   is running with this lock token), so a stale worker cannot start an
 *   effect. A `done` row is left alone and its result returned.
 * - finish: started -> done with the result. Not fenced by the token: the
 *   effect has happened, and the ledger records facts. The first result
 *   recorded wins; later ones get it back.
 * What it cannot promise: if the process dies after the effect but before
 * finish, the next attempt finds `started` and runs the effect again.
 */
import { sql } from 'drizzle-orm';
import type { Now } from '../../core/clock.ts';
import type { Db } from '../db.ts';
import { nowSql } from '../sql.ts';

export type EffectStartOutcome =
  | { kind: 'run' }
  | { kind: 'done'; result: string | null }
  | { kind: 'lease_lost'; status: string }
  | { kind: 'not_found' };

export async function effectStartIfOwned(
  db: Db,
  p: { jobId: number; key: string; lockToken: string; workerId: string; now: Now },
): Promise<EffectStartOutcome> {
  const now = nowSql(p.now);
  const [, rows, job] = await db.batch([
    db.run(sql`INSERT INTO effects (job_id, key, state, attempt, worker_id, created_at)
      SELECT id, ${p.key}, 'started', attempt_count, ${p.workerId}, ${now} FROM jobs
      WHERE id = ${p.jobId} AND status = 'running' AND lock_token = ${p.lockToken} AND locked_by = ${p.workerId}
      ON CONFLICT (job_id, key) DO UPDATE SET attempt = excluded.attempt, worker_id = excluded.worker_id, created_at = excluded.created_at
      WHERE effects.state = 'started'`),
    db.all<{ state: 'started' | 'done'; result: string | null; worker_id: string | null }>(
      sql`SELECT state, result, worker_id FROM effects WHERE job_id = ${p.jobId} AND key = ${p.key}`,
    ),
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

/** Records the effect's result; answers the result on record (the first one wins). */
export async function effectFinish(db: Db, p: { jobId: number; key: string; result: string; now: Now }): Promise<string | null | undefined> {
  const now = nowSql(p.now);
  const [, rows] = await db.batch([
    db.run(sql`UPDATE effects SET state = 'done', result = ${p.result}, completed_at = ${now}
      WHERE job_id = ${p.jobId} AND key = ${p.key} AND state = 'started'`),
    db.all<{ result: string | null }>(sql`SELECT result FROM effects WHERE job_id = ${p.jobId} AND key = ${p.key} AND state = 'done'`),
  ]);
  return rows[0]?.result;
}
