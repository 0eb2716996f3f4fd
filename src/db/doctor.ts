/**
 * What `leasehold doctor` reads from the database: its integrity, which
 * migrations it has, its size, and the running jobs whose lease or deadline
 * passed. Read-only: nothing here writes.
 */
import { sql } from 'drizzle-orm';
import type { Db } from './db.ts';
import type { Now } from '../core/clock.ts';
import { nowSql } from './sql.ts';
import { storageFault } from './storage-fault.ts';

/** `ok`, or the first problems SQLite found (at most `limit`). */
export async function integrityProblems(db: Db, p: { full: boolean; limit: number }): Promise<string[]> {
  let rows: Record<string, string>[];
  try {
    rows = await db.all<Record<string, string>>(sql.raw(`PRAGMA ${p.full ? 'integrity_check' : 'quick_check'}(${p.limit})`));
  } catch (err) {
    // Damage bad enough that the check itself cannot read a page is a finding too.
    const fault = storageFault(err);
    if (fault) return [`${fault.message} (${fault.sqliteCode})`];
    throw err;
  }
  // One finding per line, without SQLite's "*** in database main ***" heading.
  const messages = rows.flatMap((r) => String(Object.values(r)[0]).split('\n')).filter((m) => m !== '' && !m.startsWith('*** in database'));
  return messages.length === 1 && messages[0] === 'ok' ? [] : messages;
}

/** The `when` of every migration this database has applied (drizzle's bookkeeping), oldest first. */
export async function appliedMigrations(db: Db): Promise<number[]> {
  const table = await db.all<{ n: number }>(sql`SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = '__drizzle_migrations'`);
  if (!table[0]?.n) return [];
  const rows = await db.all<{ created_at: number }>(sql`SELECT created_at FROM __drizzle_migrations ORDER BY created_at`);
  return rows.map((r) => Number(r.created_at));
}

export interface PageCounts {
  pageSize: number;
  pages: number;
  freePages: number;
}

export async function pageCounts(db: Db): Promise<PageCounts> {
  const [size] = await db.all<{ page_size: number }>(sql`PRAGMA page_size`);
  const [count] = await db.all<{ page_count: number }>(sql`PRAGMA page_count`);
  const [free] = await db.all<{ freelist_count: number }>(sql`PRAGMA freelist_count`);
  return { pageSize: Number(size?.page_size), pages: Number(count?.page_count), freePages: Number(free?.freelist_count) };
}

export interface StuckLeases {
  queue: string;
  running: number;
  /** Running jobs whose lease expired more than the queue's grace ago: the reaper's to take. */
  pastGrace: number;
  /** When the oldest of them expired. */
  oldestExpiredAt: number | null;
  /** Running jobs past their hard deadline. */
  pastDeadline: number;
}

/** Per queue with running jobs: how many look stuck. Uses the running-jobs index. */
export async function stuckLeases(db: Db, p: { now: Now; defaultGraceMs: number }): Promise<StuckLeases[]> {
  const now = nowSql(p.now);
  const rows = await db.all<{ queue: string; running: number; past_grace: number; oldest_expired_at: number | null; past_deadline: number }>(sql`
    SELECT j.queue_name AS queue, count(*) AS running,
      sum(j.lease_expires_at + coalesce(q.grace_ms, ${p.defaultGraceMs}) < ${now}) AS past_grace,
      min(CASE WHEN j.lease_expires_at + coalesce(q.grace_ms, ${p.defaultGraceMs}) < ${now} THEN j.lease_expires_at END) AS oldest_expired_at,
      sum(coalesce(j.deadline_at < ${now}, 0)) AS past_deadline
    FROM jobs j INDEXED BY jobs_lease_expiry_idx LEFT JOIN queues q ON q.name = j.queue_name
    WHERE j.status = 'running' GROUP BY j.queue_name ORDER BY j.queue_name`);
  return rows.map((r) => ({ queue: r.queue, running: Number(r.running), pastGrace: Number(r.past_grace), oldestExpiredAt: r.oldest_expired_at, pastDeadline: Number(r.past_deadline) }));
}
