/**
 * Enqueue: — -> pending.
 *
 * Precondition: none, except that an idempotency key is unique per queue:
 * among the kept jobs enqueued with uniqueWhile 'retained' (the default), and
 * among the pending and running jobs whatever their mode (drizzle/0012).
 * Postcondition: one new pending job per input, or, for a key already taken
 * in the queue, the existing job untouched but for its dedup counter (which
 * writes a `deduplicated` event). With uniqueWhile 'active', a key whose jobs
 * have all finished makes a new job. Many jobs go in one batch: all or none.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { Now } from '../../core/clock.ts';
import type { QueueDefaults } from '../../core/config.ts';
import { LeaseholdError, requireStorableText } from '../../core/errors.ts';
import type { UniqueWhile } from '../../core/wire.ts';
import type { Db } from '../db.ts';
import { nowSql, queueSettingSql } from '../sql.ts';
import type { JobRecord } from './record.ts';

export interface NewJob {
  payload: unknown;
  idempotencyKey?: string | undefined;
  /** How long the key deduplicates: 'retained' (default) or 'active'. */
  uniqueWhile?: UniqueWhile | undefined;
  priority?: number | undefined;
  /** Run no earlier than this many ms from now... */
  delayMs?: number | undefined;
  /** ...or no earlier than this epoch ms. */
  runAt?: number | undefined;
  maxAttempts?: number | undefined;
  timeoutMs?: number | undefined;
}

export interface EnqueueParams {
  queue: string;
  jobs: readonly NewJob[];
  actor: string | null;
  now: Now;
  defaults: QueueDefaults;
  /** Columns to return (must include dedup_count); every column by default. */
  columns?: SQL;
  /** Most queues there may be: a new queue past it is refused (409), nothing stored. */
  maxQueues?: number;
}

/** The columns a bulk answer needs: enough to name each job, without echoing payloads. */
export const SUMMARY_COLUMNS = sql`id, queue_name, status, priority, available_at, idempotency_key, dedup_count`;

/** A duplicate key: the existing job keeps everything but counts the hit (one per conflict target, drizzle/0012). */
const dedupHit = sql`dedup_count = dedup_count + 1, last_event = 'deduplicated', last_event_reason = NULL,
        last_event_actor = excluded.last_event_actor, updated_at = excluded.updated_at`;

export interface Enqueued {
  job: JobRecord;
  deduplicated: boolean;
}

/**
 * All the jobs travel as one JSON parameter and are expanded by json_each in
 * one INSERT ... SELECT: "now" and the queue's defaults are computed once, the
 * statement text is the same for every batch size (so it stays prepared), and
 * the row count is not bounded by SQLite's parameter limit. Measured: a
 * VALUES list with ten parameters per row was several times slower.
 */
export async function jobsInsert(db: Db, p: EnqueueParams): Promise<Enqueued[]> {
  const now = nowSql(p.now);
  // Keys travel inside JSON and come out through ->>, which would turn a lone
  // surrogate into bytes that crash libSQL on the way back (src/core/text.ts).
  requireStorableText(p.queue, 'queue');
  p.jobs.forEach((j, i) => j.idempotencyKey !== undefined && requireStorableText(j.idempotencyKey, p.jobs.length > 1 ? `jobs[${i}].idempotencyKey` : 'idempotencyKey'));
  const rows = JSON.stringify(
    p.jobs.map((j) => ({ p: j.payload, k: j.idempotencyKey ?? null, pr: j.priority ?? 0, d: j.delayMs ?? 0, r: j.runAt ?? null, m: j.maxAttempts ?? null, t: j.timeoutMs ?? null, u: j.uniqueWhile ?? 'retained' })),
  );
  const maxAttemptsDefault = queueSettingSql('max_attempts', sql`${p.queue}`, p.defaults.maxAttempts);
  const [, inserted] = await db.batch([
    // A new queue only while there are fewer than maxQueues (counted only when
    // the queue is new: CASE evaluates lazily); jobs only into a queue that exists.
    db.run(sql`INSERT INTO queues (name, created_at, updated_at) SELECT ${p.queue}, ${now}, ${now}
      WHERE CASE WHEN EXISTS (SELECT 1 FROM queues WHERE name = ${p.queue}) THEN 0 ELSE ${p.maxQueues === undefined ? sql`1` : sql`(SELECT count(*) FROM queues) < ${p.maxQueues}`} END
      ON CONFLICT (name) DO NOTHING`),
    // RETURNING yields rows in the order they were inserted or deduplicated
    // (ORDER BY the array index), each with the values it had at that moment.
    db.all<JobRecord>(sql`WITH clock(now) AS (SELECT ${now}), queue_default(max_attempts) AS (SELECT ${maxAttemptsDefault})
      INSERT INTO jobs (queue_name, payload, priority, max_attempts, available_at, idempotency_key, unique_while, timeout_ms, last_event_actor, created_at, updated_at)
      SELECT ${p.queue}, j.value -> '$.p', j.value ->> '$.pr',
        coalesce(j.value ->> '$.m', (SELECT max_attempts FROM queue_default)),
        coalesce(j.value ->> '$.r', (SELECT now FROM clock) + (j.value ->> '$.d')),
        j.value ->> '$.k', j.value ->> '$.u', j.value ->> '$.t', ${p.actor}, (SELECT now FROM clock), (SELECT now FROM clock)
      FROM json_each(${rows}) AS j WHERE EXISTS (SELECT 1 FROM queues WHERE name = ${p.queue}) ORDER BY j.key
      ON CONFLICT (queue_name, idempotency_key) WHERE idempotency_key IS NOT NULL AND unique_while = 'retained'
      DO UPDATE SET ${dedupHit}
      ON CONFLICT (queue_name, idempotency_key) WHERE idempotency_key IS NOT NULL AND status IN ('pending', 'running')
      DO UPDATE SET ${dedupHit}
      RETURNING ${p.columns ?? sql`*`}`),
  ]);
  if ((inserted as JobRecord[]).length === 0 && p.jobs.length > 0) {
    throw new LeaseholdError(
      'conflict',
      `there is no queue named ${JSON.stringify(p.queue)} and leasehold already has ${p.maxQueues} queues (LEASEHOLD_MAX_QUEUES): enqueue to an existing queue, or raise the limit; nothing was stored`,
      'queue',
    );
  }
  // A fresh row always has dedup_count 0; a conflict returns the old row with the counter bumped.
  return (inserted as JobRecord[]).map((job) => ({ job, deduplicated: job.dedup_count > 0 }));
}
