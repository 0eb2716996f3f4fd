/**
 * A queue's settings, as an operator sets them (admin API, dashboard, CLI):
 * its overrides of the server's defaults, its limits (paused, stall,
 * max running, rate limit) and its alert thresholds. Each write creates the
 * queue's row if needed and commits in one batch with its form token and
 * audit entry (`also`), the entry's `before` read in that same transaction.
 */
import type { QueueSettingsPatch } from '../../core/wire.ts';
import { eq, sql } from 'drizzle-orm';
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core';
import type { Now } from '../../core/clock.ts';
import { parseQueueAlertThresholds, type AlertThresholds } from '../../core/alerts.ts';
import type { QueueDefaults } from '../../core/config.ts';
import { batchList, type Db } from '../db.ts';
import { alongsideFirst, auditInsert } from './audit.ts';
import { queues } from '../schema.ts';
import { nowSql } from '../sql.ts';
import { SETTING_COLUMNS } from './read.ts';
import type { Alongside } from './port-types.ts';

/** An upsert's SET value: the column as the INSERT would have written it. */
const excluded = (column: SQLiteColumn) => sql.raw(`excluded.${column.name}`);

/** Queue settings that have no server default (null: off), by their column. */
const LIMIT_COLUMNS: Record<string, string> = { onLost: 'on_lost', paused: 'paused', stallMs: 'stall_ms', maxRunning: 'max_running', rateMax: 'rate_max', rateWindowMs: 'rate_window_ms' };
Object.assign(LIMIT_COLUMNS, { rateMode: 'rate_mode', groupMaxRunning: 'group_max_running', groupRateMax: 'group_rate_max', groupRateWindowMs: 'group_rate_window_ms' });
Object.assign(LIMIT_COLUMNS, { deadLetterQueue: 'dead_letter_queue', maxSnoozes: 'max_snoozes' });

/** A queue's own alert thresholds, or undefined when no queue has that name. One row by primary key. */
export async function queueAlertThresholds(db: Db, p: { queue: string }): Promise<{ name: string; alertOverrides: Partial<AlertThresholds> } | undefined> {
  const [row] = await db.select({ name: queues.name, alert_thresholds: queues.alertThresholds }).from(queues).where(eq(queues.name, p.queue));
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
    db
      .insert(queues)
      .values({ name: p.queue, createdAt: now, updatedAt: now, alertThresholds: text })
      .onConflictDoUpdate({ target: queues.name, set: { alertThresholds: excluded(queues.alertThresholds), updatedAt: excluded(queues.updatedAt) } }),
  ]);
}

/** Creates the queue if needed and sets the given overrides (null: back to the default). */
export async function queueUpsertSettings(db: Db, p: { queue: string; patch: QueueSettingsPatch; now: Now; also?: Alongside }): Promise<void> {
  const now = nowSql(p.now);
  // rateLimit is two columns: {max, windowMs}, or null for none.
  const { rateLimit, ...rest } = p.patch;
  // So are groupRateLimit, and rateLimitMode is the column rate_mode.
  const { groupRateLimit, rateLimitMode, ...others } = rest;
  const flat: Record<string, number | boolean | string | null | undefined> = { ...others };
  if (rateLimit !== undefined) Object.assign(flat, { rateMax: rateLimit?.max ?? null, rateWindowMs: rateLimit?.windowMs ?? null });
  if (groupRateLimit !== undefined) Object.assign(flat, { groupRateMax: groupRateLimit?.max ?? null, groupRateWindowMs: groupRateLimit?.windowMs ?? null });
  if (rateLimitMode !== undefined) flat.rateMode = rateLimitMode;
  const entries = Object.keys(flat).map((key) => ({ key, column: sql.raw(LIMIT_COLUMNS[key] ?? SETTING_COLUMNS[key as keyof QueueDefaults]) }));
  const audit = p.also?.audit;
  // The fields the patch sets, as they were (null: the server's default; no queue row yet: all null), read in this transaction.
  const was = entries.map((e) => (e.key === 'paused' ? sql`${e.key}, json(CASE WHEN q.paused THEN 'true' ELSE 'false' END)` : sql`${e.key}, q.${e.column}`));
  const before = sql`coalesce((SELECT json_object(${sql.join(was, sql`, `)}) FROM queues q WHERE q.name = ${p.queue}),
    json_object(${sql.join(entries.map((e) => (e.key === 'paused' ? sql`${e.key}, json('false')` : sql`${e.key}, NULL`)), sql`, `)}))`;
  // The patch goes in both branches: a new queue row carries it too. Its keys are the schema's property names.
  const patch = flat as Partial<typeof queues.$inferInsert>;
  const sets = Object.fromEntries(Object.keys(patch).map((key) => [key, excluded(queues[key as keyof typeof patch] as SQLiteColumn)]));
  await batchList(db, [
    ...alongsideFirst(db, p.also),
    ...(audit && entries.length > 0 ? [auditInsert(db, { ...audit, before, after: JSON.stringify(p.patch) })] : []),
    db
      .insert(queues)
      .values({ name: p.queue, createdAt: now, updatedAt: now, ...patch })
      .onConflictDoUpdate({ target: queues.name, set: { ...sets, updatedAt: excluded(queues.updatedAt) } }),
  ]);
}
