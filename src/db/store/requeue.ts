/**
 * The operator's requeue: running -> pending now, the token cleared (the old
 * worker's writes are refused from then on), counted as a lost attempt.
 *
 * Without force it follows the reaper (src/core/reaper.ts decideReap): the
 * job is taken only when the reaper itself would take it now (lease + grace
 * passed and the owner does not look alive or its deferral is spent, or the
 * deadline passed). Otherwise nothing changes and the answer says why. The
 * decision is made on one read, and the write is guarded by "unchanged since
 * that read" (same token, same lease expiry, same owner last-seen time): a
 * heartbeat or liveness beat that lands in between makes the write find no
 * row, so an operator can never override a sign of life it did not see.
 *
 * With force (a reason is required by the callers) any running job is taken:
 * the one way to act before the reaper, and its event says so
 * (`force_requeued_by_operator`).
 */
import { sql, type SQL } from 'drizzle-orm';
import type { QueueDefaults } from '../../core/config.ts';
import { decideReap, type ReapDecision, type ReapRules } from '../../core/reaper.ts';
import type { Now } from '../../core/clock.ts';
import { batchList, type Db } from '../db.ts';
import type { JobStatus } from '../schema.ts';
import { nowSql } from '../sql.ts';
import { CLEAR_LEASE } from './owned.ts';
import { guardedWithAudit, jobActionAudit, type OperatorOutcome, type RequeueRefusal } from './operator-outcome.ts';
import { alongsideFirst, auditInsert, auditInsertIfChanged, type Alongside } from './audit.ts';
import { reapCandidateColumns, type ReapCandidateRow } from './reaper.ts';
import type { JobRecord } from './record.ts';
import { ownerLastSeenSql } from './workers.ts';

export type RequeueRules = QueueDefaults & ReapRules;

type Row = ReapCandidateRow & { status: JobStatus; now: number };

const candidateRead = (rules: RequeueRules, now: Now) =>
  sql`SELECT ${reapCandidateColumns(rules)}, j.status AS status, ${nowSql(now)} AS now FROM jobs j LEFT JOIN queues q ON q.name = j.queue_name`;

/** The take-back, guarded by "unchanged since the read" (and, without force, decided by the reaper's rules). */
function requeueUpdate(p: { row?: Row; id: number; now: number | SQL; actor: string; reason: string | null; force: boolean; returning: SQL }): SQL {
  const unchanged = p.row
    ? sql`AND lock_token = ${p.row.lockToken} AND lease_expires_at = ${p.row.leaseExpiresAt} AND ${ownerLastSeenSql('jobs')} IS ${p.row.ownerLastSeenAt}`
    : sql``;
  return sql`UPDATE jobs SET status = 'pending', available_at = ${p.now}, ${CLEAR_LEASE},
      lost_attempts = lost_attempts + 1, updated_at = ${p.now},
      last_event = ${p.force ? 'force_requeued_by_operator' : 'requeued_by_operator'},
      last_event_reason = ${p.reason}, last_event_actor = ${p.actor}
    WHERE id = ${p.id} AND status = 'running' ${unchanged} RETURNING ${p.returning}`;
}

const takes = (d: ReapDecision) => d.action === 'requeue' || d.action === 'fail';

