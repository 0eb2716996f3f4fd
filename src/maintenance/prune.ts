/**
 * pruneOnce: retention. Finished jobs past their queue's retention (with their
 * events and effects, at most `pruneBatchSize` per pass), workers not seen for
 * a day (or the retention, if longer), old activity samples and audit entries
 * past LEASEHOLD_AUDIT_RETENTION_MS, in one batch:
 * one request to a remote database.
 */
import type { Config } from '../core/config.ts';
import type { JobStore } from '../db/store/port.ts';

const FORGET_WORKERS_AFTER_MS = 24 * 60 * 60 * 1000;

export interface PruneReport {
  /** Finished jobs deleted (with their events and effects). */
  jobs: number;
}

export async function pruneOnce(store: Pick<JobStore, 'retentionPrune'>, at: number, config: Config): Promise<PruneReport> {
  const deleted = await store.retentionPrune({
    now: at,
    limit: config.pruneBatchSize,
    defaults: config,
    forgetWorkersAfterMs: Math.max(FORGET_WORKERS_AFTER_MS, config.retentionMs),
    auditRetentionMs: config.auditRetentionMs,
  });
  return { jobs: deleted.length };
}
