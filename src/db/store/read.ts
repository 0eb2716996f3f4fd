/** Reads: one job with its events, keyset-paginated lists, per-queue health, a claim's rate wait. Writes live with their families (a queue's settings: queue-settings.ts). */
import { and, asc, desc, eq, gt, inArray, lt, sql, type SQL } from 'drizzle-orm';
import { MINUTE_MS, type Now } from '../../core/clock.ts';
import { parseQueueAlertThresholds } from '../../core/alerts.ts';
import type { QueueDefaults } from '../../core/config.ts';
import type { Db } from '../db.ts';
import { rowColumns } from '../row-columns.ts';
import { jobs, queues } from '../schema.ts';
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core';
import { nowSql } from '../sql.ts';
import { slidingRateUsedSql } from './rate-window.ts';
import { filteredPage } from './job-search.ts';
import type { QueueHealth } from '../../core/metrics-snapshot.ts';
import { JOB_PREVIEW_CHARS } from '../../core/wire.ts';
import type { JobRecord, JobSummaryRecord } from '../../core/job-record.ts';
import type { EventRecord, ListParams, RateWait, StoredEventRecord } from './port-types.ts';

/** The database's clock, in epoch ms. */
export async function readNow(db: Db): Promise<number> {
  const [row] = await db.all<{ now: number }>(sql`SELECT ${nowSql('db')} AS now`);
  return row!.now;
}

/** A job's queue and status, as SQL for an audit entry in the batch that changes the job. */
export const jobQueueSql = (id: number): SQL => sql`(SELECT queue_name FROM jobs WHERE id = ${id})`;
export const jobStatusSql = (id: number): SQL => sql`(SELECT json_object('status', status) FROM jobs WHERE id = ${id})`;

export async function jobGet(db: Db, id: number): Promise<JobRecord | undefined> {
  const [row] = await db.select(rowColumns(jobs)).from(jobs).where(eq(jobs.id, id));
  return row;
}

/** What the derived entries are read from: the job row, and whether an older database stored them. */
interface DerivationRow {
  queue_name: string;
  created_at: number;
  enqueued_by: string | null;
  completed_at: number | null;
  attempt_count: number;
  last_event: string;
  last_event_actor: string | null;
  stored_enqueued: number;
  stored_completed: number;
  last_claimed_by: string | null;
}

/**
 * A job's trail, newest `limit` events, oldest first. Refused writes (stale
 * lock tokens: anyone who knows the id can send them) are capped at the
 * newest REFUSALS_SHOWN and the rest of the window goes to the lifecycle, so
 * a flood of refusals cannot push the job's real history out of view.
 * The job's enqueue and completion come from its row, in time order with the
 * stored events (see withDerived); they do not take a place in the window.
 */
export async function eventsForJob(db: Db, p: { jobId: number; limit: number }): Promise<{ events: EventRecord[]; olderNotShown: number }> {
  const refusals = Math.min(REFUSALS_SHOWN, p.limit);
  const [lifecycle, refused, total, derivation] = await db.batch([
    // One more than can be shown: whether older lifecycle events were left out.
    db.all<StoredEventRecord>(sql`SELECT * FROM events WHERE job_id = ${p.jobId} AND type <> 'stale_write_rejected' ORDER BY id DESC LIMIT ${p.limit + 1}`),
    db.all<StoredEventRecord>(sql`SELECT * FROM events WHERE job_id = ${p.jobId} AND type = 'stale_write_rejected' ORDER BY id DESC LIMIT ${refusals}`),
    db.all<{ n: number }>(sql`SELECT count(*) AS n FROM events WHERE job_id = ${p.jobId}`),
    // An older database's stored enqueue is its job's first event (the insert
    // trigger wrote it), and its stored completion the last one but for
    // refusals and dedups (nothing else follows a completion): each found
    // from one end of events_job_idx, not by reading the whole trail.
    db.all<DerivationRow>(sql`SELECT j.queue_name, j.created_at, j.enqueued_by, j.completed_at, j.attempt_count, j.last_event, j.last_event_actor,
        coalesce((SELECT type = 'enqueued' FROM events WHERE job_id = j.id ORDER BY id LIMIT 1), 0) AS stored_enqueued,
        CASE WHEN j.completed_at IS NULL THEN 0 ELSE coalesce((SELECT type = 'completed' FROM events
          WHERE job_id = j.id AND type NOT IN ('stale_write_rejected', 'deduplicated') ORDER BY id DESC LIMIT 1), 0) END AS stored_completed,
        (SELECT worker_id FROM events WHERE job_id = j.id AND type = 'claimed' ORDER BY id DESC LIMIT 1) AS last_claimed_by
      FROM jobs j WHERE j.id = ${p.jobId}`),
  ]);
  // Refusals take at most their share; the newest lifecycle events fill the rest.
  const lifecycleShown = p.limit - refused.length;
  const shown = [...lifecycle.slice(0, lifecycleShown), ...refused].sort((a, b) => Number(a.id) - Number(b.id));
  const olderNotShown = Math.max(0, Number(total[0]?.n ?? 0) - shown.length);
  const stored = shown.map((e): EventRecord => ({ ...e, derived: false }));
  const lifecycleCut = lifecycle.length > lifecycleShown;
  return derivation[0] ? withDerived(p.jobId, stored, { olderNotShown, lifecycleCut }, derivation[0]) : { events: stored, olderNotShown };
}

