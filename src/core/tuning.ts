/**
 * Tuning (docs/dashboard.md, "Metrics"): a pure recommendation of lease, heartbeat
 * interval and grace per queue from one metrics snapshot, with the current
 * values beside them and the settings that break the lease rules flagged.
 *
 * The lag between consecutive heartbeats is not stored, so the heartbeat
 * delay is estimated as the worst current lag of a running job (now - last
 * heartbeat), never less than the configured interval. Only healthy jobs
 * count: a job whose owner looks dead (or restarted since the claim) is not
 * "normal jitter" but a crash, the reaper's business; learning from it would
 * stretch the lease and slow every recovery. Such jobs are reported apart
 * (`observed.ownerGoneJobs`). Reaper deferrals in the last hour (the lease
 * expired while the owner was alive) mean pauses longer than lease + grace
 * happened.
 *
 * With what-if tuning's evidence (src/core/what-if.ts, the last hour's) it
 * also learns from the pauses workers lived through: the longest event-loop
 * block a worker serving the queue reported, and the longest pause of an
 * attempt taken while its owner was alive (a false reap). Such a pause is
 * treated like the pauses deferrals reveal: the lease must outlast it by
 * the same factor, so a queue where a 4.5 s block lost a 2 s lease is told
 * a lease well above 4.5 s, not the 2 s its heartbeats alone suggest.
 *
 * @example
 *   const rows = recommendTuning(await metricsSnapshot(db, { now, config }), {}, evidence);
 */
import type { MetricsSnapshot, QueueMetrics } from './metrics-snapshot.ts';
import { checkQueueSettings, type QueueDefaults } from './config.ts';
import { observedPauses, type TuningEvidence } from './what-if.ts';

export interface TuningOptions {
  /** Clock skew allowed between servers, added to the grace. */
  clockSkewMs: number;
  /** Lease as a multiple of the observed heartbeat delay. */
  leaseDelayFactor: number;
}

export const DEFAULT_TUNING_OPTIONS: TuningOptions = { clockSkewMs: 1_000, leaseDelayFactor: 3 };

export interface TuningFlag {
  setting: 'leaseMs' | 'heartbeatMs' | 'graceMs' | string;
  severity: 'error' | 'warning';
  rule: string;
}

type LeaseSettings = Pick<QueueDefaults, 'leaseMs' | 'heartbeatMs' | 'graceMs'>;

export interface QueueTuning {
  queue: string;
  current: LeaseSettings;
  recommended: LeaseSettings;
  /** 'none': no running job, completed job or reaper event to learn from; recommended = current. */
  confidence: 'none' | 'low' | 'ok';
  observed: {
    runtimeP50Ms: number | null;
    runtimeP99Ms: number | null;
    completedLastHour: number;
    /** The worst current lag of a running job whose owner looks alive. */
    maxHeartbeatLagMs: number | null;
    /** Running jobs whose owner looks dead or restarted: not learned from. */
    ownerGoneJobs: number;
    /** max(heartbeat interval, worst current lag of a healthy job). */
    heartbeatDelayMs: number;
    /** How late past the interval the worst heartbeat is. */
    heartbeatJitterMs: number;
    reapDeferredLastHour: number;
    reapedLastHour: number;
    /** From the evidence (null: none, or no evidence given): the longest block a worker serving the queue reported. */
    longestBlockMs: number | null;
    /** The longest known pause of an attempt taken while its owner was alive, and how many such takes there were. */
    longestFalseReapPauseMs: number | null;
    falseReapsLastHour: number;
  };
  flags: TuningFlag[];
  notes: string[];
}

const ceilTo = (ms: number, step: number) => Math.ceil(ms / step) * step;

/** `evidence`: what-if tuning's, for the same hour (store.tuningEvidenceRead); without it the blocks and false reaps are not learned from. */
export function recommendTuning(m: MetricsSnapshot, options: Partial<TuningOptions> = {}, evidence?: TuningEvidence): QueueTuning[] {
  const o = { ...DEFAULT_TUNING_OPTIONS, ...options };
  return m.queues.map((q) => queueTuning(q, o, evidence));
}

