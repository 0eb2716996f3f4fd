/**
 * Schedules (recurring jobs): create, read, change, delete, and the two steps
 * of firing an occurrence.
 *
 * Firing is: insert the occurrence's job, marked with its schedule and
 * occurrence time (schedule_name, occurrence_at), which a unique index keeps
 * to one job per occurrence (drizzle/0021): a second pass, or a pass on
 * another server, gets the same job back. Then next_run_at moves on, guarded
 * by the next_run_at the pass read. No row back from the move: another pass
 * moved it first, and its job is the same job.
 *
 * An occurrence job has no idempotency key. Keys belong to the clients that
 * enqueue: no key a client sends can name an occurrence (before, the key
 * schedule:<name>:<time> could be enqueued first and the pass took that job
 * for its own), and no occurrence can swallow a client's enqueue.
 */
import { and, asc, eq, lte, sql } from 'drizzle-orm';
import type { Now } from '../../core/clock.ts';
import type { QueueDefaults } from '../../core/config.ts';
import type { Db } from '../db.ts';
import { rowColumns } from '../row-columns.ts';
import { schedules } from '../schema.ts';
import { nowSql, queueSettingSql } from '../sql.ts';
import { dedupHit, queueCapReached, queueInsertWithinCap, queueJobsGuard } from './enqueue.ts';
import type { JobRecord } from '../../core/job-record.ts';
import type { Enqueued, ScheduleFields, ScheduleJobOptions, ScheduleRecord } from './port-types.ts';

export async function schedulesList(db: Db): Promise<ScheduleRecord[]> {
  return db.select(rowColumns(schedules)).from(schedules).orderBy(asc(schedules.name));
}

export async function scheduleGet(db: Db, name: string): Promise<ScheduleRecord | undefined> {
  const [row] = await db.select(rowColumns(schedules)).from(schedules).where(eq(schedules.name, name));
  return row;
}

/** The fields a create or replace writes, as the schema's properties. */
const written = (p: ScheduleFields) => ({
  queueName: p.queue,
  cron: p.cron,
  timeZone: p.timeZone,
  intervalMs: p.intervalMs,
  payload: JSON.stringify(p.payload ?? null),
  jobOptions: JSON.stringify(p.jobOptions),
  paused: p.paused,
  nextRunAt: p.nextRunAt,
});

/** A new schedule, or undefined when one has that name already (nothing changed). */
export async function scheduleCreate(db: Db, p: ScheduleFields & { name: string; now: Now }): Promise<ScheduleRecord | undefined> {
  const now = nowSql(p.now);
  const [row] = await db
    .insert(schedules)
    .values({ name: p.name, ...written(p), createdAt: now, updatedAt: now })
    .onConflictDoNothing({ target: schedules.name })
    .returning(rowColumns(schedules));
  return row;
}

/** Replaces a schedule's fields (the caller merged the patch and computed next_run_at); undefined: no such schedule. */
export async function scheduleReplace(db: Db, p: ScheduleFields & { name: string; now: Now }): Promise<ScheduleRecord | undefined> {
  const [row] = await db
    .update(schedules)
    .set({ ...written(p), updatedAt: nowSql(p.now) })
    .where(eq(schedules.name, p.name))
    .returning(rowColumns(schedules));
  return row;
}

export async function scheduleDelete(db: Db, name: string): Promise<boolean> {
  const rows = await db.delete(schedules).where(eq(schedules.name, name)).returning({ name: schedules.name });
  return rows.length > 0;
}

/** Unpaused schedules whose next occurrence is due, oldest first, at most `limit`. */
export async function schedulesDue(db: Db, p: { now: number; limit: number }): Promise<ScheduleRecord[]> {
  return db
    .select(rowColumns(schedules))
    .from(schedules)
    // The condition of the partial schedules_due_idx as the index states it (a literal), so the plan does not hang on a bound value.
    .where(and(sql`${schedules.paused} = 0`, lte(schedules.nextRunAt, p.now)))
    .orderBy(asc(schedules.nextRunAt))
    .limit(p.limit);
}

/**
 * Step 1: the occurrence's job (or the one an earlier pass made for it). One
 * batch, as an enqueue: the queue within the cap, then the job, which
 * conflicts only on (schedule_name, occurrence_at). A repeat counts as a
 * dedup hit on the existing job, as a repeated enqueue does.
 */
export async function scheduleEnqueueOccurrence(
  db: Db,
  p: { schedule: ScheduleRecord; occurrence: number; now: Now; defaults: QueueDefaults; maxQueues?: number },
): Promise<Enqueued> {
  const s = p.schedule;
  const options = JSON.parse(s.job_options) as ScheduleJobOptions;
  const now = nowSql(p.now);
  const actor = `schedule:${s.name}`;
  const maxAttempts = options.maxAttempts ?? queueSettingSql('max_attempts', sql`${s.queue_name}`, p.defaults.maxAttempts);
  const [, inserted] = await db.batch([
    queueInsertWithinCap(db, s.queue_name, now, p.maxQueues),
    db.all<JobRecord>(sql`WITH clock(now) AS (SELECT ${now})
      INSERT INTO jobs (queue_name, payload, priority, max_attempts, available_at, timeout_ms, schedule_name, occurrence_at, last_event_actor, enqueued_by, created_at, updated_at)
      SELECT ${s.queue_name}, ${s.payload}, ${options.priority ?? 0}, ${maxAttempts}, now, ${options.timeoutMs ?? null}, ${s.name}, ${p.occurrence}, ${actor}, ${actor}, now, now
      FROM clock WHERE ${queueJobsGuard(s.queue_name, p.maxQueues)}
      ON CONFLICT (schedule_name, occurrence_at) WHERE schedule_name IS NOT NULL DO UPDATE SET ${dedupHit}
      RETURNING *`),
  ]);
  const [job] = inserted as JobRecord[];
  if (!job) throw queueCapReached(s.queue_name, p.maxQueues);
  return { job, deduplicated: job.dedup_count > 0 };
}

/** Step 2: next_run_at moves on, only if it is still what the pass read. False: another pass moved it. */
export async function scheduleAdvanceIfUnchanged(
  db: Db,
  p: { name: string; readNextRunAt: number; occurrence: number; nextRunAt: number; jobId: number; now: Now },
): Promise<boolean> {
  const rows = await db
    .update(schedules)
    .set({ nextRunAt: p.nextRunAt, lastRunAt: p.occurrence, lastJobId: p.jobId, updatedAt: nowSql(p.now) })
    .where(and(eq(schedules.name, p.name), eq(schedules.nextRunAt, p.readNextRunAt)))
    .returning({ name: schedules.name });
  return rows.length > 0;
}
