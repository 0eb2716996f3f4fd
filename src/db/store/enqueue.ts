/**
 * Enqueue: — -> pending.
 *
 * Writes no event (drizzle/0015): the timeline derives `enqueued` from the
 * row (created_at, enqueued_by), and a trigger counts it.
 *
 * Precondition: none, except that an idempotency key is unique per queue:
 * among the kept jobs enqueued with uniqueWhile 'retained' (the default), and
 * among the pending and running jobs of both windows (drizzle/0012, 0036).
 * Postcondition: one new pending job per input, or, for a key already taken
 * in the queue, the existing job untouched but for its dedup counter (which
 * writes a `deduplicated` event). With uniqueWhile 'active', a key whose jobs
 * have all finished makes a new job. Up to ENQUEUE_CHUNK jobs go in one batch:
 * all or none. A larger bulk goes in chunks of ENQUEUE_CHUNK, each all or none,
 * in input order, with the event loop free between them (see jobsInsert).
 * A chunk with key modes (replace, debounce, throttle) goes through
 * chunkInsertKeyed and src/db/store/enqueue-keyed.ts; a chunk without them
 * runs the one statement below, as it always did.
 */
import { sql, type SQL } from 'drizzle-orm';
import { LeaseholdError, requireStorableText } from '../../core/errors.ts';
import type { BatchItem } from 'drizzle-orm/batch';
import { batchList, ENQUEUE_CHUNK, type Db } from '../db.ts';
import { nowSql, queueSettingSql } from '../sql.ts';
import { queueAdmitsSql, queuesInUseCountSql } from './queue-use.ts';
import type { JobRecord } from '../../core/job-record.ts';
import type { ClaimsAfterInsert, EnqueueParams, Enqueued, NewJob } from './port-types.ts';
import { EnqueuePartlyStored } from './port.ts';
import { jobsUpsertUnclaimedKey, jobThrottleStatements } from './enqueue-keyed.ts';
import { claimWithRateWaitAnswer, claimWithRateWaitStatements } from './claim.ts';

/** The columns a bulk answer needs: enough to name each job, without echoing payloads. */
export const SUMMARY_COLUMNS = sql`id, queue_name, status, priority, available_at, created_at, idempotency_key, dedup_count, replaced_count`;

/** A duplicate key: the existing job keeps everything but counts the hit (one per conflict target, drizzle/0012; a schedule's occurrence, drizzle/0021). */
export const dedupHit = sql`dedup_count = dedup_count + 1, last_event = 'deduplicated', last_event_reason = NULL,
        last_event_actor = excluded.last_event_actor, updated_at = excluded.updated_at`;

/**
 * jobsInsert, each job returned with SUMMARY_COLUMNS only (a bulk answer's
 * fields): a large batch's payloads are not read back.
 */
export function jobsInsertSummaries(db: Db, p: Omit<EnqueueParams, 'columns'>): Promise<Enqueued[]> {
  return jobsInsert(db, { ...p, columns: SUMMARY_COLUMNS });
}

/** Lets timers and other requests run between chunks (setTimeout: every runtime has it). */
const yieldToEventLoop = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

/**
 * All the jobs travel as one JSON parameter and are expanded by json_each in
 * one INSERT ... SELECT: "now" and the queue's defaults are computed once, the
 * statement text is the same for every batch size (so it stays prepared), and
 * the row count is not bounded by SQLite's parameter limit. Measured: a
 * VALUES list with ten parameters per row was several times slower.
 */
export async function jobsInsert(db: Db, p: EnqueueParams): Promise<Enqueued[]> {
  // Keys travel inside JSON and come out through ->>, which would turn a lone
  // surrogate into bytes that crash libSQL on the way back (src/core/text.ts).
  // Every job is checked before the first chunk is written: a bad one anywhere
  // in the bulk stores nothing.
  requireStorableText(p.queue, 'queue');
  p.jobs.forEach((j, i) => j.idempotencyKey !== undefined && requireStorableText(j.idempotencyKey, p.jobs.length > 1 ? `jobs[${i}].idempotencyKey` : 'idempotencyKey'));
  p.jobs.forEach((j, i) => j.group !== undefined && requireStorableText(j.group, p.jobs.length > 1 ? `jobs[${i}].group` : 'group'));
  if (p.jobs.length <= ENQUEUE_CHUNK) return chunkInsert(db, p, p.jobs);
  // Larger bulks: one chunk at a time, in input order, each all or none. A
  // storage fault part-way leaves the chunks before it stored (the error says
  // how many); idempotency keys make sending the bulk again safe. What a
  // caller can get wrong (a bad job, a new queue past the cap) is refused by
  // the checks above and the first chunk, before anything is stored.
  const out: Enqueued[] = [];
  for (let start = 0; start < p.jobs.length; start += ENQUEUE_CHUNK) {
    if (start > 0) await yieldToEventLoop();
    try {
      // The waiting claims ride on the first chunk: its jobs are claimable as soon as it commits.
      out.push(...(await chunkInsert(db, start === 0 ? p : { ...p, thenClaim: undefined }, p.jobs.slice(start, start + ENQUEUE_CHUNK))));
    } catch (err) {
      throw start === 0 ? err : new EnqueuePartlyStored(start, p.jobs.length, err);
    }
  }
  return out;
}

