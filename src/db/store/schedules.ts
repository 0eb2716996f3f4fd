/**
 * Schedules (recurring jobs): create, read, change, delete, and the two steps
 * of firing an occurrence.
 *
 * Firing is: enqueue the occurrence's job with the idempotency key
 * schedule:<name>:<occurrence ISO time> (jobsInsert: a second pass, or a
 * pass on another server, gets the same job back), then move next_run_at on,
 * guarded by the next_run_at the pass read. No row back from the move: another
 * pass moved it first, and its job is the same job.
 */
import { sql } from 'drizzle-orm';
import type { Now } from '../../core/clock.ts';
import type { QueueDefaults } from '../../core/config.ts';
import type { Db } from '../db.ts';
import { nowSql } from '../sql.ts';
import { jobsInsert, type Enqueued } from './enqueue.ts';

export interface ScheduleRecord {
  name: string;
  queue_name: string;
  cron: string | null;
  time_zone: string | null;
  interval_ms: number | null;
  payload: string;
  job_options: string;
  paused: number;
  next_run_at: number;
  last_run_at: number | null;
  last_job_id: number | null;
  created_at: number;
  updated_at: number;
}

/** Each job a schedule enqueues gets these. */
export interface ScheduleJobOptions {
  priority?: number;
  maxAttempts?: number;
  timeoutMs?: number;
}

export interface ScheduleFields {
  queue: string;
  cron: string | null;
  timeZone: string | null;
  intervalMs: number | null;
  payload: unknown;
  jobOptions: ScheduleJobOptions;
  paused: boolean;
  nextRunAt: number;
}

export async function schedulesList(db: Db): Promise<ScheduleRecord[]> {
  return db.all<ScheduleRecord>(sql`SELECT * FROM schedules ORDER BY name`);
}

export async function scheduleGet(db: Db, name: string): Promise<ScheduleRecord | undefined> {
  const [row] = await db.all<ScheduleRecord>(sql`SELECT * FROM schedules WHERE name = ${name}`);
  return row;
}

/** A new schedule, or undefined when one has that name already (nothing changed). */
export async function scheduleCreate(db: Db, p: ScheduleFields & { name: string; now: Now }): Promise<ScheduleRecord | undefined> {
  const now = nowSql(p.now);
  const [row] = await db.all<ScheduleRecord>(sql`INSERT INTO schedules
      (name, queue_name, cron, time_zone, interval_ms, payload, job_options, paused, next_run_at, created_at, updated_at)
    VALUES (${p.name}, ${p.queue}, ${p.cron}, ${p.timeZone}, ${p.intervalMs}, ${JSON.stringify(p.payload ?? null)}, ${JSON.stringify(p.jobOptions)},
      ${p.paused ? 1 : 0}, ${p.nextRunAt}, ${now}, ${now})
    ON CONFLICT (name) DO NOTHING RETURNING *`);
  return row;
}

/** Replaces a schedule's fields (the caller merged the patch and computed next_run_at); undefined: no such schedule. */
export async function scheduleReplace(db: Db, p: ScheduleFields & { name: string; now: Now }): Promise<ScheduleRecord | undefined> {
  const [row] = await db.all<ScheduleRecord>(sql`UPDATE schedules SET queue_name = ${p.queue}, cron = ${p.cron}, time_zone = ${p.timeZone},
      interval_ms = ${p.intervalMs}, payload = ${JSON.stringify(p.payload ?? null)}, job_options = ${JSON.stringify(p.jobOptions)},
      paused = ${p.paused ? 1 : 0}, next_run_at = ${p.nextRunAt}, updated_at = ${nowSql(p.now)}
    WHERE name = ${p.name} RETURNING *`);
  return row;
}

export async function scheduleDelete(db: Db, name: string): Promise<boolean> {
  const rows = await db.all<{ name: string }>(sql`DELETE FROM schedules WHERE name = ${name} RETURNING name`);
  return rows.length > 0;
}

/** Unpaused schedules whose next occurrence is due, oldest first, at most `limit`. */
export async function schedulesDue(db: Db, p: { now: number; limit: number }): Promise<ScheduleRecord[]> {
  return db.all<ScheduleRecord>(sql`SELECT * FROM schedules WHERE paused = 0 AND next_run_at <= ${p.now} ORDER BY next_run_at LIMIT ${p.limit}`);
}

/** The idempotency key of one occurrence's job: the same on every server. */
export const occurrenceKey = (name: string, occurrence: number) => `schedule:${name}:${new Date(occurrence).toISOString()}`;

/** Step 1: the occurrence's job (or the one an earlier pass made for it). */
export async function scheduleEnqueueOccurrence(
  db: Db,
  p: { schedule: ScheduleRecord; occurrence: number; now: Now; defaults: QueueDefaults; maxQueues?: number },
): Promise<Enqueued> {
  const options = JSON.parse(p.schedule.job_options) as ScheduleJobOptions;
  const [enqueued] = await jobsInsert(db, {
    queue: p.schedule.queue_name,
    jobs: [{ payload: JSON.parse(p.schedule.payload), idempotencyKey: occurrenceKey(p.schedule.name, p.occurrence), ...options }],
    actor: `schedule:${p.schedule.name}`,
    now: p.now,
    defaults: p.defaults,
    ...(p.maxQueues === undefined ? {} : { maxQueues: p.maxQueues }),
  });
  return enqueued!;
}

/** Step 2: next_run_at moves on, only if it is still what the pass read. False: another pass moved it. */
export async function scheduleAdvanceIfUnchanged(
  db: Db,
  p: { name: string; readNextRunAt: number; occurrence: number; nextRunAt: number; jobId: number; now: Now },
): Promise<boolean> {
  const rows = await db.all<{ name: string }>(sql`UPDATE schedules SET next_run_at = ${p.nextRunAt}, last_run_at = ${p.occurrence},
      last_job_id = ${p.jobId}, updated_at = ${nowSql(p.now)}
    WHERE name = ${p.name} AND next_run_at = ${p.readNextRunAt} RETURNING name`);
  return rows.length > 0;
}
