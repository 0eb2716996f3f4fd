/**
 * After the clock the leases use stepped back (src/core/clock-step.ts): what
 * the database shows of it, and the rebase of what was written on the clock
 * as it was before.
 *
 * - evidence: the latest time the database recorded on its own (a worker's
 *   last sighting, a pass's completion, the reaper hold's start). Each was
 *   written at the clock's "now", so one later than now says the clock went
 *   back. Two primary-key or index reads (workers_last_seen_idx gives max()).
 * - rebase jobs: running -> running. Precondition: status running and the
 *   last renewal (claim or heartbeat) later than now. Postcondition: the
 *   row's clock is moved by that difference: last_heartbeat_at = now, and
 *   lease_expires_at, deadline_at, started_at and progressed_at shift with
 *   it, so the lease ends at now + what the last renewal granted, as if that
 *   renewal had come now on the new clock. A dead owner's job is then taken
 *   at lease + grace from here, not S later. At most `limit` rows per
 *   statement (the caller repeats): the returned count says how many moved;
 *   fewer than `limit` means none is left. No row back: nothing to rebase.
 *   The token is untouched: the owner keeps its lease and writes as before.
 * - settle: after every job is rebased, the sightings, the pass times and
 *   the hold are moved back to now (the hold by the same difference as its
 *   start), so the evidence is gone and the next pass finds nothing to do.
 *
 * Renewals rebase their own row too (lease.ts, claim.ts), so a live owner's
 * lease is counted from its renewal on the new clock whether or not a pass
 * ran in between.
 */
import { sql } from 'drizzle-orm';
import type { Now } from '../../core/clock.ts';
import type { Db } from '../db.ts';
import { nowSql } from '../sql.ts';

/**
 * The latest time the database recorded (sightings, passes, the hold's
 * start), or null when it recorded none, with `now` read in the same
 * statement: a sighting written after the caller read its own time is not
 * taken for a step.
 */
export async function clockLatestRecorded(db: Db, p: { now: Now }): Promise<{ latest: number | null; now: number }> {
  const [row] = await db.all<{ latest: number | null; now: number }>(sql`SELECT max(
      coalesce((SELECT max(last_seen_at) FROM workers), -1),
      coalesce((SELECT max(last_completed_at) FROM maintenance_state), -1),
      coalesce((SELECT began_at FROM reaper_hold WHERE id = 1), -1)) AS latest, ${nowSql(p.now)} AS now`);
  const latest = Number(row?.latest ?? -1);
  return { latest: latest < 0 ? null : latest, now: Number(row!.now) };
}

/** Moves up to `limit` running jobs renewed "in the future" onto the clock as it is now; how many moved. */
export async function jobsRebaseAfterStepBack(db: Db, p: { now: number; limit: number }): Promise<number> {
  const shift = sql`(jobs.last_heartbeat_at - ${p.now})`;
  const rows = await db.all<{ id: number }>(sql`UPDATE jobs SET
      lease_expires_at = jobs.lease_expires_at - ${shift},
      deadline_at = jobs.deadline_at - ${shift},
      started_at = jobs.started_at - ${shift},
      progressed_at = jobs.progressed_at - ${shift},
      last_heartbeat_at = ${p.now}
    WHERE jobs.id IN (SELECT id FROM jobs INDEXED BY jobs_lease_expiry_idx
      WHERE status = 'running' AND lease_expires_at > ${p.now} AND last_heartbeat_at > ${p.now} LIMIT ${p.limit})
    RETURNING jobs.id AS id`);
  return rows.length;
}

/** After the jobs: sightings, pass times and the hold back on the clock as it is now (one batch). */
export async function clockStepBackSettle(db: Db, p: { now: number }): Promise<void> {
  await db.batch([
    db.run(sql`UPDATE workers SET last_seen_at = ${p.now}, started_at = min(started_at, ${p.now}) WHERE last_seen_at > ${p.now}`),
    db.run(sql`UPDATE maintenance_state SET last_started_at = min(last_started_at, ${p.now}), last_completed_at = min(last_completed_at, ${p.now})
      WHERE last_completed_at > ${p.now}`),
    db.run(sql`UPDATE reaper_hold SET hold_until = hold_until - (began_at - ${p.now}), began_at = ${p.now} WHERE id = 1 AND began_at > ${p.now}`),
  ]);
}
