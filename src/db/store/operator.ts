/**
 * Operator actions (admin API, dashboard), each one guarded statement that
 * records who did it and why.
 *
 * - cancel: pending -> cancelled.
 * - retry: failed or cancelled -> pending now, with a fresh attempt budget
 *   (the counts of earlier attempts stay in the events), unless another job
 *   of the queue with the same idempotency key is pending or running: two
 *   active jobs never share a key (jobs_active_key_idx).
 * - requeue: see requeue.ts (it follows the reaper's decision).
 * No row back: `conflict` with the job's current status, or `not_found`.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { Now } from '../../core/clock.ts';
import { batchList, type Db } from '../db.ts';
import { nowSql } from '../sql.ts';
import { CLEAR_LEASE } from './owned.ts';
import { guardedWithAudit } from './operator-outcome.ts';
import { jobsBulkRequeue, jobsBulkRequeueMatching, jobsBulkRequeuePlan } from './requeue.ts';
import { alongsideFirst, auditInsert } from './audit.ts';
import { bulkKindFor } from '../../core/bulk-kind.ts';
import { HELD_AVAILABLE_AT, HELD_EVENT } from '../../core/held.ts';
import type { BulkFilter, BulkParams, BulkPreviewRow, OperatorOutcome, OperatorParams, RequeueRules } from './port-types.ts';

// The status rule lives in core (routes check it first); re-exported for the store's callers.
export { bulkKindFor, type BulkKind } from '../../core/bulk-kind.ts';

/** No other job of the row's queue with its idempotency key is pending or running (for `jobs` rows leaving a finished status). */
const keyFreeSql = sql`(jobs.idempotency_key IS NULL OR NOT EXISTS (SELECT 1 FROM jobs a WHERE a.queue_name = jobs.queue_name
  AND a.idempotency_key = jobs.idempotency_key AND a.status IN ('pending', 'running') AND a.id <> jobs.id))`;

const guarded = (db: Db, p: OperatorParams, update: SQL) => guardedWithAudit(db, p.id, update, p.also);

export function jobCancelIfPending(db: Db, p: OperatorParams): Promise<OperatorOutcome> {
  const now = nowSql(p.now);
  return guarded(db, p, sql`UPDATE jobs SET status = 'cancelled', cancelled_at = ${now}, finished_at = ${now}, updated_at = ${now},
      last_event = 'cancelled', last_event_reason = ${p.reason}, last_event_actor = ${p.actor}
    WHERE id = ${p.id} AND status = 'pending' RETURNING *`);
}

export function jobRetryIfFinishedUnsuccessfully(db: Db, p: OperatorParams): Promise<OperatorOutcome> {
  const now = nowSql(p.now);
  return guarded(db, p, sql`UPDATE jobs SET status = 'pending', available_at = ${now},
      attempt_count = 0, errored_attempts = 0, lost_attempts = 0,
      failed_at = NULL, cancelled_at = NULL, finished_at = NULL, updated_at = ${now},
      last_event = 'retried_by_operator', last_event_reason = ${p.reason}, last_event_actor = ${p.actor}
    WHERE id = ${p.id} AND status IN ('failed', 'cancelled') AND ${keyFreeSql} RETURNING *`);
}

function bulkWhere(f: BulkFilter): SQL {
  if (bulkKindFor(f.status) !== f.kind) throw new Error(`bulk ${f.kind} does not act on ${f.status} jobs`);
  const queue = f.queue === undefined ? sql`` : sql`queue_name = ${f.queue} AND `;
  return sql`${queue}status = ${f.status}`;
}

/** How many jobs a bulk action would match, counted up to `max` (so a huge table costs at most `max` index steps). */
export async function jobsBulkMatching(db: Db, f: BulkFilter & { now: Now; max: number; rules: RequeueRules }): Promise<number> {
  // Without force, a requeue follows the reaper's decision for each job; with it, every running job matches.
  if (f.kind === 'requeue' && !f.force && bulkKindFor(f.status) === 'requeue') return jobsBulkRequeueMatching(db, { queue: f.queue, now: f.now, rules: f.rules, max: f.max });
  const [row] = await db.all<{ n: number }>(
    sql`SELECT count(*) AS n FROM (SELECT 1 FROM jobs WHERE ${bulkWhere(f)} LIMIT ${f.max})`,
  );
  return Number(row?.n ?? 0);
}

