/**
 * The reaper's hold (drizzle/0018): one row for the whole database saying
 * until when expired leases wait for their owners after a server's gap.
 *
 * - begin: written by whoever notices the gap (a server that starts, a server
 *   whose own reaper did not tick for longer than its interval plus a
 *   heartbeat), `hold_until = now + holdMs` on the database clock, in one
 *   upsert whose WHERE keeps the later end: two servers noticing gaps at once
 *   hold until the later of the two, with that one's cause.
 * - read: the hold in force at `now`, or null.
 * - columns / guard: the hold is read with every reap candidate (the reaper's
 *   read, the operator's requeue, the dashboard's rows), so decideReap
 *   (src/core/reaper.ts) judges it with the row it decides on; and every take
 *   of an expired lease restates "no hold in force" in its WHERE, so a hold
 *   begun between a read and its write still wins.
 *
 * Nothing deletes the row: a hold that ended is simply not in force.
 */
import { and, eq, gt, sql, type SQL } from 'drizzle-orm';
import type { Now } from '../../core/clock.ts';
import type { Db } from '../db.ts';
import { reaperHold } from '../schema.ts';
import { nowSql } from '../sql.ts';
import type { ReaperHoldRecord } from './port-types.ts';

const holdColumns = { holdUntil: reaperHold.holdUntil, beganAt: reaperHold.beganAt, gapMs: reaperHold.gapMs, cause: reaperHold.cause };

/** The row as a plain record (drivers hand back their own row objects). */
const record = (r: ReaperHoldRecord): ReaperHoldRecord => ({ holdUntil: Number(r.holdUntil), beganAt: Number(r.beganAt), gapMs: r.gapMs === null ? null : Number(r.gapMs), cause: String(r.cause) });

/** Begins (or extends) the hold; returns the hold in force afterwards (the later end wins, with its cause). */
export async function reaperHoldBegin(db: Db, p: { now: Now; holdMs: number; gapMs: number | null; cause: string }): Promise<ReaperHoldRecord> {
  const now = nowSql(p.now);
  const [, rows] = await db.batch([
    db.run(sql`INSERT INTO reaper_hold (id, hold_until, began_at, gap_ms, cause) VALUES (1, ${now} + ${Math.max(0, Math.round(p.holdMs))}, ${now}, ${p.gapMs === null ? null : Math.round(p.gapMs)}, ${p.cause})
      ON CONFLICT (id) DO UPDATE SET hold_until = excluded.hold_until, began_at = excluded.began_at, gap_ms = excluded.gap_ms, cause = excluded.cause
      WHERE excluded.hold_until > reaper_hold.hold_until`),
    db.select(holdColumns).from(reaperHold).where(eq(reaperHold.id, 1)),
  ]);
  return record(rows[0]!);
}

/** The hold in force at `now` (with `now` as read: the database's clock unless given), or null. */
export async function reaperHoldRead(db: Db, p: { now: Now }): Promise<(ReaperHoldRecord & { now: number }) | null> {
  const now = nowSql(p.now);
  const [row] = await db
    .select({ ...holdColumns, now: sql<number>`${now}` })
    .from(reaperHold)
    .where(and(eq(reaperHold.id, 1), gt(reaperHold.holdUntil, now)));
  return row ? { ...record(row), now: Number(row.now) } : null;
}

/** The hold's end and cause as columns of a candidate read (decideReap's holdUntil, holdCause); one constant subquery each. */
export const reaperHoldColumns = (names: { until: string; cause: string } = { until: 'holdUntil', cause: 'holdCause' }): SQL =>
  sql`(SELECT hold_until FROM reaper_hold WHERE id = 1) AS ${sql.identifier(names.until)}, (SELECT cause FROM reaper_hold WHERE id = 1) AS ${sql.identifier(names.cause)}`;

/** A WHERE term: no hold is in force at `now` (every take of an expired lease restates it). */
export const noHoldInForceSql = (now: number | SQL): SQL => sql`NOT EXISTS (SELECT 1 FROM reaper_hold WHERE id = 1 AND hold_until > ${now})`;
