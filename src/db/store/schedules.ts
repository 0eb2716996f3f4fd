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
import { and, asc, desc, eq, lte, sql, type SQL } from 'drizzle-orm';
import type { Now } from '../../core/clock.ts';
import type { QueueDefaults } from '../../core/config.ts';
import { batchList, type Db } from '../db.ts';
import { rowColumns } from '../row-columns.ts';
import { scheduleSkips, schedules } from '../schema.ts';
import { nowSql, queueSettingSql } from '../sql.ts';
import { dedupHit, queueCapReached, queueInsertWithinCap, queueJobsGuard } from './enqueue.ts';
import type { JobRecord } from '../../core/job-record.ts';
import type { Enqueued, ScheduleFields, ScheduleFired, ScheduleJobOptions, ScheduleRecord, ScheduleSkipRecord, SkippedOccurrences } from './port-types.ts';

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
  catchUp: p.catchUp ?? 'latest',
  catchUpWindowMs: p.catchUpWindowMs ?? null,
  overlap: p.overlap ?? 'allow',
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

/** The schedule and its skip rows, in one batch. */
export async function scheduleDelete(db: Db, name: string): Promise<boolean> {
  const [rows] = await db.batch([
    db.delete(schedules).where(eq(schedules.name, name)).returning({ name: schedules.name }),
    db.delete(scheduleSkips).where(eq(scheduleSkips.scheduleName, name)),
  ]);
  return rows.length > 0;
}

/** The earliest next_run_at of an unpaused schedule (the schedule timer's next wake-up); null: none. */
export async function schedulesNextDueAt(db: Db): Promise<number | null> {
  const [row] = await db.all<{ at: number | null }>(sql`SELECT min(next_run_at) AS at FROM schedules WHERE paused = 0`);
  return row?.at ?? null;
}

