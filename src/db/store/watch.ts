/**
 * Reads for clients that wait on jobs (POST /jobs/wait): what state each
 * named job is in, cheaply and often, and the jobs that changed, whole but
 * within a byte budget. Reads only: nothing here writes.
 *
 * A job's version is `status.lease_epoch.progressed_at`: it changes on every
 * transition a watcher can see (claimed: the epoch grows; completed, failed,
 * cancelled, back to pending: the status changes) and when the owner reports
 * new progress or a checkpoint, and never on a plain heartbeat. Clients
 * compare versions for equality only.
 */
import { sql } from 'drizzle-orm';
import type { Db } from '../db.ts';
import type { JobStatus } from '../schema.ts';
import { byteLengthSql } from '../sql.ts';
import type { JobRecord } from '../../core/job-record.ts';
import type { JobWatchState } from './port-types.ts';

const STATUSES_SQL = sql.raw(`'pending', 'running', 'completed', 'failed', 'cancelled'`);

/** The version of the row aliased `j`, as SQL: the same expression wherever a version is read. */
const versionSql = sql.raw(`j.status || '.' || j.lease_epoch || '.' || coalesce(j.progressed_at, 0)`);

/**
 * The status of each of `ids` that names a job (an id with no job is left
 * out), and the version of those in `versionsOf`. The statuses are read from
 * jobs_status_id_idx alone (a search per status and id, never the row: a row
 * with a large payload keeps its later columns in overflow pages, and reading
 * status would walk them); versions need the row, so only the jobs whose
 * watchers compare versions pay for it.
 */
export async function jobsWatchStates(db: Db, p: { ids: readonly number[]; versionsOf?: readonly number[] }): Promise<JobWatchState[]> {
  if (p.ids.length === 0) return [];
  const statuses = await db.all<{ id: number; status: JobStatus }>(sql`SELECT id, status FROM jobs INDEXED BY jobs_status_id_idx
    WHERE status IN (${STATUSES_SQL}) AND id IN (SELECT value FROM json_each(${JSON.stringify(p.ids)}))`);
  const out = new Map<number, JobWatchState>(statuses.map((s) => [s.id, { id: s.id, status: s.status }]));
  const wanted = (p.versionsOf ?? []).filter((id) => out.has(id));
  if (wanted.length > 0) {
    const versions = await db.all<{ id: number; status: JobStatus; version: string }>(
      sql`SELECT j.id, j.status, ${versionSql} AS version FROM jobs j WHERE j.id IN (SELECT value FROM json_each(${JSON.stringify(wanted)}))`,
    );
    // Read a moment after the statuses: the row's own status goes with its version.
    for (const v of versions) out.set(v.id, v);
  }
  return [...out.values()];
}

/**
 * The jobs named by `ids`, whole, in the order given, as many as fit in
 * `maxBytes` of their JSON (payload, result, checkpoint, progress, last
 * error), and always the first: a job larger than the budget comes alone.
 * The sizes are byte lengths (byteLengthSql). An id with no job is skipped.
 */
export async function jobsGetWithinBytes(db: Db, p: { ids: readonly number[]; maxBytes: number }): Promise<(JobRecord & { version: string })[]> {
  if (p.ids.length === 0) return [];
  const bytes = sql.raw(
    [`${byteLengthSql('j.payload')}`, ...['j.result', 'j.checkpoint', 'j.progress', 'j.last_error'].map((c) => `coalesce(${byteLengthSql(c)}, 0)`)].join(' + '),
  );
  return db.all<JobRecord & { version: string }>(sql`WITH picked AS (
      SELECT id, ord FROM (
        SELECT j.id, w.key AS ord, row_number() OVER in_order AS n, sum(${bytes}) OVER in_order AS bytes_so_far
        FROM json_each(${JSON.stringify(p.ids)}) w JOIN jobs j ON j.id = w.value
        WINDOW in_order AS (ORDER BY w.key ROWS UNBOUNDED PRECEDING))
      WHERE n = 1 OR bytes_so_far <= ${p.maxBytes})
    SELECT j.*, ${versionSql} AS version FROM picked JOIN jobs j ON j.id = picked.id ORDER BY picked.ord`);
}
