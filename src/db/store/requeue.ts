/**
 * The operator's requeue of a running job, the token cleared (the old
 * worker's writes are refused from then on).
 *
 * Without force it does what the reaper (src/core/reaper.ts decideReap)
 * would do with the job now, and nothing else:
 * - requeue: running -> pending now (the attempt counted as the reaper
 *   counts it: lost for an expired lease, errored past the deadline);
 * - fail: running -> failed for good, when the reaper would fail it (its
 *   attempts or its lost-attempt budget spent), recorded as the reaper's
 *   take would be (`reaped`, with the reaper's reason and message) with the
 *   operator as its actor;
 * - nothing: inside the grace, a live owner, or a server's hold after its
 *   gap (src/db/store/reaper-hold.ts): the answer says why and until when.
 * The decision is made on one read (the hold is read with the row), and the
 * write is guarded by "unchanged since that read" (same token, same lease
 * expiry, same owner last-seen time) and, for an expired lease, by "no hold
 * in force": a heartbeat, a liveness beat or a hold that lands in between
 * makes the write find no row, so an operator never overrides a sign of
 * life, or a hold, it did not see.
 *
 * A job whose onLost is 'hold' is held for a person instead of going back
 * to the queue, with force or without (held.ts): event `held`, reason
 * `requeue_held`; its lost attempt is not counted.
 *
 * With force (a reason is required by the callers) any running job goes back
 * to pending: the one way to act before the reaper, even during a hold or
 * past the job's attempt budget. Its event is `force_requeued_by_operator`,
 * and what it overrode (the hold, the budget) is said in the answer, in the
 * event's message and in the audit entry.
 */
import { sql, type SQL } from 'drizzle-orm';
import { decideReap, forcedRequeueOf, requeueDoneOf, takesNow, type ReapDecision, type ReapRules, type ReapTake, type RequeueDone } from '../../core/reaper.ts';
import type { Now } from '../../core/clock.ts';
import { batchList, type Db } from '../db.ts';
import type { JobStatus } from '../schema.ts';
import { CLEAR_LEASE } from './owned.ts';
import { guardedWithAudit, jobActionAudit } from './operator-outcome.ts';
import { alongsideFirst, auditInsert, auditInsertIfChanged } from './audit.ts';
import { reapCandidateColumns } from './reaper.ts';
import { noHoldInForceSql } from './reaper-hold.ts';
import { heldSetSql } from './held.ts';
import { jobStatusSql } from './read.ts';
import type { JobRecord } from '../../core/job-record.ts';
import { ownerLastSeenSql } from './workers.ts';
import { nowSql } from '../sql.ts';
import type { Alongside, OperatorOutcome, ReapCandidateRow, RequeueRefusal, RequeueRules } from './port-types.ts';

type Row = ReapCandidateRow & { status: JobStatus; now: number };
type Take = ReapTake;

const candidateRead = (rules: RequeueRules, now: Now) =>
  sql`SELECT ${reapCandidateColumns(rules)}, j.status AS status, ${nowSql(now)} AS now FROM jobs j LEFT JOIN queues q ON q.name = j.queue_name`;

/** "Unchanged since the read": the owner's token, the lease expiry and the owner's last sign of life. */
const unchangedSql = (row: Row) =>
  sql`AND lock_token = ${row.lockToken} AND lease_expires_at = ${row.leaseExpiresAt} AND ${ownerLastSeenSql('jobs')} IS ${row.ownerLastSeenAt}`;

