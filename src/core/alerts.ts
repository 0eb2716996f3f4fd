/**
 * Alerts (DESIGN section 7): a pure evaluation of one metrics snapshot
 * against thresholds. No state is kept between evaluations, so every call
 * says which alerts fire now; "started firing" / "cleared" transitions (for a
 * webhook) would need remembered state and are not done here.
 *
 * Thresholds are server-wide: DEFAULT_ALERT_THRESHOLDS, overridden by the
 * caller (e.g. server config). Per-queue thresholds are not stored yet.
 *
 * @example
 *   const alerts = evaluateAlerts(await metricsSnapshot(db, { now, config }));
 *   alerts.filter((a) => a.state === 'firing');
 */
import type { MetricsSnapshot, QueueMetrics } from '../db/store/metrics.ts';

export interface AlertThresholds {
  /** heartbeat_lag fires when the worst running job's lag exceeds this many heartbeat intervals. */
  heartbeatLagFactor: number;
  /** long_running fires when the oldest running job is older than max(p99 runtime x this, lease). */
  longRunningP99Factor: number;
  /** Without runtime history: older than this many leases. */
  longRunningLeaseFactor: number;
  /** reaper_burst fires above this many reaps in 5 minutes ... */
  reapsPer5m: number;
  /** ... or when reaps are more than this share of claims in 5 minutes ... */
  reapClaimRatio: number;
  /** ... once there are at least this many claims to judge by. */
  reapRatioMinClaims: number;
  /** dedup_rate / stale_write_rate fire when the 5-minute rate is this many times the hour's ... */
  rateRiseFactor: number;
  /** ... and there were at least this many in the 5 minutes. */
  rateMinEvents: number;
  /** pending_backlog fires when the oldest ready job has waited this long while workers are alive. */
  pendingAgeMs: number;
}

export const DEFAULT_ALERT_THRESHOLDS: AlertThresholds = {
  heartbeatLagFactor: 3,
  longRunningP99Factor: 3,
  longRunningLeaseFactor: 10,
  reapsPer5m: 10,
  reapClaimRatio: 0.2,
  reapRatioMinClaims: 10,
  rateRiseFactor: 2,
  rateMinEvents: 5,
  pendingAgeMs: 60_000,
};

export type AlertName = 'heartbeat_lag' | 'long_running' | 'reaper_burst' | 'dedup_rate' | 'stale_write_rate' | 'pending_backlog';

export interface Alert {
  name: AlertName;
  queue: string;
  state: 'firing' | 'ok';
  /** The measured value (ms, count or per-minute rate, see `unit`); null when there is nothing to measure. */
  value: number | null;
  threshold: number;
  unit: 'ms' | 'count' | 'per_minute';
  message: string;
}

/** Every alert for every queue, firing or ok, in a stable order (queue, then name). */
export function evaluateAlerts(m: MetricsSnapshot, overrides: Partial<AlertThresholds> = {}): Alert[] {
  const t = { ...DEFAULT_ALERT_THRESHOLDS, ...overrides };
  return m.queues.flatMap((q) => queueAlerts(m, q, t));
}

function queueAlerts(m: MetricsSnapshot, q: QueueMetrics, t: AlertThresholds): Alert[] {
  const alerts: Alert[] = [];
  const add = (name: AlertName, firing: boolean, value: number | null, threshold: number, unit: Alert['unit'], message: string) =>
    alerts.push({ name, queue: q.queue, state: firing ? 'firing' : 'ok', value, threshold, unit, message });

  // Heartbeat lag spike.
  {
    const threshold = q.settings.heartbeatMs * t.heartbeatLagFactor;
    const lag = q.running.maxHeartbeatLagMs;
    const firing = lag !== null && lag > threshold;
    add('heartbeat_lag', firing, lag, threshold, 'ms', firing ? `a running job has not heartbeated for ${lag} ms (over ${t.heartbeatLagFactor} heartbeat intervals)` : 'running jobs heartbeat on time');
  }

  // Oldest running job far beyond normal runtime.
  {
    const p99 = q.runtime?.p99Ms;
    const threshold = p99 !== undefined ? Math.max(p99 * t.longRunningP99Factor, q.settings.leaseMs) : q.settings.leaseMs * t.longRunningLeaseFactor;
    const age = q.running.oldestAgeMs;
    const firing = age !== null && age > threshold;
    const basis = p99 !== undefined ? `max(${t.longRunningP99Factor} x p99 runtime ${p99} ms, lease)` : `${t.longRunningLeaseFactor} leases (no completed jobs in the last hour)`;
    add('long_running', firing, age, threshold, 'ms', firing ? `the oldest running job has run ${age} ms, over ${basis}` : `no running job is older than ${basis}`);
  }

  // Reaper taking back too much too fast.
  {
    const reaps = q.reapedTotal.last5m;
    const claims = q.claimsApprox.last5m;
    const ratio = claims > 0 ? reaps / claims : 0;
    const tooMany = reaps > t.reapsPer5m;
    const tooLarge = claims >= t.reapRatioMinClaims && ratio > t.reapClaimRatio;
    add(
      'reaper_burst',
      tooMany || tooLarge,
      reaps,
      t.reapsPer5m,
      'count',
      tooMany
        ? `the reaper took back ${reaps} jobs in 5 minutes (over ${t.reapsPer5m})`
        : tooLarge
          ? `the reaper took back ${reaps} of about ${claims} claims in 5 minutes (over ${Math.round(t.reapClaimRatio * 100)}%)`
          : `${reaps} reaps in 5 minutes`,
    );
  }

  // Dedup / stale-write rate rising: the 5-minute rate against the hour's.
  for (const [name, w, what] of [
    ['dedup_rate', q.dedupHits, 'enqueue dedup hits'],
    ['stale_write_rate', q.staleWritesRejected, 'stale writes rejected'],
  ] as const) {
    const shortMin = m.windows.shortMs / 60_000;
    const longMin = m.windows.longMs / 60_000;
    const rate = w.last5m / shortMin;
    const baseline = w.lastHour / longMin;
    const threshold = baseline * t.rateRiseFactor;
    const firing = w.last5m >= t.rateMinEvents && rate > threshold;
    add(name, firing, round(rate), round(threshold), 'per_minute', firing ? `${what}: ${round(rate)}/min in the last 5 minutes, over ${t.rateRiseFactor} x the hour's ${round(baseline)}/min` : `${what}: ${round(rate)}/min in the last 5 minutes`);
  }

  // Pending piling up while workers look alive.
  {
    const age = q.oldestReadyAgeMs;
    const firing = !q.paused && q.ready > 0 && age !== null && age > t.pendingAgeMs && m.workers.active > 0;
    add(
      'pending_backlog',
      firing,
      age,
      t.pendingAgeMs,
      'ms',
      firing
        ? `${q.ready} ready jobs, the oldest waiting ${age} ms, while ${m.workers.active} workers look alive`
        : q.paused
          ? 'the queue is paused'
          : m.workers.active === 0 && q.ready > 0
            ? `${q.ready} ready jobs but no worker looks alive`
            : `${q.ready} ready jobs`,
    );
  }
  return alerts;
}

const round = (x: number) => Math.round(x * 1000) / 1000;
