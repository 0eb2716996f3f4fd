/**
 * What an operator's action on one job answers, and the guarded write that
 * answers it: shared by the single and the bulk paths, and by requeue.ts.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { JobStatus } from '../../core/wire.ts';
import { batchList, type Db } from '../db.ts';
import { alongsideFirst, auditInsertIfChanged } from './audit.ts';
import { jobQueueSql, jobStatusSql } from './read.ts';
import type { JobRecord } from '../../core/job-record.ts';
import type { Alongside, AuditEntry, OperatorOutcome } from './port-types.ts';

/**
 * A job action's audit entry names the job's queue and its status after the
 * action, both read inside the batch, unless the caller gave them: so a
 * caller (API route, dashboard form) passes who, what and why, never SQL.
 */
export function jobActionAudit(entry: AuditEntry, id: number): AuditEntry {
  return { ...entry, queue: entry.queue === undefined ? jobQueueSql(id) : entry.queue, after: entry.after === undefined ? jobStatusSql(id) : entry.after };
}

/** The guarded UPDATE, with what commits alongside it: the audit entry right after it (changes() is its own). */
export async function guardedWithAudit(db: Db, id: number, update: SQL, also: Alongside | undefined): Promise<OperatorOutcome> {
  const first = alongsideFirst(db, also);
  const audit = also?.audit && jobActionAudit(also.audit, id);
  const results = await batchList(db, [
    ...first,
    db.all<JobRecord>(update),
    ...(audit ? [auditInsertIfChanged(db, audit)] : []),
    // What the job is now, and (for a retry refused by uniqueness) which active job holds its key.
    db.all<{ status: JobStatus; key_held_by: number | null }>(sql`SELECT status, (SELECT a.id FROM jobs a WHERE a.queue_name = j.queue_name
      AND a.idempotency_key = j.idempotency_key AND a.status IN ('pending', 'running') AND a.id <> j.id) AS key_held_by FROM jobs j WHERE id = ${id}`),
  ]);
  const rows = results[first.length];
  const current = results[results.length - 1];
  const job = (rows as JobRecord[])[0];
  if (job) return { ok: true, job };
  const row = (current as { status: JobStatus; key_held_by: number | null }[])[0];
  if (row === undefined) return { ok: false, reason: 'not_found' };
  return { ok: false, reason: 'conflict', status: row.status, ...(row.key_held_by === null ? {} : { keyHeldBy: Number(row.key_held_by) }) };
}
