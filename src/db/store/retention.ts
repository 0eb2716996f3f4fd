/**
 * Retention, in one batch (one request to a remote database): finished jobs
 * past their queue's retention (with their events and effects, oldest first,
 * at most `limit`), workers not seen for `forgetWorkersAfterMs`, activity
 * minutes past their window, and operator audit entries past
 * `auditRetentionMs` (at most `limit`) with used form tokens past expiry,
 * and what-if tuning's evidence past its day (tuning-evidence.ts).
 * Each statement is its own file's (reaper.ts, activity.ts, audit.ts).
 * Returns the ids of the jobs deleted.
 */
import type { QueueDefaults } from '../../core/config.ts';
import { batchList, type Db } from '../db.ts';
import { queueMinutesPrune } from './activity.ts';
import { auditPruneStatements } from './audit.ts';
import { jobsPruneFinishedStatements, workersPruneStale } from './reaper.ts';
import { tuningEvidencePruneStatements } from './tuning-evidence.ts';

export async function retentionPrune(
  db: Db,
  p: { now: number; limit: number; defaults: QueueDefaults; forgetWorkersAfterMs: number; auditRetentionMs: number },
): Promise<number[]> {
  const results = await batchList(db, [
    ...jobsPruneFinishedStatements(db, { now: p.now, limit: p.limit, defaults: p.defaults }),
    workersPruneStale(db, { now: p.now, olderThanMs: p.forgetWorkersAfterMs }),
    queueMinutesPrune(db, { now: p.now }),
    ...auditPruneStatements(db, { now: p.now, retentionMs: p.auditRetentionMs, limit: p.limit }),
    ...tuningEvidencePruneStatements(db, { now: p.now }),
  ]);
  // The third statement is the jobs' DELETE ... RETURNING id.
  return (results[2] as { id: number }[]).map((r) => Number(r.id));
}