/** The reaper's decision carried out by an operator: guarded by "unchanged since read" and, for an expired lease, "no hold in force". */
function takeUpdate(p: { row: Row; take: Take; actor: string; reason: string | null; returning: SQL; also?: SQL }): SQL {
  const { row, take: d } = p;
  if (d.action === 'requeue' && d.held) {
    // onLost 'hold': taken from its worker, the job waits for a person
    // (its lost attempt not counted toward maxLostAttempts).
    const counted = d.cause === 'deadline' ? sql`errored_attempts = errored_attempts + 1, ` : sql``;
    const hold = heldSetSql({ now: row.now, reason: 'requeue_held', why: `requeued by ${p.actor}${p.reason ? ` (${p.reason})` : ''}: ${d.why}`, worker: row.lockedBy, lastHeartbeatAt: row.lastHeartbeatAt });
    return sql`UPDATE jobs SET ${hold}, ${counted}${CLEAR_LEASE}, updated_at = ${row.now}, last_event_actor = ${p.actor}
      WHERE id = ${row.id} AND status = 'running' ${unchangedSql(row)} ${d.cause === 'lost' ? sql`AND ${noHoldInForceSql(row.now)}` : sql``} RETURNING ${p.returning}`;
  }
  const counted = d.cause === 'lost' ? sql`lost_attempts = lost_attempts + 1` : sql`errored_attempts = errored_attempts + 1`;
  const holdGuard = d.cause === 'lost' ? sql`AND ${noHoldInForceSql(row.now)}` : sql``;
  const next =
    d.action === 'requeue'
      ? sql`status = 'pending', available_at = ${row.now}, last_event = 'requeued_by_operator', last_event_reason = ${p.reason}`
      : sql`status = 'failed', failed_at = ${row.now}, finished_at = ${row.now}, last_error = ${d.message}, last_event = 'reaped', last_event_reason = ${d.reason}`;
  return sql`UPDATE jobs SET ${next}, ${CLEAR_LEASE}, ${counted}, updated_at = ${row.now}, last_event_actor = ${p.actor}
    WHERE id = ${row.id} AND status = 'running' ${unchangedSql(row)} ${holdGuard} ${p.also ?? sql``} RETURNING ${p.returning}`;
}

const takeDone = requeueDoneOf;

/** A running job the reaper would not take now: why, and when it would (or when the hold ends). */
const waitRefusal = (d: ReapDecision): RequeueRefusal => ({
  ok: false,
  reason: 'reaper_would_wait',
  status: 'running',
  why: d.why,
  takesAt: d.takesAt,
  ...(d.action === 'hold' ? { heldUntil: d.until } : {}),
});

const forcedDone = (row: Row, rules: ReapRules): RequeueDone => forcedRequeueOf(row, row.now, rules);

/** The event message (and audit note) of a forced requeue that went past the hold or the budget; null when it did not. */
function overrideNote(done: RequeueDone): string | null {
  const parts = [
    done.overrodeHold ? `overrode the reaper's hold (${done.overrodeHold.why})` : null,
    done.beyondBudget ? `went past the job's budget (${done.beyondBudget})` : null,
  ].filter((x): x is string => x !== null);
  return parts.length === 0 ? null : `forced requeue ${parts.join(' and ')}`;
}

async function readRow(db: Db, p: { id: number; now: Now; rules: RequeueRules }): Promise<Row | OperatorOutcome> {
  const [row] = await db.all<Row>(sql`${candidateRead(p.rules, p.now)} WHERE j.id = ${p.id}`);
  if (!row) return { ok: false, reason: 'not_found' };
  if (row.status !== 'running') return { ok: false, reason: 'conflict', status: row.status };
  return row;
}
const isRow = (r: Row | OperatorOutcome): r is Row => !('ok' in r);

/**
 * What a requeue would do now, changing nothing (the CLI's and the API's dry
 * run): the reaper's take, or with force what it would go past; else the
 * same refusal the requeue itself would answer.
 */
export async function jobRequeuePlan(
  db: Db,
  p: { id: number; now: Now; force: boolean; rules: RequeueRules },
): Promise<{ ok: true; requeue: RequeueDone } | Exclude<OperatorOutcome, { ok: true }>> {
  const row = await readRow(db, p);
  if (!isRow(row)) return row as Exclude<OperatorOutcome, { ok: true }>;
  if (p.force) return { ok: true, requeue: forcedDone(row, p.rules) };
  const d = decideReap(row, row.now, p.rules);
  return takesNow(d) ? { ok: true, requeue: takeDone(d) } : waitRefusal(d);
}

export async function jobRequeueIfReaperWould(
  db: Db,
  p: { id: number; actor: string; reason: string | null; now: Now; force: boolean; rules: RequeueRules; also?: Alongside },
): Promise<OperatorOutcome | RequeueRefusal> {
  const row = await readRow(db, p);
  if (!isRow(row)) return row;
  if (p.force) return forceRequeue(db, row, p);
  const d = decideReap(row, row.now, p.rules);
  if (!takesNow(d)) return waitRefusal(d);
  const update = takeUpdate({ row, take: d, actor: p.actor, reason: p.reason, returning: sql`*` });
  const first = alongsideFirst(db, p.also);
  const job = p.also
    ? ((await batchList(db, [...first, db.all<JobRecord>(update), ...(p.also.audit ? [auditInsertIfChanged(db, jobActionAudit(p.also.audit, p.id))] : [])]))[first.length] as JobRecord[])[0]
    : (await db.all<JobRecord>(update))[0];
  if (job) return { ok: true, job, requeue: takeDone(d) };
  const [after] = await db.all<{ status: JobStatus }>(sql`SELECT status FROM jobs WHERE id = ${p.id}`);
  if (!after) return { ok: false, reason: 'not_found' };
  if (after.status !== 'running') return { ok: false, reason: 'conflict', status: after.status };
  return {
    ok: false,
    reason: 'reaper_would_wait',
    status: 'running',
    why: "the job changed while the requeue was decided (a heartbeat or its owner's beat landed, or a server's hold began)",
    takesAt: row.now,
  };
}

