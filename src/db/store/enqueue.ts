/**
 * Enqueue: — -> pending.
 *
 * Precondition: none, except that an idempotency key is unique per queue.
 * Postcondition: one new pending job per input, or, for a key already present
 * in the queue, the existing job untouched but for its dedup counter (which
 * writes a `deduplicated` event). Many jobs go in one batch: all or none.
 */
import { sql } from 'drizzle-orm';
import type { Now } from '../../core/clock.js';
import type { QueueDefaults } from '../../core/config.js';
import { batchList, type Db } from '../db.js';
import { nowSql, queueSettingSql } from '../sql.js';
import type { JobRecord } from './record.js';

export interface NewJob {
  payload: unknown;
  idempotencyKey?: string | undefined;
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
}

export interface Enqueued {
  job: JobRecord;
  deduplicated: boolean;
}

/** Rows per INSERT: 10 parameters a row stays well under SQLite's 32,766. */
const ROWS_PER_STATEMENT = 1_000;

export async function jobsInsert(db: Db, p: EnqueueParams): Promise<Enqueued[]> {
  const now = nowSql(p.now);
  const queue = sql`${p.queue}`;
  const maxAttemptsDefault = queueSettingSql('max_attempts', queue, p.defaults.maxAttempts);
  const createQueue = db.run(
    sql`INSERT INTO queues (name, created_at, updated_at) VALUES (${p.queue}, ${now}, ${now}) ON CONFLICT (name) DO NOTHING`,
  );
  const inserts = [];
  for (let i = 0; i < p.jobs.length; i += ROWS_PER_STATEMENT) {
    const rows = p.jobs.slice(i, i + ROWS_PER_STATEMENT).map((j) => {
      const availableAt = j.runAt !== undefined ? sql`${j.runAt}` : sql`${now} + ${j.delayMs ?? 0}`;
      return sql`(${p.queue}, ${JSON.stringify(j.payload)}, ${j.priority ?? 0}, coalesce(${j.maxAttempts ?? null}, ${maxAttemptsDefault}), ${availableAt}, ${j.idempotencyKey ?? null}, ${j.timeoutMs ?? null}, ${p.actor}, ${now}, ${now})`;
    });
    // RETURNING yields rows in the order they were inserted or deduplicated,
    // each with the values it had at that moment, so rows line up with inputs.
    inserts.push(
      db.all<JobRecord>(sql`INSERT INTO jobs (queue_name, payload, priority, max_attempts, available_at, idempotency_key, timeout_ms, last_event_actor, created_at, updated_at)
        VALUES ${sql.join(rows, sql`, `)}
        ON CONFLICT (queue_name, idempotency_key) WHERE idempotency_key IS NOT NULL
        DO UPDATE SET dedup_count = dedup_count + 1, last_event = 'deduplicated', last_event_reason = NULL,
          last_event_actor = excluded.last_event_actor, updated_at = excluded.updated_at
        RETURNING *`),
    );
  }
  const results = await batchList(db, [createQueue, ...inserts]);
  // A fresh row always has dedup_count 0; a conflict returns the old row with the counter bumped.
  return results.slice(1).flatMap((rows) => (rows as JobRecord[]).map((job) => ({ job, deduplicated: job.dedup_count > 0 })));
}
