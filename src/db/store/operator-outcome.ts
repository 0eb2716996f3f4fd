/**
 * What an operator's action on one job answers, and the guarded write that
 * answers it: shared by the single and the bulk paths, and by requeue.ts.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { JobStatus } from '../../core/wire.ts';
import { batchList, type Db } from '../db.ts';
import { auditInsertIfChanged, type Alongside } from './audit.ts';
import type { JobRecord } from './record.ts';

/** A requeue the reaper would not make now: why, and when it would (if nothing changes). */
export interface RequeueRefusal {
  ok: false;
  reason: 'reaper_would_wait';
  status: 'running';
  why: string;
  takesAt: number;
}

export type OperatorOutcome =
  | { ok: true; job: JobRecord }
  | RequeueRefusal
  | { ok: false; reason: 'conflict'; status: JobStatus }
  | { ok: false; reason: 'not_found' };

/** The guarded UPDATE, with what commits alongside it: the audit entry right after it (changes() is its own). */
export async function guardedWithAudit(db: Db, id: number, update: SQL, also: Alongside | undefined): Promise<OperatorOutcome> {
  const first = also?.first ?? [];
  const results = await batchList(db, [
    ...first,
    db.all<JobRecord>(update),
    ...(also?.audit ? [auditInsertIfChanged(db, also.audit)] : []),
    db.all<{ status: JobStatus }>(sql`SELECT status FROM jobs WHERE id = ${id}`),
  ]);
  const rows = results[first.length];
  const current = results[results.length - 1];
  const job = (rows as JobRecord[])[0];
  if (job) return { ok: true, job };
  const status = (current as { status: JobStatus }[])[0]?.status;
  return status === undefined ? { ok: false, reason: 'not_found' } : { ok: false, reason: 'conflict', status };
}