/**
 * The stored events with the derived `enqueued` (first: nothing happens to a
 * job before it) and `completed` (after every shown event at or before its
 * time: it is the last transition, only refusals and dedups come later).
 * Where an older database stored the event, it is not derived again. A
 * derived enqueue older than a cut lifecycle counts among the older not shown.
 */
function withDerived(
  jobId: number,
  events: EventRecord[],
  { olderNotShown, lifecycleCut }: { olderNotShown: number; lifecycleCut: boolean },
  d: DerivationRow,
): { events: EventRecord[]; olderNotShown: number } {
  const out = [...events];
  const base = { job_id: jobId, queue_name: d.queue_name, reason: null, message: null, id: null, derived: true } as const;
  if (d.completed_at !== null && !Number(d.stored_completed)) {
    const completedAt = Number(d.completed_at);
    // The owner that completed it: its last claim (fencing allows no other);
    // the row's own actor when no claim event is kept.
    const completer = d.last_claimed_by ?? (d.last_event === 'completed' ? d.last_event_actor : null);
    let at = out.length;
    while (at > 0 && Number(out[at - 1]!.at) > completedAt) at--;
    out.splice(at, 0, {
      ...base,
      type: 'completed',
      from_status: 'running',
      to_status: 'completed',
      actor: d.last_event === 'completed' ? d.last_event_actor : completer,
      worker_id: completer,
      attempt: Number(d.attempt_count),
      at: completedAt,
    });
  }
  if (!Number(d.stored_enqueued)) {
    // Older than every lifecycle event: left out with them when the window cut them (refusals cut alone do not hide it).
    if (lifecycleCut) return { events: out, olderNotShown: olderNotShown + 1 };
    out.unshift({ ...base, type: 'enqueued', from_status: null, to_status: 'pending', actor: d.enqueued_by, worker_id: null, attempt: 0, at: Number(d.created_at) });
  }
  return { events: out, olderNotShown };
}

/** The newest refused writes a job's trail shows (the count of the rest is in olderNotShown). */
const REFUSALS_SHOWN = 50;

/** A page of jobs by id (newest first by default), and the cursor for the next page. */
export async function jobsList(db: Db, p: ListParams): Promise<{ jobs: JobRecord[]; next: number | null }> {
  if (p.where?.length) return filteredPage<JobRecord>(db, p, pageWhere(db, p), (where, limit) => db.select(rowColumns(jobs)).from(jobs).where(where).orderBy(pageOrder(p)).limit(limit));
  return toPage(await db.select(rowColumns(jobs)).from(jobs).where(pageWhere(db, p)).orderBy(pageOrder(p)).limit(p.limit + 1), p.limit);
}

/** Every jobs column but the four JSON ones (payload, result, progress, checkpoint): a column added to the schema is in summaries too. */
const { payload: _payload, result: _result, progress: _progress, checkpoint: _checkpoint, ...summaryColumns } = rowColumns(jobs);

/**
 * The same page as jobsList, each job without the JSON it carries: sizes and
 * previews are computed in SQL, so a page of 1 MiB payloads never reaches
 * this process whole (60 of them made a 61 MB answer and +225 MB RSS).
 */
