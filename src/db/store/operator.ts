/**
 * Operator actions (admin API, dashboard), each one guarded statement that
 * records who did it and why.
 *
 * - cancel: pending -> cancelled.
 * - retry: failed or cancelled -> pending now, with a fresh attempt budget
 *   (the counts of earlier attempts stay in the events).
 * - requeue: running -> pending now, only when the lease has expired, unless
 *   `force`; either way the token is cleared, so the old worker's writes are
 *   refused from then on.
 * No row back: `conflict` with the job's current status, or `not_found`.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { Now } from '../../core/clock.ts';
import type { Db } from '../db.ts';
import type { JobStatus } from '../schema.ts';
import { nowSql } from '../sql.ts';
import { CLEAR_LEASE } from './owned.ts';
import type { JobRecord } from './record.ts';

export type OperatorOutcome =
  | { ok: true; job: JobRecord }
  | { ok: false; reason: 'conflict'; status: JobStatus }
  | { ok: false; reason: 'not_found' };

export interface OperatorParams {
  id: number;
  actor: string;
  reason: string | null;
  now: Now;
}

async function guarded(db: Db, id: number, update: SQL): Promise<OperatorOutcome> {
  const [rows, current] = await db.batch([
    db.all<JobRecord>(update),
    db.all<{ status: JobStatus }>(sql`SELECT status FROM jobs WHERE id = ${id}`),
  ]);
  const job = (rows as JobRecord[])[0];
  if (job) return { ok: true, job };
  const status = (current as { status: JobStatus }[])[0]?.status;
  return status === undefined ? { ok: false, reason: 'not_found' } : { ok: false, reason: 'conflict', status };
}

export function jobCancelIfPending(db: Db, p: OperatorParams): Promise<OperatorOutcome> {
  const now = nowSql(p.now);
  return guarded(db, p.id, sql`UPDATE jobs SET status = 'cancelled', cancelled_at = ${now}, finished_at = ${now}, updated_at = ${now},
      last_event = 'cancelled', last_event_reason = ${p.reason}, last_event_actor = ${p.actor}
    WHERE id = ${p.id} AND status = 'pending' RETURNING *`);
}

export function jobRetryIfFinishedUnsuccessfully(db: Db, p: OperatorParams): Promise<OperatorOutcome> {
  const now = nowSql(p.now);
  return guarded(db, p.id, sql`UPDATE jobs SET status = 'pending', available_at = ${now},
      attempt_count = 0, errored_attempts = 0, lost_attempts = 0,
      failed_at = NULL, cancelled_at = NULL, finished_at = NULL, updated_at = ${now},
      last_event = 'retried_by_operator', last_event_reason = ${p.reason}, last_event_actor = ${p.actor}
    WHERE id = ${p.id} AND status IN ('failed', 'cancelled') RETURNING *`);
}

export function jobRequeueIfLeaseExpired(db: Db, p: OperatorParams & { force: boolean }): Promise<OperatorOutcome> {
  const now = nowSql(p.now);
  const leaseGuard = p.force ? sql`` : sql`AND lease_expires_at < ${now}`;
  return guarded(db, p.id, sql`UPDATE jobs SET status = 'pending', available_at = ${now}, ${CLEAR_LEASE},
      lost_attempts = lost_attempts + 1, updated_at = ${now},
      last_event = ${p.force ? 'force_requeued_by_operator' : 'requeued_by_operator'},
      last_event_reason = ${p.reason}, last_event_actor = ${p.actor}
    WHERE id = ${p.id} AND status = 'running' ${leaseGuard} RETURNING *`);
}
