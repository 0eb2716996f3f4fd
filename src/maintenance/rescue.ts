/**
 * rescueOnce: the reaper proper. Reads the running jobs whose lease or
 * deadline has run out, lets decideReap (src/core/reaper.ts) judge each, and
 * takes back what it says, each write guarded by the token and expiry it read
 * (so two reapers at once take each job back once, and a heartbeat that lands
 * first wins). Every decision leaves an event with its reason.
 *
 * Batched: at most `reaperBatchSize` jobs taken back per pass, so recovery
 * after an outage is never a retry storm; deferrals (no state change) do not
 * use up the batch.
 */
import type { Config } from '../core/config.ts';
import { decideReap, type ReapReason } from '../core/reaper.ts';
import type { JobStore } from '../db/store/port.ts';
import type { ReapCandidateRow, ReapWrite } from '../db/store/reaper.ts';

export interface RescueReport {
  requeued: { id: string; reason: ReapReason }[];
  failed: { id: string; reason: ReapReason }[];
  deferred: { id: string; reason: 'owner_alive'; overdueMs: number }[];
  /** Expired leases left to their owners because this reaper just came back from a gap (a pause, a start). */
  held: { id: string; reason: 'server_gap' }[];
  /** Decisions that lost a race (a heartbeat or completion landed first): left alone. */
  raced: number;
}

/** Told of each job the pass takes back or defers, with what the report leaves out (its queue and worker). */
export type RescueObserver = (e: { id: string; queue: string; workerId: string; action: 'requeue' | 'fail' | 'defer'; reason: string; overdueMs?: number }) => void;

export interface RescueOptions {
  /**
   * The server was not running its reaper for a while (src/runtime/gap-watch.ts):
   * take nothing for an expired lease, only say why; deadlines still apply.
   */
  holdLostLeases?: { why: string };
  onJob?: RescueObserver;
}

export async function rescueOnce(
  store: Pick<JobStore, 'jobsGetReapCandidates' | 'jobsReapIfUnchanged' | 'jobsRecordHeld'>,
  at: number,
  config: Config,
  options: RescueOptions = {},
): Promise<RescueReport> {
  const { take, defer } = await store.jobsGetReapCandidates({ now: at, limit: config.reaperBatchSize, defaults: config, rules: config });
  const writes: ReapWrite[] = [];
  // decideReap has the last word on every row, so a row of the defer list it
  // takes still counts against the batch (the next pass gets the rest).
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
    store.jobsReapIfUnchanged({ now: at, writes, defaults: config }),
    options.holdLostLeases ? store.jobsRecordHeld({ now: at, candidates: held, why: options.holdLostLeases.why }) : undefined,
  ]);
  const report: RescueReport = { requeued: [], failed: [], deferred: [], held: held.map((c) => ({ id: String(c.id), reason: 'server_gap' })), raced: 0 };
  for (const { candidate, decision } of writes) {
    const id = String(candidate.id);
    if (decision.action === 'defer') report.deferred.push({ id, reason: decision.reason, overdueMs: decision.overdueMs });
    else if (!taken.has(candidate.id)) report.raced++;
    else if (decision.action === 'requeue') report.requeued.push({ id, reason: decision.reason });
    else report.failed.push({ id, reason: decision.reason });
    if (decision.action === 'defer' || taken.has(candidate.id)) {
      const overdue = decision.action === 'defer' ? { overdueMs: decision.overdueMs } : {};
      options.onJob?.({ id, queue: candidate.queueName, workerId: candidate.lockedBy, action: decision.action, reason: decision.reason, ...overdue });
    }
  }
  return report;
}