export async function jobSummariesList(db: Db, p: ListParams): Promise<{ jobs: JobSummaryRecord[]; next: number | null }> {
  // NULL for a NULL column; payload is never NULL.
  const bytes = (column: SQLiteColumn) => sql<number | null>`length(CAST(${column} AS BLOB))`;
  const preview = (column: SQLiteColumn) => sql<string | null>`substr(${column}, 1, ${sql.raw(String(JOB_PREVIEW_CHARS))})`;
  const select = () => db
    .select({
      ...summaryColumns,
      payload_bytes: bytes(jobs.payload) as SQL<number>,
      payload_preview: preview(jobs.payload) as SQL<string>,
      result_bytes: bytes(jobs.result),
      result_preview: preview(jobs.result),
      progress_bytes: bytes(jobs.progress),
      checkpoint_bytes: bytes(jobs.checkpoint),
    })
    .from(jobs);
  if (p.where?.length) return filteredPage<JobSummaryRecord>(db, p, pageWhere(db, p), (where, limit) => select().where(where).orderBy(pageOrder(p)).limit(limit));
  return toPage(await select().where(pageWhere(db, p)).orderBy(pageOrder(p)).limit(p.limit + 1), p.limit);
}

/** A list's filters; each is an equality on an indexed column, walked by id. */
function pageWhere(db: Db, p: ListParams): SQL | undefined {
  return and(
    p.queue === undefined ? undefined : eq(jobs.queueName, p.queue),
    p.status === undefined ? undefined : eq(jobs.status, p.status),
    p.id === undefined ? undefined : eq(jobs.id, p.id),
    // The key is unique per queue (jobs_idempotency_key_idx leads with the
    // queue): without a queue filter, look it up in each queue's part of the
    // index rather than scan every job.
    p.idempotencyKey === undefined ? undefined : eq(jobs.idempotencyKey, p.idempotencyKey),
    p.idempotencyKey === undefined || p.queue !== undefined ? undefined : inArray(jobs.queueName, db.select({ name: queues.name }).from(queues)),
    p.after === undefined ? undefined : p.order === 'desc' ? lt(jobs.id, p.after) : gt(jobs.id, p.after),
  );
}

const pageOrder = (p: ListParams) => (p.order === 'desc' ? desc(jobs.id) : asc(jobs.id));

/** The first `limit` rows (one more was read: whether there is a next page) and the cursor to it. */
function toPage<Row extends { id: number }>(rows: Row[], limit: number): { jobs: Row[]; next: number | null } {
  const page = rows.slice(0, limit);
  return { jobs: page, next: rows.length > limit ? page[page.length - 1]!.id : null };
}

/** The queue settings that have a server default (QueueDefaults), by their column. */
export const SETTING_COLUMNS = {
  leaseMs: 'lease_ms',
  heartbeatMs: 'heartbeat_ms',
  graceMs: 'grace_ms',
  maxAttempts: 'max_attempts',
  maxLostAttempts: 'max_lost_attempts',
  backoffBaseMs: 'backoff_base_ms',
  backoffMaxMs: 'backoff_max_ms',
  retentionMs: 'retention_ms',
  timeoutMs: 'timeout_ms',
} as const satisfies Record<keyof QueueDefaults, string>;

/**
 * Counts and health per queue, with its settings.
 *
 * Finished counts come from finished_counts (kept exact by triggers), so
 * their cost does not grow with the finished jobs retained. Pending and
 * running are counted from their partial indexes, in one pass each.
 */
export async function queuesHealth(db: Db, p: { now: Now; defaults: QueueDefaults; queue?: string }): Promise<QueueHealth[]> {
  return toQueueHealth(await db.all<QueueHealthRow>(queuesHealthSql(p)), p.defaults);
}

type QueueHealthRow = Record<string, number | string | null>;