/**
 * The first statement of an enqueue's batch: a new queue row only while
 * fewer than maxQueues queues are in use (src/db/store/queue-use.ts; counted
 * only when the row is new: CASE evaluates lazily). The jobs that follow go
 * only where queueAdmitsSql lets them (queueJobsGuard), so past the cap they
 * insert nothing, and an empty row left from before counts as a new queue.
 */
export function queueInsertWithinCap(db: Db, queue: string, now: SQL, maxQueues: number | undefined) {
  return db.run(sql`INSERT INTO queues (name, created_at, updated_at) SELECT ${queue}, ${now}, ${now}
      WHERE CASE WHEN EXISTS (SELECT 1 FROM queues WHERE name = ${queue}) THEN 0 ELSE ${maxQueues === undefined ? sql`1` : sql`${queuesInUseCountSql} < ${maxQueues}`} END
      ON CONFLICT (name) DO NOTHING`);
}

/**
 * The jobs statement's guard: the queue's row exists (the statement before
 * made it, within the cap) and the queue is in use or there is room for one
 * more. Read in the same statement that inserts, so the check and the write
 * are one step on the database's single writer, whichever server sends them.
 */
export function queueJobsGuard(queue: string, maxQueues: number | undefined): SQL {
  return sql`EXISTS (SELECT 1 FROM queues WHERE name = ${queue}) AND ${queueAdmitsSql(queue, maxQueues)}`;
}

/** The refusal when a new queue would pass the cap (nothing was stored). */
export function queueCapReached(queue: string, maxQueues: number | undefined) {
  return new LeaseholdError(
    'conflict',
    `there is no queue named ${JSON.stringify(queue)} in use and leasehold already has ${maxQueues} queues (LEASEHOLD_MAX_QUEUES) holding jobs, settings or schedules: enqueue to an existing queue, delete an unused one (DELETE /api/v1/queues/:queue), or raise the limit; nothing was stored`,
    'queue',
  );
}

/** One batch: the queue (within the cap), then the jobs, all or none. */
async function chunkInsert(db: Db, p: EnqueueParams, jobs: readonly NewJob[]): Promise<Enqueued[]> {
  if (jobs.some(hasKeyMode)) return chunkInsertKeyed(db, p, jobs);
  const now = nowSql(p.now);
  const [, inserted] = await batchThenClaims(db, [queueInsertWithinCap(db, p.queue, now, p.maxQueues), plainStatement(db, p, jobs, now)], p.thenClaim);
  if ((inserted as JobRecord[]).length === 0 && jobs.length > 0) throw queueCapReached(p.queue, p.maxQueues);
  // A fresh row always has dedup_count 0; a conflict returns the old row with the counter bumped.
  return (inserted as JobRecord[]).map((job) => ({ job, deduplicated: job.dedup_count > 0, replaced: false }));
}

/** The jobs without a key mode: inserted, or their key's job answered with its dedup counter bumped. */
function plainStatement(db: Db, p: EnqueueParams, jobs: readonly NewJob[], now: SQL) {
  // A field the job leaves out stays out of its row (JSON.stringify drops
  // undefined): a missing key reads as NULL and the statement supplies the
  // defaults. A plain job's row is then {"p":...} alone, not ~110 bytes of
  // nulls that json_each and every ->> below would parse again per row.
  const rows = JSON.stringify(
    jobs.map((j) => ({ p: j.payload, k: j.idempotencyKey, pr: j.priority, d: j.delayMs, r: j.runAt, m: j.maxAttempts, t: j.timeoutMs, u: j.uniqueWhile, tp: j.traceparent, ts: j.tracestate, ol: j.onLost, g: j.group })),
  );
  const maxAttemptsDefault = queueSettingSql('max_attempts', sql`${p.queue}`, p.defaults.maxAttempts);
  // RETURNING yields rows in the order they were inserted or deduplicated
  // (ORDER BY the array index), each with the values it had at that moment.
  return db.all<JobRecord>(sql`WITH clock(now) AS (SELECT ${now}), queue_default(max_attempts) AS (SELECT ${maxAttemptsDefault})
      INSERT INTO jobs (queue_name, payload, priority, max_attempts, available_at, idempotency_key, unique_while, timeout_ms, trace_parent, trace_state, on_lost, group_key, last_event_actor, enqueued_by, created_at, updated_at)
      SELECT ${p.queue}, j.value -> '$.p', coalesce(j.value ->> '$.pr', 0),
        coalesce(j.value ->> '$.m', (SELECT max_attempts FROM queue_default)),
        coalesce(j.value ->> '$.r', (SELECT now FROM clock) + coalesce(j.value ->> '$.d', 0)),
        j.value ->> '$.k', coalesce(j.value ->> '$.u', 'retained'), j.value ->> '$.t', j.value ->> '$.tp', j.value ->> '$.ts', j.value ->> '$.ol', j.value ->> '$.g', ${p.actor}, ${p.actor}, (SELECT now FROM clock), (SELECT now FROM clock)
      FROM json_each(${rows}) AS j WHERE ${queueJobsGuard(p.queue, p.maxQueues)} ORDER BY j.key
      ON CONFLICT (queue_name, idempotency_key) WHERE idempotency_key IS NOT NULL AND unique_while = 'retained'
      DO UPDATE SET ${dedupHit}
      ON CONFLICT (queue_name, idempotency_key) WHERE idempotency_key IS NOT NULL AND status IN ('pending', 'running') AND key_mode IS NULL
      DO UPDATE SET ${dedupHit}
      RETURNING ${p.columns ?? sql`*`}`);
}

