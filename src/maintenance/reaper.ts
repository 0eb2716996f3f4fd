/**
 * reapLostLeases: the reaper proper. Reads the running jobs whose lease or
 * deadline has run out, lets decideReap (src/core/reaper.ts) judge each, and
 * takes back what it says, each write guarded by the token and expiry it read
 * (so two reapers at once take each job back once, and a heartbeat that lands
 * first wins). Every decision leaves an event with its reason.
 *
 * Batched: at most `reaperBatchSize` jobs taken back per pass, so recovery
 * after an outage is never a retry storm; deferrals (no state change) do not
 * use up the batch.
 *
 * After a server's gap the database holds expired leases for their owners
 * (src/db/store/reaper-hold.ts, read with every candidate): decideReap says
 * `hold`, and the pass writes a `reap_held` event instead of taking the job.
 *
 * With an owner check (LEASEHOLD_OWNER_CHECK_URL, owner-check.ts) the pass
 * also reads the expired leases still inside their grace, asks the platform
 * about every owner of an expired lease, and hands each answer to
 * decideReap: a gone owner's job is taken at once (reason `owner_gone`), a
 * live one's waits as for a recent beat, and no answer changes nothing.
 */
import type { Config } from '../core/config.ts';
import { decideReap, type OwnerAnswer, type ReapCandidate, type ReapDecision, type ReapReason } from '../core/reaper.ts';
import type { JobStore, ReapCandidateRow, ReapWrite } from '../db/store/port.ts';
import type { Fetch } from './alerts.ts';
import { askOwners, ownerKey, type RefusedOwnerAnswer } from './owner-check.ts';

export interface ReaperReport {
  requeued: { id: string; reason: ReapReason }[];
  failed: { id: string; reason: ReapReason }[];
  deferred: { id: string; reason: 'owner_alive'; overdueMs: number }[];
  /** Expired leases left to their owners because a server just came back from a gap (a pause, a start). */
  held: { id: string; reason: 'server_gap' }[];
  /**
   * Jobs whose onLost is 'hold', taken from their lost attempt and held for a
   * person (src/core/held.ts): they run again only when released.
   */
  heldForOperator: { id: string; reason: ReapReason }[];
  /** Decisions that lost a race (a heartbeat or completion landed first): left alone. */
  raced: number;
  /** When something was held: until when, and why (what the reap_held events say). */
  hold?: { until: number; why: string };
}

/** Told of each job the pass takes back or defers, with what the report leaves out (its queue and worker). */
export type ReaperObserver = (e: { id: string; queue: string; workerId: string; action: 'requeue' | 'hold_for_operator' | 'fail' | 'defer'; reason: string; overdueMs?: number }) => void;

export interface RescueOptions {
  /**
   * A hold the caller knows of besides the database's (src/db/store/reaper-hold.ts),
   * for this pass: take nothing for an expired lease for one heartbeat plus
   * grace from now, only say why; deadlines still apply. The servers write
   * their holds to the database instead, so that every reaper sees them.
   */
  holdLostLeases?: { why: string };
  onJob?: ReaperObserver;
  /** After the pass's writes committed: `n` jobs of `queue` it put back to pending (claims waiting on it look now). */
  jobsBecameClaimable?: (queue: string, n: number) => void;
  /** Where the owner check's GETs go through (default: the global fetch). */
  fetch?: Fetch;
  /** Told of each owner check answer refused (a redirect, an answer too long), after it was counted. */
  onOwnerCheckRefused?: (r: RefusedOwnerAnswer) => void;
}