/** queuesHealth's statement, for a caller that runs it inside its own batch (the metrics snapshot). */
export function queuesHealthSql(p: { now: Now; queue?: string }): SQL {
  const now = nowSql(p.now);
  const only = p.queue === undefined ? sql`` : sql`WHERE q.name = ${p.queue}`;
  const onlyJobs = p.queue === undefined ? sql`` : sql`AND queue_name = ${p.queue}`;
  const onlyQueues = p.queue === undefined ? sql`` : sql`AND q.name = ${p.queue}`;
  const finished = (status: 'completed' | 'failed' | 'cancelled') =>
    sql`coalesce((SELECT c.jobs FROM finished_counts c WHERE c.queue_name = q.name AND c.status = ${status}), 0)`;
  // Pending and running are kept by triggers too (drizzle/0014): no count
  // here grows with the backlog.
  const live = (status: 'pending' | 'running') => sql`coalesce((SELECT c.jobs FROM live_counts c WHERE c.queue_name = q.name AND c.status = ${status}), 0)`;
  // ready = pending - the pending jobs not yet due, and only jobs made
  // pending for later can be those (jobs_due_later_idx). Of those, the
  // minutes after the current one are kept counts (due_later_counts,
  // drizzle/0016); only the current minute is counted in the index.
  // oldest_ready: the claim index holds each (queue, priority) in available_at order, so the first entry of each
  // priority is that priority's oldest; prio walks the distinct priorities
  // one index seek at a time (there are few), instead of reading every entry.
  // The running jobs are read through their partial index (as many as the
  // workers hold). INDEXED BY: grouped by queue, SQLite would rather walk
  // jobs_queue_status_id_idx end to end than sort a few rows.
  return sql`WITH RECURSIVE
      prio(queue_name, priority) AS (
        SELECT q.name, (SELECT max(j.priority) FROM jobs j INDEXED BY jobs_claim_idx WHERE j.status = 'pending' AND j.queue_name = q.name) FROM queues q WHERE 1 ${onlyQueues}
        UNION ALL
        SELECT p.queue_name, (SELECT max(j.priority) FROM jobs j INDEXED BY jobs_claim_idx WHERE j.status = 'pending' AND j.queue_name = p.queue_name AND j.priority < p.priority)
        FROM prio p WHERE p.priority IS NOT NULL),
      o AS (SELECT queue_name, min(first_at) AS oldest_ready FROM (
          SELECT p.queue_name, (SELECT min(j.available_at) FROM jobs j INDEXED BY jobs_claim_idx WHERE j.status = 'pending' AND j.queue_name = p.queue_name AND j.priority = p.priority) AS first_at
          FROM prio p WHERE p.priority IS NOT NULL)
        WHERE first_at <= ${now} GROUP BY queue_name),
      r AS (SELECT queue_name, sum(lease_expires_at < ${now}) AS expired_leases, min(started_at) AS oldest_running
        FROM jobs INDEXED BY jobs_lease_expiry_idx WHERE status = 'running' ${onlyJobs} GROUP BY queue_name)
    SELECT q.*,
      ${live('pending')} AS c_pending,
      ${live('running')} AS c_running,
      ${finished('completed')} AS c_completed,
      ${finished('failed')} AS c_failed,
      ${finished('cancelled')} AS c_cancelled,
      ${live('pending')} - coalesce((SELECT sum(d.jobs) FROM due_later_counts d WHERE d.queue_name = q.name AND d.minute_at > ${now}), 0)
        - (SELECT count(*) FROM jobs j INDEXED BY jobs_due_later_idx
          WHERE j.status = 'pending' AND j.available_at > j.created_at AND j.queue_name = q.name
            AND j.available_at > ${now} AND j.available_at < ${now} - ${now} % ${MINUTE_MS} + ${MINUTE_MS}) AS ready, o.oldest_ready AS oldest_ready,
      coalesce(r.expired_leases, 0) AS expired_leases, r.oldest_running AS oldest_running,
      (SELECT count(*) FROM jobs j INDEXED BY jobs_held_idx WHERE j.queue_name = q.name AND j.held_at IS NOT NULL AND j.status = 'pending') AS held,
      ${rateWindowSql('q', now)}
    FROM queues q LEFT JOIN o ON o.queue_name = q.name LEFT JOIN r ON r.queue_name = q.name
    ${only} ORDER BY q.name`;
}