export async function jobsBulkPreview(db: Db, f: BulkFilter & { now: Now; limit: number; rules: RequeueRules }): Promise<BulkPreviewRow[]> {
  if (!Number.isSafeInteger(f.limit) || f.limit <= 0) return [];
  const columns = sql`id, queue_name, status, attempt_count, max_attempts, locked_by, lease_expires_at, updated_at, substr(last_error, 1, 200) AS last_error`;
  if (f.kind === 'requeue' && !f.force && bulkKindFor(f.status) === 'requeue') {
    // The jobs the reaper would take now, as the requeue itself picks them, each with what it would do.
    const plan = await jobsBulkRequeuePlan(db, { queue: f.queue, now: f.now, rules: f.rules, limit: f.limit });
    if (plan.length === 0) return [];
    const byId = new Map(plan.map((p) => [p.id, p.requeue]));
    // One JSON parameter, not one per id: D1 binds at most 100 per statement.
    const rows = await db.all<BulkPreviewRow>(sql`SELECT ${columns} FROM jobs WHERE id IN (SELECT value FROM json_each(${JSON.stringify([...byId.keys()])})) ORDER BY id`);
    return rows.map((r) => ({ ...r, requeue: byId.get(Number(r.id))! }));
  }
  return db.all<BulkPreviewRow>(sql`SELECT ${columns} FROM jobs WHERE ${bulkWhere(f)} ORDER BY id LIMIT ${f.limit}`);
}

/** Runs a bulk action; the ids it changed, ascending. */
export async function jobsBulkAct(db: Db, p: BulkParams): Promise<number[]> {
  if (!Number.isSafeInteger(p.limit) || p.limit <= 0) return [];
  if (p.kind === 'requeue' && !p.force && bulkKindFor(p.status) === 'requeue') return jobsBulkRequeue(db, p);
  const now = nowSql(p.now);
  const where = bulkWhere(p);
  const pick = sql`id IN (SELECT id FROM jobs WHERE ${where} ORDER BY id LIMIT ${p.limit}) AND ${where}`;
  const audit = (event: string) => sql`last_event = ${event}, last_event_reason = ${p.reason}, last_event_actor = ${p.actor}`;
  let update: SQL;
  if (p.kind === 'retry') {
    // A key's jobs can come back one at a time only: a job whose key another
    // active job holds is skipped, and of several finished jobs sharing a key
    // only the newest is picked (so the one statement cannot break
    // jobs_active_key_idx, whichever order SQLite updates them in).
    const newestOfKey = sql`(jobs.idempotency_key IS NULL OR jobs.id = (SELECT max(k.id) FROM jobs k WHERE k.queue_name = jobs.queue_name
      AND k.idempotency_key = jobs.idempotency_key AND k.status IN ('failed', 'cancelled')))`;
    update = sql`UPDATE jobs SET status = 'pending', available_at = ${now},
        attempt_count = 0, errored_attempts = 0, lost_attempts = 0,
        failed_at = NULL, cancelled_at = NULL, finished_at = NULL, updated_at = ${now}, ${audit('retried_by_operator')}
      WHERE ${pick} AND ${keyFreeSql} AND ${newestOfKey} RETURNING id`;
  } else if (p.kind === 'cancel') {
    update = sql`UPDATE jobs SET status = 'cancelled', cancelled_at = ${now}, finished_at = ${now}, updated_at = ${now}, ${audit('cancelled')}
      WHERE ${pick} RETURNING id`;
  } else {
    // A job whose onLost is 'hold' is held for a person instead (held.ts),
    // its lost attempt not counted.
    const held = sql`(coalesce(on_lost, (SELECT q.on_lost FROM queues q WHERE q.name = jobs.queue_name), 'retry') = 'hold')`;
    const event = p.force ? 'force_requeued_by_operator' : 'requeued_by_operator';
    update = sql`UPDATE jobs SET status = 'pending', ${CLEAR_LEASE},
        available_at = CASE WHEN ${held} THEN ${HELD_AVAILABLE_AT} ELSE ${now} END, held_at = CASE WHEN ${held} THEN ${now} END,
        held_attempt = CASE WHEN ${held} THEN json_object('worker', locked_by, 'instance', locked_by_instance, 'attempt', attempt_count, 'fencingToken', lease_epoch,
          'startedAt', started_at, 'lastHeartbeatAt', last_heartbeat_at, 'leaseExpiresAt', lease_expires_at, 'why', ${`requeued in bulk by ${p.actor}: ${p.reason ?? 'no reason given'}`}) ELSE held_attempt END,
        last_error = CASE WHEN ${held} THEN ${`held for a person (onLost 'hold'): requeued in bulk by ${p.actor}`} ELSE last_error END,
        lost_attempts = lost_attempts + CASE WHEN ${held} THEN 0 ELSE 1 END, updated_at = ${now},
        last_event = CASE WHEN ${held} THEN ${HELD_EVENT} ELSE ${event} END, last_event_reason = CASE WHEN ${held} THEN 'requeue_held' ELSE ${p.reason} END,
        last_event_actor = ${p.actor}
      WHERE ${pick} RETURNING id`;
  }
  const first = alongsideFirst(db, p.also);
  const entry = p.also?.audit;
  const results = await batchList(db, [
    ...first,
    db.all<{ id: number }>(update),
    // changes(): the rows the UPDATE just before it changed.
    ...(entry ? [auditInsert(db, { ...entry, after: sql`json_set(${entry.after ?? '{}'}, '$.changed', changes())` })] : []),
  ]);
  const rows = results[first.length] as { id: number }[];
  return rows.map((r) => Number(r.id)).sort((a, b) => a - b);
}