export async function reapLostLeases(
  store: Pick<JobStore, 'jobsGetReapCandidates' | 'jobsReapIfUnchanged' | 'jobsRecordHeld' | 'ownerCheckRefusalsAdd'>,
  at: number,
  config: Config,
  options: RescueOptions = {},
): Promise<ReaperReport> {
  const checkUrl = config.ownerCheckUrl;
  const { take, defer, inGrace = [] } = await store.jobsGetReapCandidates({ now: at, limit: config.reaperBatchSize, defaults: config, rules: config, inGrace: checkUrl !== undefined });
  const candidates = [...take, ...defer, ...inGrace];
  // Only owners of expired leases are asked about (a passed deadline is taken whatever the owner).
  const asked = checkUrl === undefined ? [] : candidates.filter((c) => c.leaseExpiresAt < at && !(c.deadlineAt !== null && c.deadlineAt <= at));
  const { answers, refused } =
    checkUrl === undefined || asked.length === 0
      ? { answers: new Map<string, OwnerAnswer>(), refused: [] }
      : await askOwners(
          asked.map((c) => ({ workerId: c.lockedBy, instanceId: c.lockedByInstance, host: c.ownerHost, pid: c.ownerPid })),
          { url: checkUrl, timeoutMs: config.ownerCheckTimeoutMs, fetch: options.fetch ?? fetch },
        );
  // A refused answer is `unknown` for the decision; it is counted and told, so a misbehaving check is seen.
  if (refused.length > 0) {
    const byReason: Record<string, number> = {};
    for (const r of refused) byReason[r.reason] = (byReason[r.reason] ?? 0) + 1;
    await store.ownerCheckRefusalsAdd({ byReason });
    for (const r of refused) options.onOwnerCheckRefused?.(r);
  }
  const withOwnerCheck = (c: ReapCandidateRow): ReapCandidate => {
    const answer = answers.get(ownerKey({ workerId: c.lockedBy, instanceId: c.lockedByInstance, host: null, pid: null }));
    return answer ? { ...c, ownerCheck: answer } : c;
  };
  const writes: (ReapWrite & { decision: Exclude<ReapDecision, { action: 'none' | 'hold' }> })[] = [];
  // decideReap has the last word on every row, so a row of the defer list it
  // takes still counts against the batch (the next pass gets the rest).
  const held: ReapCandidateRow[] = [];
  let takes = 0;
  let hold: ReaperReport['hold'];
  const callerHold = options.holdLostLeases;
  const withCallerHold = (c: ReapCandidate): ReapCandidate =>
    callerHold ? { ...c, holdUntil: Math.max(c.holdUntil ?? 0, at + config.heartbeatMs + config.graceMs), holdCause: callerHold.why } : c;
  for (const candidate of candidates) {
    const decision = decideReap(withCallerHold(withOwnerCheck(candidate)), at, config);
    if (decision.action === 'none') continue;
    if (decision.action !== 'defer' && ++takes > config.reaperBatchSize) continue;
    // After a server's gap, expired leases wait for their owners.
    if (decision.action === 'hold') {
      held.push(candidate);
      hold ??= { until: decision.until, why: decision.why };
    } else writes.push({ candidate, decision });
  }
  const [taken] = await Promise.all([
    store.jobsReapIfUnchanged({ now: at, writes, defaults: config }),
    hold ? store.jobsRecordHeld({ now: at, candidates: held, why: hold.why }) : undefined,
  ]);
  const report: ReaperReport = { requeued: [], failed: [], deferred: [], heldForOperator: [], held: held.map((c) => ({ id: String(c.id), reason: 'server_gap' })), raced: 0, ...(hold ? { hold } : {}) };
  for (const { candidate, decision } of writes) {
    const id = String(candidate.id);
    if (decision.action === 'defer') report.deferred.push({ id, reason: decision.reason, overdueMs: decision.overdueMs });
    else if (!taken.has(candidate.id)) report.raced++;
    else if (decision.action === 'requeue' && decision.held) report.heldForOperator.push({ id, reason: decision.reason });
    else if (decision.action === 'requeue') report.requeued.push({ id, reason: decision.reason });
    else report.failed.push({ id, reason: decision.reason });
    if (decision.action === 'defer' || taken.has(candidate.id)) {
      const overdue = decision.action === 'defer' ? { overdueMs: decision.overdueMs } : {};
      const action = decision.action === 'requeue' && decision.held ? 'hold_for_operator' : decision.action;
      options.onJob?.({ id, queue: candidate.queueName, workerId: candidate.lockedBy, action, reason: decision.reason, ...overdue });
    }
  }
  const requeuedByQueue = new Map<string, number>();
  for (const { candidate, decision } of writes) {
    // A held job is not claimable: nobody waits for it.
    if (decision.action === 'requeue' && !decision.held && taken.has(candidate.id)) requeuedByQueue.set(candidate.queueName, (requeuedByQueue.get(candidate.queueName) ?? 0) + 1);
  }
  for (const [queue, n] of requeuedByQueue) options.jobsBecameClaimable?.(queue, n);
  return report;
}