export async function jobRequeueIfReaperWould(
  db: Db,
  p: { id: number; actor: string; reason: string | null; now: Now; force: boolean; rules: RequeueRules; also?: Alongside },
): Promise<OperatorOutcome | RequeueRefusal> {
  if (p.force) {
    return guardedWithAudit(db, p.id, requeueUpdate({ id: p.id, now: nowSql(p.now), actor: p.actor, reason: p.reason, force: true, returning: sql`*` }), p.also);
  }
  const [row] = await db.all<Row>(sql`${candidateRead(p.rules, p.now)} WHERE j.id = ${p.id}`);
  if (!row) return { ok: false, reason: 'not_found' };
  if (row.status !== 'running') return { ok: false, reason: 'conflict', status: row.status };
  const d = decideReap(row, row.now, p.rules);
  if (!takes(d)) return { ok: false, reason: 'reaper_would_wait', status: 'running', why: d.why, takesAt: d.takesAt };
  const update = requeueUpdate({ row, id: p.id, now: row.now, actor: p.actor, reason: p.reason, force: false, returning: sql`*` });
  const first = alongsideFirst(db, p.also);
  const job = p.also
    ? ((await batchList(db, [...first, db.all<JobRecord>(update), ...(p.also.audit ? [auditInsertIfChanged(db, jobActionAudit(p.also.audit, p.id))] : [])]))[first.length] as JobRecord[])[0]
    : (await db.all<JobRecord>(update))[0];
  if (job) return { ok: true, job };
  const [after] = await db.all<{ status: JobStatus }>(sql`SELECT status FROM jobs WHERE id = ${p.id}`);
  if (!after) return { ok: false, reason: 'not_found' };
  if (after.status !== 'running') return { ok: false, reason: 'conflict', status: after.status };
  return {
    ok: false,
    reason: 'reaper_would_wait',
    status: 'running',
    why: 'the job changed while the requeue was decided (a heartbeat or its owner\'s beat landed)',
    takesAt: row.now,
  };
}

/**
 * The running jobs of one queue (or all) the reaper would take now, lowest id
 * first, read with the reaper's candidate columns: expired past grace, or past
 * the deadline. Read at most `max` candidates.
 */
async function bulkCandidates(db: Db, p: { queue: string | undefined; now: Now; rules: RequeueRules; max: number }): Promise<Row[]> {
  const queue = p.queue === undefined ? sql`` : sql`j.queue_name = ${p.queue} AND `;
  const now = nowSql(p.now);
  const rows = await db.all<Row>(sql`${candidateRead(p.rules, p.now)}
    WHERE ${queue}j.status = 'running' AND (j.lease_expires_at < ${now} - coalesce(q.grace_ms, ${p.rules.graceMs}) OR j.deadline_at <= ${now})
    ORDER BY j.id LIMIT ${p.max}`);
  return rows.filter((r) => takes(decideReap(r, r.now, p.rules)));
}

/** How many running jobs the reaper would take now (what a bulk requeue may act on), counted up to `max`. */
export async function jobsBulkRequeueMatching(db: Db, p: { queue: string | undefined; now: Now; rules: RequeueRules; max: number }): Promise<number> {
  return (await bulkCandidates(db, p)).length;
}

/** Requeues up to `limit` jobs the reaper would take now, each guarded like the single requeue; the ids changed, ascending. */
/** The ids a bulk requeue would take now (its dry run), lowest first, at most `limit`. */
export async function jobsBulkRequeueIds(db: Db, p: { queue: string | undefined; now: Now; rules: RequeueRules; limit: number }): Promise<number[]> {
  return (await bulkCandidates(db, { ...p, max: Math.max(p.limit * 4, 1_000) })).slice(0, p.limit).map((r) => Number(r.id));
}

export async function jobsBulkRequeue(
  db: Db,
  p: { queue: string | undefined; now: Now; rules: RequeueRules; limit: number; actor: string; reason: string | null; also?: Alongside },
): Promise<number[]> {
  const rows = (await bulkCandidates(db, { ...p, max: Math.max(p.limit * 4, 1_000) })).slice(0, p.limit);
  const first = alongsideFirst(db, p.also);
  const audit = p.also?.audit;
  // The run is audited even when nothing matched: the operator asked.
  const changed = rows.length === 0
    ? sql`0`
    : sql`(SELECT count(*) FROM jobs WHERE id IN (${sql.join(rows.map((r) => sql`${r.id}`), sql`, `)}) AND status = 'pending' AND last_event = 'requeued_by_operator' AND last_event_actor = ${p.actor} AND updated_at = ${rows[0]!.now})`;
  const results = await batchList(db, [
    ...first,
    ...rows.map((row) => db.all<{ id: number }>(requeueUpdate({ row, id: row.id, now: row.now, actor: p.actor, reason: p.reason, force: false, returning: sql`id` }))),
    ...(audit ? [auditInsert(db, { ...audit, after: sql`json_set(${audit.after ?? '{}'}, '$.changed', ${changed})` })] : []),
  ]);
  return (results.slice(first.length, first.length + rows.length) as { id: number }[][]).flat().map((r) => Number(r.id)).sort((a, b) => a - b);
}