/** Force: any running job back to pending now; what it went past is its event's message and its audit entry's note. */
async function forceRequeue(db: Db, row: Row, p: { id: number; actor: string; reason: string | null; rules: RequeueRules; also?: Alongside }): Promise<OperatorOutcome> {
  const done = forcedDone(row, p.rules);
  const note = overrideNote(done);
  const why = `force requeued by ${p.actor} (${p.reason ?? 'no reason given'}): ${done.why}${note === null ? '' : `; ${note}`}`;
  const update = done.held
    ? sql`UPDATE jobs SET ${heldSetSql({ now: row.now, reason: 'requeue_held', why, worker: row.lockedBy, lastHeartbeatAt: row.lastHeartbeatAt })}, ${CLEAR_LEASE},
        updated_at = ${row.now}, last_event_actor = ${p.actor}
      WHERE id = ${p.id} AND status = 'running' RETURNING *`
    : sql`UPDATE jobs SET status = 'pending', available_at = ${row.now}, ${CLEAR_LEASE},
      lost_attempts = lost_attempts + 1, updated_at = ${row.now}, ${note === null ? sql`` : sql`last_error = ${note},`}
      last_event = 'force_requeued_by_operator', last_event_reason = ${p.reason}, last_event_actor = ${p.actor}
    WHERE id = ${p.id} AND status = 'running' RETURNING *`;
  const audit = p.also?.audit && note !== null ? { ...p.also.audit, after: sql`json_set(${jobStatusSql(p.id)}, '$.overrode', ${note})` } : p.also?.audit;
  const outcome = await guardedWithAudit(db, p.id, update, p.also && { ...p.also, audit });
  return outcome.ok ? { ...outcome, requeue: done } : outcome;
}

/** A running job the bulk requeue would take now, with the reaper's take. */
type Planned = { row: Row; take: Take };

/**
 * The running jobs of one queue (or all) the reaper would take now, lowest id
 * first, read with the reaper's candidate columns (the hold included):
 * expired past grace, or past the deadline. Read at most `max` candidates.
 */
async function bulkCandidates(db: Db, p: { queue: string | undefined; now: Now; rules: RequeueRules; max: number }): Promise<Planned[]> {
  const queue = p.queue === undefined ? sql`` : sql`j.queue_name = ${p.queue} AND `;
  const now = nowSql(p.now);
  const rows = await db.all<Row>(sql`${candidateRead(p.rules, p.now)}
    WHERE ${queue}j.status = 'running' AND (j.lease_expires_at < ${now} - coalesce(q.grace_ms, ${p.rules.graceMs}) OR j.deadline_at <= ${now})
    ORDER BY j.id LIMIT ${p.max}`);
  const planned: Planned[] = [];
  for (const row of rows) {
    const d = decideReap(row, row.now, p.rules);
    if (takesNow(d)) planned.push({ row, take: d });
  }
  return planned;
}

/** How many running jobs the reaper would take now (what a bulk requeue may act on), counted up to `max`. */
export async function jobsBulkRequeueMatching(db: Db, p: { queue: string | undefined; now: Now; rules: RequeueRules; max: number }): Promise<number> {
  return (await bulkCandidates(db, p)).length;
}

/** What a bulk requeue would do now (its dry run), lowest id first, at most `limit`: each job's id and the reaper's take. */
export async function jobsBulkRequeuePlan(
  db: Db,
  p: { queue: string | undefined; now: Now; rules: RequeueRules; limit: number },
): Promise<{ id: number; requeue: RequeueDone }[]> {
  return (await bulkCandidates(db, { ...p, max: Math.max(p.limit * 4, 1_000) })).slice(0, p.limit).map(({ row, take }) => ({ id: Number(row.id), requeue: takeDone(take) }));
}