const hasKeyMode = (j: NewJob) => j.uniqueWhile === 'replace' || j.uniqueWhile === 'debounce' || j.uniqueWhile === 'throttle';

/**
 * A chunk with key modes (src/db/store/enqueue-keyed.ts): one batch of the
 * queue row, the plain jobs' statement, one upsert for the replace and
 * debounce jobs, and two statements per throttle job. Each family finds only
 * its own jobs by key (the plain ones through jobs_idempotency_key_idx and
 * jobs_active_key_idx, replace and debounce through jobs_unclaimed_key_idx,
 * throttle by key_mode), so running the families one after another keeps
 * every job's input order where it matters: among the jobs of its key.
 */
async function chunkInsertKeyed(db: Db, p: EnqueueParams, jobs: readonly NewJob[]): Promise<Enqueued[]> {
  const now = nowSql(p.now);
  const columns = p.columns ?? sql`*`;
  const guard = queueJobsGuard(p.queue, p.maxQueues);
  const plain: number[] = [];
  const unclaimed: number[] = [];
  const throttled: number[] = [];
  jobs.forEach((j, i) => (j.uniqueWhile === 'throttle' ? throttled : j.uniqueWhile === 'replace' || j.uniqueWhile === 'debounce' ? unclaimed : plain).push(i));
  // Each entry: the input positions a statement answers, in its RETURNING
  // order, and what a returned row says: a fresh row has both counters at 0.
  type Answer = (job: JobRecord) => Enqueued;
  const deduplicatedIfCounted: Answer = (job) => ({ job, deduplicated: job.dedup_count > 0, replaced: false });
  const replacedIfCounted: Answer = (job) => ({ job, deduplicated: false, replaced: job.replaced_count > 0 });
  const steps: { at: number[]; answer: Answer; statement: BatchItem<'sqlite'> }[] = [];
  if (plain.length > 0) steps.push({ at: plain, answer: deduplicatedIfCounted, statement: plainStatement(db, { ...p, columns }, plain.map((i) => jobs[i]!), now) });
  if (unclaimed.length > 0) steps.push({ at: unclaimed, answer: replacedIfCounted, statement: jobsUpsertUnclaimedKey(db, p, unclaimed.map((i) => jobs[i]!), now, guard, columns) });
  for (const i of throttled) {
    for (const statement of jobThrottleStatements(db, p, jobs[i]!, now, guard, columns)) steps.push({ at: [i], answer: deduplicatedIfCounted, statement });
  }
  const results = await batchThenClaims(db, [queueInsertWithinCap(db, p.queue, now, p.maxQueues), ...steps.map((s) => s.statement)], p.thenClaim);
  const out: (Enqueued | undefined)[] = jobs.map(() => undefined);
  steps.forEach((step, n) => (results[n + 1] as JobRecord[]).forEach((job, k) => (out[step.at[k]!] = step.answer(job))));
  // Every statement answers each of its jobs unless the queue guard refused them all.
  if (out.some((e) => e === undefined)) throw queueCapReached(p.queue, p.maxQueues);
  return out as Enqueued[];
}

/**
 * Runs `statements`, then the statements of each claim in `thenClaim`, as
 * one batch (one transaction). The claims get their answers as soon as it
 * commits, before the enqueue reads its own (which may still refuse it);
 * the answer is the results of `statements`.
 */
async function batchThenClaims(db: Db, statements: BatchItem<'sqlite'>[], thenClaim: ClaimsAfterInsert | undefined): Promise<unknown[]> {
  const claims = thenClaim?.claims.map((c) => claimWithRateWaitStatements(db, c)) ?? [];
  const results = await batchList(db, [...statements, ...claims.flat()]);
  if (thenClaim) {
    let at = statements.length;
    thenClaim.claimed(claims.map((c) => claimWithRateWaitAnswer(results.slice(at, (at += c.length)))));
  }
  return results.slice(0, statements.length);
}
