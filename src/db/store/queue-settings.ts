/**
 * A queue's settings, as an operator sets them (admin API, dashboard, CLI):
 * its overrides of the server's defaults, its limits (paused, stall,
 * max running, rate limit) and its alert thresholds. Each write creates the
 * queue's row if needed and commits in one batch with its form token and
 * audit entry (`also`), the entry's `before` read in that same transaction.
 */
import type { QueueSettingsPatch } from '../../core/wire.ts';
import { sql } from 'drizzle-orm';
import type { Now } from '../../core/clock.ts';
import { parseQueueAlertThresholds, type AlertThresholds } from '../../core/alerts.ts';
import type { QueueDefaults } from '../../core/config.ts';
import { batchList, type Db } from '../db.ts';
import { alongsideFirst, auditInsert } from './audit.ts';
import { nowSql } from '../sql.ts';
import { SETTING_COLUMNS } from './read.ts';
import type { Alongside } from './port-types.ts';

/** Queue settings that have no server default (null: off), by their column. */
const LIMIT_COLUMNS: Record<string, string> = { paused: 'paused', stallMs: 'stall_ms', maxRunning: 'max_running', rateMax: 'rate_max', rateWindowMs: 'rate_window_ms' };

/** A queue's own alert thresholds, or undefined when no queue has that name. One row by primary key. */
export async function queueAlertThresholds(db: Db, p: { queue: string }): Promise<{ name: string; alertOverrides: Partial<AlertThresholds> } | undefined> {
  const [row] = await db.all<{ name: string; alert_thresholds: string | null }>(sql`SELECT name, alert_thresholds FROM queues WHERE name = ${p.queue}`);
  return row && { name: row.name, alertOverrides: parseQueueAlertThresholds(row.alert_thresholds) };
}

/** Creates the queue if needed and replaces its alert threshold overrides ({}: the server's for all). */
export async function queueSetAlertThresholds(db: Db, p: { queue: string; thresholds: Partial<AlertThresholds>; now: Now; also?: Alongside }): Promise<void> {
  const now = nowSql(p.now);
  const text = Object.keys(p.thresholds).length === 0 ? null : JSON.stringify(p.thresholds);
  const audit = p.also?.audit;
  await batchList(db, [
    ...alongsideFirst(db, p.also),
    // Before the change, so `before` is read in the transaction that replaces it.
    ...(audit ? [auditInsert(db, { ...audit, before: sql`coalesce((SELECT alert_thresholds FROM queues WHERE name = ${p.queue}), '{}')`, after: text ?? '{}' })] : []),
    db.run(sql`INSERT INTO queues (name, created_at, updated_at, alert_thresholds) VALUES (${p.queue}, ${now}, ${now}, ${text})
      ON CONFLICT (name) DO UPDATE SET alert_thresholds = excluded.alert_thresholds, updated_at = excluded.updated_at`),
  ]);
}

/** Creates the queue if needed and sets the given overrides (null: back to the default). */
export async function queueUpsertSettings(db: Db, p: { queue: string; patch: QueueSettingsPatch; now: Now; also?: Alongside }): Promise<void> {
  const now = nowSql(p.now);
  // rateLimit is two columns: {max, windowMs}, or null for none.
  const { rateLimit, ...rest } = p.patch;
  const flat: Record<string, number | boolean | null | undefined> = { ...rest };
  if (rateLimit !== undefined) Object.assign(flat, { rateMax: rateLimit?.max ?? null, rateWindowMs: rateLimit?.windowMs ?? null });
  const entries = Object.entries(flat).map(([key, value]) => ({
    key,
    column: sql.raw(LIMIT_COLUMNS[key] ?? SETTING_COLUMNS[key as keyof QueueDefaults]),
    value: typeof value === 'boolean' ? (value ? 1 : 0) : value,
  }));
  const audit = p.also?.audit;
  // The fields the patch sets, as they were (null: the server's default; no queue row yet: all null), read in this transaction.
  const was = entries.map((e) => (e.key === 'paused' ? sql`${e.key}, json(CASE WHEN q.paused THEN 'true' ELSE 'false' END)` : sql`${e.key}, q.${e.column}`));
  const before = sql`coalesce((SELECT json_object(${sql.join(was, sql`, `)}) FROM queues q WHERE q.name = ${p.queue}),
    json_object(${sql.join(entries.map((e) => (e.key === 'paused' ? sql`${e.key}, json('false')` : sql`${e.key}, NULL`)), sql`, `)}))`;
  // The patch goes in both branches: a new queue row carries it too.
  const columns = entries.map((e) => sql`, ${e.column}`);
  const values = entries.map((e) => sql`, ${e.value}`);
  const sets = entries.map((e) => sql`${e.column} = excluded.${e.column}`);
  await batchList(db, [
    ...alongsideFirst(db, p.also),
    ...(audit && entries.length > 0 ? [auditInsert(db, { ...audit, before, after: JSON.stringify(p.patch) })] : []),
    db.run(sql`INSERT INTO queues (name, created_at, updated_at ${sql.join(columns, sql``)})
      VALUES (${p.queue}, ${now}, ${now} ${sql.join(values, sql``)})
      ON CONFLICT (name) DO UPDATE SET ${sql.join([...sets, sql`updated_at = excluded.updated_at`], sql`, `)}`),
  ]);
}