/**
 * Does what the reaper would do now to up to `limit` running jobs (requeue,
 * or fail for good where their budgets are spent), each guarded like the
 * single requeue; the ids changed, ascending. The audit entry counts them
 * (`changed`, and `failed` of those).
 */
export async function jobsBulkRequeue(
  db: Db,
  p: { queue: string | undefined; now: Now; rules: RequeueRules; limit: number; actor: string; reason: string | null; also?: Alongside },
): Promise<number[]> {
  const planned = (await bulkCandidates(db, { ...p, max: Math.max(p.limit * 4, 1_000) })).slice(0, p.limit);
  const first = alongsideFirst(db, p.also);
  const audit = p.also?.audit;
  // The run is audited even when nothing matched: the operator asked.
  const done = (status: 'pending' | 'failed') =>
    planned.length === 0
      ? sql`0`
      : sql`(SELECT count(*) FROM jobs WHERE id IN (${sql.join(
          planned.map(({ row }) => sql`${row.id}`),
          sql`, `,
        )}) AND status = ${status} AND last_event IN (${status === 'pending' ? sql`'requeued_by_operator', 'held'` : sql`'reaped'`}) AND last_event_actor = ${p.actor} AND updated_at = ${planned[0]!.row.now})`;
  const results = await batchList(db, [
    ...first,
    ...planned.map(({ row, take }) => db.all<{ id: number }>(takeUpdate({ row, take, actor: p.actor, reason: p.reason, returning: sql`id` }))),
    ...(audit ? [auditInsert(db, { ...audit, after: sql`json_set(${audit.after ?? '{}'}, '$.changed', ${done('pending')} + ${done('failed')}, '$.failed', ${done('failed')})` })] : []),
  ]);
  return (results.slice(first.length, first.length + planned.length) as { id: number }[][]).flat().map((r) => Number(r.id)).sort((a, b) => a - b);
}

/** One job of a list the requeue rule was asked about: its guarded statement, or why the rule refuses it. */
export type RequeueStep = { id: number; take: 'requeue' | 'fail'; update: SQL } | { id: number; take: null; why: string };

/**
 * The requeue rule for a list of jobs (a canary run's step), changing
 * nothing: for each, the statement that does what a single requeue would
 * (the reaper's take, or with force any running job back to pending), each
 * guarded by "unchanged since this read" (the same token, for force too,
 * so a job claimed again in between is never taken) and by `also` (the
 * caller's guard, e.g. "this batch still owns the run's step"); or, for a
 * job the rule refuses, why. In the order of `ids`.
 */
export async function jobsRequeueSteps(
  db: Db,
  p: { ids: number[]; now: Now; force: boolean; rules: RequeueRules; actor: string; reason: string | null; also: SQL },
): Promise<RequeueStep[]> {
  if (p.ids.length === 0) return [];
  // One JSON parameter, not one per id: D1 binds at most 100 per statement.
  const rows = await db.all<Row>(sql`${candidateRead(p.rules, p.now)} WHERE j.id IN (SELECT value FROM json_each(${JSON.stringify(p.ids)}))`);
  const byId = new Map(rows.map((r) => [Number(r.id), r]));
  return p.ids.map((id): RequeueStep => {
    const row = byId.get(id);
    if (!row) return { id, take: null, why: 'the job no longer exists' };
    if (row.status !== 'running') return { id, take: null, why: `the job is ${row.status} now, no longer running` };
    if (p.force) {
      const note = overrideNote(forcedDone(row, p.rules));
      return {
        id,
        take: 'requeue',
        update: sql`UPDATE jobs SET status = 'pending', available_at = ${row.now}, ${CLEAR_LEASE},
            lost_attempts = lost_attempts + 1, updated_at = ${row.now}, ${note === null ? sql`` : sql`last_error = ${note},`}
            last_event = 'force_requeued_by_operator', last_event_reason = ${p.reason}, last_event_actor = ${p.actor}
          WHERE id = ${id} AND status = 'running' AND lock_token = ${row.lockToken} ${p.also} RETURNING id`,
      };
    }
    const d = decideReap(row, row.now, p.rules);
    if (!takesNow(d)) return { id, take: null, why: `the reaper would not take it back now: ${d.why}` };
    return { id, take: d.action, update: takeUpdate({ row, take: d, actor: p.actor, reason: p.reason, returning: sql`id`, also: p.also }) };
  });
}
