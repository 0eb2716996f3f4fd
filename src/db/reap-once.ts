/**
 * reapOnce: one pass of the reaper. Pure of timers: the Node server's
 * interval, Deno.cron, a Workers `scheduled` handler, `leasehold reap` and
 * `POST /api/v1/reaper/run` all call this and nothing else.
 *
 * Batched (at most `reaperBatchSize` jobs taken back per pass, so recovery
 * after an outage is never a retry storm), idempotent (every write is guarded
 * by the token and expiry it read, so two reapers running at once take each
 * job back once), and every decision leaves an event with its reason.
 * Last, the alert pass (src/db/alert-pass.ts): alerts are evaluated and the
 * webhook told about transitions from here, so it works wherever a reaper
 * runs; its failure is reported in `alerts.error` and never fails the pass.
 */
import type { Now } from '../core/clock.ts';
import type { Config } from '../core/config.ts';
import { decideReap, type ReapReason } from '../core/reaper.ts';
import type { AlertTransition } from '../core/alert-webhook.ts';
import { alertPass, type AlertPassReport } from './alert-pass.ts';
import { batchList, type Db } from './db.ts';
import { auditPruneStatements } from './store/audit.ts';
import { queueMinutesPrune, queueMinutesSampleHeartbeatLag } from './store/activity.ts';
import { readNow } from './store/read.ts';
import { jobsGetReapCandidates, jobsPruneFinishedStatements, jobsReapIfUnchanged, jobsRecordHeld, workersPruneStale, type ReapCandidateRow, type ReapWrite } from './store/reaper.ts';

export interface ReapReport {
  /** The time the pass ran at (epoch ms). */
  at: number;
  requeued: { id: string; reason: ReapReason }[];
  failed: { id: string; reason: ReapReason }[];
  deferred: { id: string; reason: 'owner_alive'; overdueMs: number }[];
  /** Expired leases left to their owners because this reaper just came back from a gap (a pause, a start). */
  held: { id: string; reason: 'server_gap' }[];
  /** Decisions that lost a race (a heartbeat or completion landed first): left alone. */
  raced: number;
  pruned: number;
  alerts: AlertPassReport;
}

/**
 * Told of each decision as the pass makes it, with what the report leaves
 * out (the job's queue and the worker that held it): the servers log one
 * line per job taken back and per alert that flips.
 */
export interface ReapObserver {
  job?(e: { id: string; queue: string; workerId: string; action: 'requeue' | 'fail' | 'defer'; reason: string; overdueMs?: number }): void;
  alert?(t: AlertTransition): void;
}

const FORGET_WORKERS_AFTER_MS = 24 * 60 * 60 * 1000;

export interface ReapOptions extends ReapObserver {
  /**
   * The server was not running its reaper for a while (src/runtime/gap-watch.ts):
   * take nothing for an expired lease, only say why; deadlines still apply.
   */
  holdLostLeases?: { why: string };
}

export async function reapOnce(db: Db, now: Now, config: Config, options: ReapOptions = {}): Promise<ReapReport> {
  const at = typeof now === 'number' ? now : await readNow(db);
  const { take, defer } = await jobsGetReapCandidates(db, { now: at, limit: config.reaperBatchSize, defaults: config, rules: config });
  const writes: ReapWrite[] = [];
  // Taken at most reaperBatchSize; deferrals (no state change) do not use up
  // the batch. decideReap has the last word on every row, so a row of the
  // defer list it takes still counts against the batch (the next pass gets the rest).
  const held: ReapCandidateRow[] = [];
  let takes = 0;
  for (const candidate of [...take, ...defer]) {
    const decision = decideReap(candidate, at, config);
    if (decision.action === 'none') continue;
    if (decision.action !== 'defer' && ++takes > config.reaperBatchSize) continue;
    // After a gap in this server's own passes, expired leases wait for their owners.
    if (options.holdLostLeases && decision.action !== 'defer' && decision.cause === 'lost') held.push(candidate);
    else writes.push({ candidate, decision });
  }
  const [taken] = await Promise.all([
    jobsReapIfUnchanged(db, { now: at, writes, defaults: config }),
    options.holdLostLeases ? jobsRecordHeld(db, { now: at, candidates: held, why: options.holdLostLeases.why }) : undefined,
  ]);
  const report: ReapReport = { at, requeued: [], failed: [], deferred: [], held: held.map((c) => ({ id: String(c.id), reason: 'server_gap' })), raced: 0, pruned: 0, alerts: { ...NO_ALERT_PASS } };
  for (const { candidate, decision } of writes) {
    const id = String(candidate.id);
    if (decision.action === 'defer') report.deferred.push({ id, reason: decision.reason, overdueMs: decision.overdueMs });
    else if (!taken.has(candidate.id)) report.raced++;
    else if (decision.action === 'requeue') report.requeued.push({ id, reason: decision.reason });
    else report.failed.push({ id, reason: decision.reason });
    if (decision.action === 'defer' || taken.has(candidate.id)) {
      const overdue = decision.action === 'defer' ? { overdueMs: decision.overdueMs } : {};
      options.job?.({ id, queue: candidate.queueName, workerId: candidate.lockedBy, action: decision.action, reason: decision.reason, ...overdue });
    }
  }
  // Housekeeping, one batch (one request): retention pruning, forgotten
  // workers, and the overview's heartbeat lag history (one sample per pass,
  // the worst per minute kept).
  const [, , prunedJobs] = await batchList(db, [
    ...jobsPruneFinishedStatements(db, { now: at, limit: config.pruneBatchSize, defaults: config }),
    workersPruneStale(db, { now: at, olderThanMs: Math.max(FORGET_WORKERS_AFTER_MS, config.retentionMs) }),
    queueMinutesSampleHeartbeatLag(db, { now: at }),
    queueMinutesPrune(db, { now: at }),
    ...auditPruneStatements(db, { now: at, retentionMs: config.auditRetentionMs, limit: config.pruneBatchSize }),
  ]);
  report.pruned = (prunedJobs as { id: number }[]).length;
  try {
    report.alerts = await alertPass(db, at, config, fetch, options.alert);
  } catch (err) {
    // The jobs are already taken back: a broken alert pass (a database
    // error, a bug) is reported with the pass, and the next pass tries again.
    report.alerts = { ...NO_ALERT_PASS, error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) };
  }
  return report;
}

const NO_ALERT_PASS: AlertPassReport = { evaluated: false, started: 0, cleared: 0, delivered: 0, failed: 0 };