/** queuesHealth's rows as QueueHealth, each setting the queue's own or the server default. */
export function toQueueHealth(rows: readonly QueueHealthRow[], defaults: QueueDefaults): QueueHealth[] {
  return rows.map((r) => {
    const overrides: Partial<QueueDefaults> = {};
    const settings = {} as QueueDefaults;
    for (const [key, column] of Object.entries(SETTING_COLUMNS) as [keyof QueueDefaults, string][]) {
      const value = r[column];
      if (typeof value === 'number') overrides[key] = value;
      settings[key] = typeof value === 'number' ? value : defaults[key];
    }
    return {
      name: String(r.name),
      paused: Boolean(r.paused),
      counts: {
        pending: Number(r.c_pending),
        running: Number(r.c_running),
        completed: Number(r.c_completed),
        failed: Number(r.c_failed),
        cancelled: Number(r.c_cancelled),
      },
      ready: Number(r.ready),
      expiredLeases: Number(r.expired_leases),
      oldestRunningStartedAt: (r.oldest_running as number | null) ?? null,
      oldestReadyAvailableAt: (r.oldest_ready as number | null) ?? null,
      overrides,
      settings,
      alertOverrides: parseQueueAlertThresholds(r.alert_thresholds as string | null),
      stallMs: typeof r.stall_ms === 'number' ? r.stall_ms : null,
      maxRunning: typeof r.max_running === 'number' ? r.max_running : null,
      rateLimit: typeof r.rate_max === 'number' && typeof r.rate_window_ms === 'number' ? { max: r.rate_max, windowMs: r.rate_window_ms } : null,
      rateLimitMode: r.rate_mode === 'fixed' ? 'fixed' : 'sliding',
      groupMaxRunning: typeof r.group_max_running === 'number' ? r.group_max_running : null,
      groupRateLimit: typeof r.group_rate_max === 'number' && typeof r.group_rate_window_ms === 'number' ? { max: r.group_rate_max, windowMs: r.group_rate_window_ms } : null,
      rateUsed: Number(r.rate_used ?? 0),
      rateLimitedUntil: typeof r.rate_limited_until === 'number' ? r.rate_limited_until : null,
      onLost: r.on_lost === 'hold' || r.on_lost === 'retry' ? r.on_lost : null,
      held: Number(r.held ?? 0),
      deadLetterQueue: typeof r.dead_letter_queue === 'string' ? r.dead_letter_queue : null,
      maxSnoozes: typeof r.max_snoozes === 'number' ? r.max_snoozes : null,
      indexedFields: typeof r.indexed_fields === 'string' ? (JSON.parse(r.indexed_fields) as string[]) : [],
    };
  });
}

/**
 * A queue's rate window now (`q`: the queues row): rate_used, the claims of
 * the current window, and rate_limited_until, when the next window opens
 * while this one's claims are spent (else NULL).
 */
export function rateWindowSql(q: string, now: SQL): SQL {
  const t = sql.raw(q);
  const current = sql`${t}.rate_window_start = ${now} - ${now} % ${t}.rate_window_ms`;
  const fixedUsed = sql`CASE WHEN ${current} THEN ${t}.rate_claims ELSE 0 END`;
  // Sliding: the starts of the last window; spent, claims wait until its oldest start leaves it.
  const slidingUsed = slidingRateUsedSql(sql`${t}.name`, '', sql`${t}.rate_window_ms`, now);
  const oldestStart = sql`(SELECT min(s.at) FROM rate_starts s WHERE s.queue_name = ${t}.name AND s.group_key = '' AND s.at > ${now} - ${t}.rate_window_ms)`;
  const sliding = sql`${t}.rate_mode IS NOT 'fixed'`;
  return sql`CASE WHEN ${t}.rate_max IS NULL THEN 0 WHEN ${sliding} THEN ${slidingUsed} ELSE ${fixedUsed} END AS rate_used,
      CASE WHEN ${t}.rate_max IS NULL THEN NULL
        WHEN ${sliding} THEN CASE WHEN ${slidingUsed} >= ${t}.rate_max THEN ${oldestStart} + ${t}.rate_window_ms END
        WHEN ${current} AND ${t}.rate_claims >= ${t}.rate_max THEN ${t}.rate_window_start + ${t}.rate_window_ms END AS rate_limited_until`;
}

/** The read behind a claim's rate-limit answer, for the claim's own batch (one round trip). */
export function queueRateWaitStatement(db: Db, p: { queue: string; now: Now }) {
  const now = nowSql(p.now);
  return db.all<RateWaitRow>(sql`SELECT ${rateWindowSql('q', now)}, ${now} AS now FROM queues q WHERE q.name = ${p.queue}`);
}

type RateWaitRow = { rate_limited_until: number | null; now: number };

/** queueRateWaitStatement's rows as the wait, or null when a claim may take jobs now. */
export function toRateWait(rows: readonly RateWaitRow[]): RateWait | null {
  const row = rows[0];
  if (!row || row.rate_limited_until === null) return null;
  return { until: Number(row.rate_limited_until), waitMs: Math.max(0, Number(row.rate_limited_until) - Number(row.now)) };
}