/** A schedule's skips, newest first (at most SKIPS_KEPT_PER_SCHEDULE are kept); every schedule's without a name. */
export async function scheduleSkipsList(db: Db, p: { name?: string; limit: number }): Promise<ScheduleSkipRecord[]> {
  const q = db.select(rowColumns(scheduleSkips)).from(scheduleSkips);
  return (p.name === undefined ? q : q.where(eq(scheduleSkips.scheduleName, p.name))).orderBy(desc(scheduleSkips.id)).limit(p.limit);
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
  return { job, deduplicated: job.dedup_count > 0, replaced: false };
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

/**
 * Skip rows kept per schedule: each skip writes one and drops the oldest past
 * this, so a schedule that skips every second (overlap 'skip' behind a long
 * job) keeps a bounded history; the totals stay on the schedule's counters.
 */
export const SKIPS_KEPT_PER_SCHEDULE = 100;

/** The skip's row, written only while next_run_at is what the pass read (and, for a fire, once its job exists). */
function skipRowInsert(db: Db, name: string, readNextRunAt: number, skipped: SkippedOccurrences, now: SQL, also: SQL = sql`1`) {
  return db.run(sql`INSERT INTO schedule_skips (schedule_name, at, reason, count, count_capped, first_occurrence_at, last_occurrence_at)
      SELECT ${name}, ${now}, ${skipped.reason}, ${skipped.count}, ${skipped.capped ? 1 : 0}, ${skipped.first}, ${skipped.last}
      WHERE EXISTS (SELECT 1 FROM schedules WHERE name = ${name} AND next_run_at = ${readNextRunAt}) AND ${also}`);
}

function skipRowsTrim(db: Db, name: string) {
  return db.run(sql`DELETE FROM schedule_skips WHERE schedule_name = ${name} AND id <= (
      SELECT id FROM schedule_skips WHERE schedule_name = ${name} ORDER BY id DESC LIMIT 1 OFFSET ${SKIPS_KEPT_PER_SCHEDULE})`);
}

const skipCounters = (skipped: SkippedOccurrences | undefined): SQL =>
  !skipped || skipped.count === 0 ? sql`` : skipped.reason === 'missed' ? sql`, skipped_missed = skipped_missed + ${skipped.count}` : sql`, skipped_overlap = skipped_overlap + ${skipped.count}`;

/**
 * Fire one occurrence: its job, the skip of the occurrences it leaves behind
 * (the missed ones before it), and the schedule's move to `nextRunAt`, in one
 * batch, each statement guarded by the next_run_at the pass read. Two passes
 * (two servers, the timer and the pass of one) that read the same schedule
 * write it once: the second finds next_run_at moved and writes nothing
 * ('moved'). With overlap 'skip', the job's guard also asks that no earlier
 * occurrence's job be pending or running ('overlap': nothing written). The
 * job still conflicts on (schedule_name, occurrence_at), as
 * scheduleEnqueueOccurrence's does, should an older server have made it.
 * A queue past the cap stores nothing and throws.
 */
export async function scheduleFireIfUnchanged(
  db: Db,
  p: { schedule: ScheduleRecord; occurrence: number; nextRunAt: number; skipped?: SkippedOccurrences; now: Now; defaults: QueueDefaults; maxQueues?: number },
): Promise<ScheduleFired> {
  const s = p.schedule;
  const read = s.next_run_at;
  const options = JSON.parse(s.job_options) as ScheduleJobOptions;
  const now = nowSql(p.now);
  const actor = `schedule:${s.name}`;
  const maxAttempts = options.maxAttempts ?? queueSettingSql('max_attempts', sql`${s.queue_name}`, p.defaults.maxAttempts);
  const unchanged = sql`EXISTS (SELECT 1 FROM schedules WHERE name = ${s.name} AND next_run_at = ${read})`;
  const noOverlap = s.overlap === 'skip' ? sql`NOT EXISTS (SELECT 1 FROM jobs WHERE schedule_name = ${s.name} AND status IN ('pending', 'running'))` : sql`1`;
  const occurrenceJob = sql`EXISTS (SELECT 1 FROM jobs WHERE schedule_name = ${s.name} AND occurrence_at = ${p.occurrence})`;
  const skipped = p.skipped && p.skipped.count > 0 ? p.skipped : undefined;
  const [, inserted, ...rest] = await batchList(db, [
    queueInsertWithinCap(db, s.queue_name, now, p.maxQueues),
    db.all<JobRecord>(sql`WITH clock(now) AS (SELECT ${now})
      INSERT INTO jobs (queue_name, payload, priority, max_attempts, available_at, timeout_ms, schedule_name, occurrence_at, last_event_actor, enqueued_by, created_at, updated_at)
      SELECT ${s.queue_name}, ${s.payload}, ${options.priority ?? 0}, ${maxAttempts}, now, ${options.timeoutMs ?? null}, ${s.name}, ${p.occurrence}, ${actor}, ${actor}, now, now
      FROM clock WHERE ${queueJobsGuard(s.queue_name, p.maxQueues)} AND ${unchanged} AND ${noOverlap}
      ON CONFLICT (schedule_name, occurrence_at) WHERE schedule_name IS NOT NULL DO UPDATE SET ${dedupHit}
      RETURNING *`),
    ...(skipped ? [skipRowInsert(db, s.name, read, skipped, now, occurrenceJob), skipRowsTrim(db, s.name)] : []),
    db.all<{ name: string }>(sql`UPDATE schedules SET next_run_at = ${p.nextRunAt}, last_run_at = ${p.occurrence},
        last_job_id = (SELECT id FROM jobs WHERE schedule_name = ${s.name} AND occurrence_at = ${p.occurrence}), updated_at = ${now}${skipCounters(skipped)}
      WHERE name = ${s.name} AND next_run_at = ${read} AND ${occurrenceJob}
      RETURNING name`),
    // What the guards saw, to tell a lost race from an overlap or a full cap.
    db.all<{ read_unchanged: number; active: number; admitted: number }>(sql`SELECT
        EXISTS (SELECT 1 FROM schedules WHERE name = ${s.name} AND next_run_at = ${read}) AS read_unchanged,
        EXISTS (SELECT 1 FROM jobs WHERE schedule_name = ${s.name} AND status IN ('pending', 'running')) AS active,
        ${queueJobsGuard(s.queue_name, p.maxQueues)} AS admitted`),
  ]);
  const [job] = inserted as JobRecord[];
  const moved = (rest.at(-2) as { name: string }[]).length > 0;
  const [seen] = rest.at(-1) as { read_unchanged: number; active: number; admitted: number }[];
  if (job && moved) return { outcome: 'enqueued', job, deduplicated: job.dedup_count > 0 };
  if (!seen?.admitted) throw queueCapReached(s.queue_name, p.maxQueues);
  if (seen.read_unchanged && s.overlap === 'skip' && seen.active) return { outcome: 'overlap' };
  return { outcome: 'moved' };
}

/**
 * Skip occurrences: their row in schedule_skips, the schedule's counter for
 * why, and its move to `nextRunAt`, in one batch guarded by the next_run_at
 * the pass read. False: another pass moved it first (nothing written).
 */
export async function scheduleSkipIfUnchanged(
  db: Db,
  p: { name: string; readNextRunAt: number; nextRunAt: number; skipped: readonly SkippedOccurrences[]; now: Now },
): Promise<boolean> {
  const now = nowSql(p.now);
  const skipped = p.skipped.filter((k) => k.count > 0);
  const results = await batchList(db, [
    ...skipped.map((k) => skipRowInsert(db, p.name, p.readNextRunAt, k, now)),
    skipRowsTrim(db, p.name),
    db.all<{ name: string }>(sql`UPDATE schedules SET next_run_at = ${p.nextRunAt}, updated_at = ${now}${sql.join(skipped.map(skipCounters))}
      WHERE name = ${p.name} AND next_run_at = ${p.readNextRunAt} RETURNING name`),
  ]);
  return (results.at(-1) as { name: string }[]).length > 0;
}
