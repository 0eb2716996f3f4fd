/** SQL fragments every store file shares: the clock, tokens, backoff, queue settings. */
import { sql, type SQL } from 'drizzle-orm';
import { DB_CLOCK, type Now } from '../core/clock.ts';
import type { QueueDefaults } from '../core/config.ts';

/**
 * "Now" inside a statement, in epoch ms. On the database clock this is the
 * database's time, stable for the whole statement; otherwise the fixed value.
 * `julianday` works on every SQLite; `unixepoch('subsec')` needs 3.42+.
 */
export function nowSql(now: Now): SQL {
  return now === DB_CLOCK ? sql`CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)` : sql`${now}`;
}

/**
 * The size in bytes of a text or blob column (NULL stays NULL), as raw SQL
 * for `column`. Not octet_length, which needs SQLite 3.43 (libSQL servers and
 * distributions run older ones: src/db/sqlite-version.ts): the cast reads the
 * value where octet_length reads only the row's header, about 2 us more per
 * 20 KB value, paid only for the rows a claim or a wait looks at.
 */
export const byteLengthSql = (column: string): string => `length(CAST(${column} AS BLOB))`;

/** A fresh 128-bit lock token, made by the database per row. */
export const newLockTokenSql = sql`lower(hex(randomblob(16)))`;

type QueueColumn = 'lease_ms' | 'heartbeat_ms' | 'grace_ms' | 'max_attempts' | 'max_lost_attempts' | 'backoff_base_ms' | 'backoff_max_ms' | 'retention_ms' | 'timeout_ms';

/** A queue's override of a setting, or the server default, for the queue named by `queueExpr`. */
export function queueSettingSql(column: QueueColumn, queueExpr: SQL, fallback: number): SQL {
  return sql`coalesce((SELECT q.${sql.raw(column)} FROM queues q WHERE q.name = ${queueExpr}), ${fallback})`;
}

/**
 * Jittered exponential backoff after `attempt` attempts, as in
 * src/core/backoff.ts: ceiling = min(max, base * 2^(attempt-1)); the delay is
 * ceiling/2 plus a random part of up to ceiling/2.
 */
export function backoffSql(attempt: SQL, queueExpr: SQL, d: QueueDefaults): SQL {
  const base = queueSettingSql('backoff_base_ms', queueExpr, d.backoffBaseMs);
  const max = queueSettingSql('backoff_max_ms', queueExpr, d.backoffMaxMs);
  const ceiling = sql`min(${max}, ${base} * (1 << min(max(${attempt} - 1, 0), 30)))`;
  return sql`(${ceiling} / 2 + abs(random() % (${ceiling} - ${ceiling} / 2 + 1)))`;
}

/** Columns that leave the running state: no token, no owner, no lease. */
export const CLEAR_LEASE = sql`lock_token = NULL, locked_by = NULL, locked_by_instance = NULL, lease_expires_at = NULL, lease_ms = NULL`;

/** JSON text for a column, or NULL. */
export const jsonOrNull = (value: unknown) => (value === undefined ? null : JSON.stringify(value));
