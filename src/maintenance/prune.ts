/**
 * pruneOnce: retention. Finished jobs past their queue's retention (with their
 * events and effects, at most `pruneBatchSize` per pass), workers not seen for
 * a day (or the retention, if longer), old activity samples and audit entries
 * past LEASEHOLD_AUDIT_RETENTION_MS, in one batch:
 * one request to a remote database.
 */
import type { Config } from '../core/config.ts';
import { batchList, type Db } from '../db/db.ts';
import { queueMinutesPrune } from '../db/store/activity.ts';
import { auditPruneStatements } from '../db/store/audit.ts';
import { jobsPruneFinishedStatements, workersPruneStale } from '../db/store/reaper.ts';

const FORGET_WORKERS_AFTER_MS = 24 * 60 * 60 * 1000;

export interface PruneReport {
  /** Finished jobs deleted (with their events and effects). */
  jobs: number;
}

export async function pruneOnce(db: Db, at: number, config: Config): Promise<PruneReport> {
  const results = await batchList(db, [
    ...jobsPruneFinishedStatements(db, { now: at, limit: config.pruneBatchSize, defaults: config }),
    workersPruneStale(db, { now: at, olderThanMs: Math.max(FORGET_WORKERS_AFTER_MS, config.retentionMs) }),
    queueMinutesPrune(db, { now: at }),
    ...auditPruneStatements(db, { now: at, retentionMs: config.auditRetentionMs, limit: config.pruneBatchSize }),
  ]);
  // The third statement is the jobs' DELETE ... RETURNING id.
  return { jobs: (results[2] as { id: number }[]).length };
}