function queueTuning(q: QueueMetrics, o: TuningOptions, evidence: TuningEvidence | undefined): QueueTuning {
  const s = q.settings;
  const current: LeaseSettings = { leaseMs: s.leaseMs, heartbeatMs: s.heartbeatMs, graceMs: s.graceMs };
  const lag = q.running.maxOwnerAliveLagMs;
  const delay = Math.max(s.heartbeatMs, lag ?? 0);
  const jitter = Math.max(0, delay - s.heartbeatMs);
  const deferred = q.reapDeferred.lastHour;
  const lived = evidence ? observedPauses(evidence, q.queue) : { longestBlockMs: null, longestFalseReapPauseMs: null, falseReaps: 0 };
  // The longest pause a live owner is known to have gone through (0: none known).
  const livedPause = Math.max(lived.longestBlockMs ?? 0, lived.longestFalseReapPauseMs ?? 0);
  const samples = q.running.ownerAliveJobs + (q.runtime?.count ?? 0) + deferred + q.reapedTotal.lastHour + lived.falseReaps + (livedPause > 0 ? 1 : 0);
  const confidence: QueueTuning['confidence'] = samples === 0 ? 'none' : samples < 10 ? 'low' : 'ok';

  const flags: TuningFlag[] = [];
  const notes: string[] = [];
  // The hard rules, as the server checks them at start and on PATCH settings.
  const rules = checkQueueSettings(s, (key) => key);
  for (const e of rules.errors) flags.push({ setting: e.setting, severity: 'error', rule: e.rule });
  for (const w of rules.warnings) flags.push({ setting: w.setting, severity: 'warning', rule: w.rule });

  // Observed: the lease must sit well above normal pauses.
  if (delay * 2 > s.leaseMs) {
    flags.push({ setting: 'leaseMs', severity: 'warning', rule: `is under twice the observed heartbeat delay (${delay} ms): a normal pause can lose the lease` });
  }
  if (deferred > 0) {
    flags.push({ setting: 'leaseMs', severity: 'warning', rule: `leases expired while their owners were alive ${deferred} times in the last hour: pauses exceed lease + grace` });
  }
  if (livedPause > 0 && livedPause * 2 > s.leaseMs) {
    const what = (lived.longestBlockMs ?? 0) >= livedPause ? `a worker serving it reported an event-loop block of ${livedPause} ms` : `an attempt was taken while its owner was alive, after a pause of ${livedPause} ms`;
    flags.push({ setting: 'leaseMs', severity: 'warning', rule: `is under twice the longest pause seen in the last hour (${what}): such a pause loses the lease` });
  }
  // Grace must cover a late heartbeat plus clock skew.
  if (s.graceMs < s.heartbeatMs + jitter + o.clockSkewMs) {
    flags.push({ setting: 'graceMs', severity: 'warning', rule: `is under the heartbeat delay plus clock skew (${s.heartbeatMs + jitter} + ${o.clockSkewMs} ms)` });
  }

  let recommended = current;
  if (confidence !== 'none') {
    // Pauses seen by the reaper: at least lease + grace long.
    // Pauses a live owner went through (blocks, false reaps): as long as they were.
    const pause = Math.max(deferred > 0 ? Math.max(delay, s.leaseMs + s.graceMs) : delay, livedPause);
    const leaseMs = ceilTo(Math.max(1_000, pause * o.leaseDelayFactor), 1_000);
    const heartbeatMs = Math.max(100, Math.floor(Math.min(s.heartbeatMs, leaseMs / 3) / 100) * 100);
    const graceMs = ceilTo(heartbeatMs + jitter + o.clockSkewMs, 1_000);
    recommended = { leaseMs, heartbeatMs, graceMs };
    const p99 = q.runtime?.p99Ms;
    if (p99 !== undefined && p99 < leaseMs) notes.push(`p99 runtime (${p99} ms) is under the recommended lease: most jobs finish before their first renewal is due`);
    if (p99 !== undefined && p99 >= leaseMs) notes.push(`p99 runtime (${p99} ms) is at least the recommended lease: those jobs depend on heartbeats to keep it`);
  } else {
    notes.push('nothing observed yet (no running job, completed job or reaper event in the last hour): keeping the current values');
  }
  if (q.running.ownerGoneJobs > 0) {
    notes.push(`${q.running.ownerGoneJobs} running jobs belong to workers that look dead or restarted: left to the reaper, not learned from`);
  }
  if (recommended.leaseMs > s.leaseMs) notes.push(`raise the lease to ${recommended.leaseMs} ms`);
  else if (recommended.leaseMs < s.leaseMs) notes.push(`the lease could drop to ${recommended.leaseMs} ms, so dead workers' jobs run again sooner`);

  return {
    queue: q.queue,
    current,
    recommended,
    confidence,
    observed: {
      runtimeP50Ms: q.runtime?.p50Ms ?? null,
      runtimeP99Ms: q.runtime?.p99Ms ?? null,
      completedLastHour: q.runtime?.count ?? 0,
      maxHeartbeatLagMs: lag,
      ownerGoneJobs: q.running.ownerGoneJobs,
      heartbeatDelayMs: delay,
      heartbeatJitterMs: jitter,
      reapDeferredLastHour: deferred,
      reapedLastHour: q.reapedTotal.lastHour,
      longestBlockMs: lived.longestBlockMs,
      longestFalseReapPauseMs: lived.longestFalseReapPauseMs,
      falseReapsLastHour: lived.falseReaps,
    },
    flags,
    notes,
  };
}
