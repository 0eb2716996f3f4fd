/**
 * Alerts (docs/dashboard.md, "Alerts"): a pure evaluation of one metrics snapshot
 * against thresholds. No state is kept here, so every call says which alerts
 * fire now; the reaper's alert pass (src/maintenance/alerts.ts) remembers them in
 * alert_states to tell "started firing" and "cleared" to the webhook.
 *
 * Thresholds: DEFAULT_ALERT_THRESHOLDS (the server's), then the queue's own
 * (queues.alert_thresholds, set through PUT /api/v1/queues/:queue/alerts or
 * the dashboard), field by field: effectiveAlertThresholds.
 *
 * @example
 *   const alerts = evaluateAlerts(await metricsSnapshot(db, { now, config }));
 *   alerts.filter((a) => a.state === 'firing');
 */
import { DEFAULT_ALERT_THRESHOLDS, type AlertThresholds } from './alert-thresholds.ts';
import type { MetricsSnapshot, QueueMetrics } from './metrics-snapshot.ts';
import { suspectThreshold } from './suspect.ts';

export { ALERT_THRESHOLD_LIMITS, DEFAULT_ALERT_THRESHOLDS, parseQueueAlertThresholds, type AlertThresholds } from './alert-thresholds.ts';

export type AlertName = 'heartbeat_lag' | 'long_running' | 'reaper_burst' | 'enqueue_dedup_rate' | 'stale_write_rate' | 'pending_backlog' | 'duplicate_executions' | 'stalled_jobs' | 'held_jobs';

export interface Alert {
  name: AlertName;
  queue: string;
  state: 'firing' | 'ok';
  /** The measured value (ms, count or per-minute rate, see `unit`); null when there is nothing to measure. */
  value: number | null;
  threshold: number;
  unit: 'ms' | 'count' | 'per_minute';
  message: string;
  /** The thresholds this queue overrides (empty: the server's for all). */
  overridden: (keyof AlertThresholds)[];
}

/** Every alert for every queue, firing or ok, in a stable order (queue, then name). */
export function evaluateAlerts(m: MetricsSnapshot): Alert[] {
  return m.queues.flatMap((q) => queueAlerts(m, q, effectiveAlertThresholds(q.alertOverrides)));
}

/** The thresholds a queue's alerts use: the server's, with the queue's own overrides on top. */
export function effectiveAlertThresholds(queueOverrides: Partial<AlertThresholds>): AlertThresholds {
  return { ...DEFAULT_ALERT_THRESHOLDS, ...queueOverrides };
}

/** Which thresholds each alert reads, to say whether its queue overrides them. */
const READS: Record<AlertName, (keyof AlertThresholds)[]> = {
  heartbeat_lag: ['heartbeatLagFactor', 'heartbeatLateJobs', 'heartbeatLateShare'],
  long_running: ['longRunningP99Factor', 'longRunningLeaseFactor'],
  reaper_burst: ['reapsPer5m', 'reapClaimRatio', 'reapRatioMinClaims'],
  enqueue_dedup_rate: ['rateRiseFactor', 'rateMinEvents'],
  stale_write_rate: ['rateRiseFactor', 'rateMinEvents'],
  pending_backlog: ['pendingAgeMs'],
  duplicate_executions: ['duplicateExecutionsPer5m'],
  // Its threshold is the queue's stallMs setting (PATCH /queues/:queue/settings), not an alert threshold.
  stalled_jobs: [],
  // Any held job fires it: a person has to decide.
  held_jobs: [],
};

function queueAlerts(m: MetricsSnapshot, q: QueueMetrics, t: AlertThresholds): Alert[] {
  const alerts: Alert[] = [];
  const add = (name: AlertName, firing: boolean, value: number | null, threshold: number, unit: Alert['unit'], message: string) =>
    alerts.push({
      name,
      queue: q.queue,
      state: firing ? 'firing' : 'ok',
      value,
      threshold,
      unit,
      message,
      overridden: READS[name].filter((k) => q.alertOverrides[k] !== undefined),
    });

  // Held jobs (onLost 'hold'): a lost attempt waits for a person, so any one
  // fires. Evaluated only for a queue that holds (its setting, or a job's
  // own onLost held one), so queues that never hold show no such row.
  if (q.onLost === 'hold' || q.held > 0) {
    add(
      'held_jobs',
      q.held > 0,
      q.held,
      1,
      'count',
      q.held > 0
        ? `${q.held} ${q.held === 1 ? 'job is' : 'jobs are'} held after a lost attempt (onLost 'hold'): ${q.held === 1 ? 'it runs' : 'they run'} again only when a person releases, completes or fails ${q.held === 1 ? 'it' : 'them'} (GET /api/v1/held-jobs, the zombies page)`
        : 'no job is held for a person',
    );
  }

  // Heartbeat lag spike: late jobs of workers that look alive. A live
  // worker that cannot renew will lose its leases (and its jobs may run
  // twice); a dead worker's job is the reaper's business (reaper_burst
  // watches how much it takes back), so it never pages by itself.
  {
    const r = q.running;
    const lateAfter = q.settings.heartbeatMs * t.heartbeatLagFactor;
    const share = r.ownerAliveJobs > 0 ? r.lateJobs / r.ownerAliveJobs : 0;
    const byCount = r.lateJobs >= t.heartbeatLateJobs;
    const byShare = r.lateJobs > 0 && share >= t.heartbeatLateShare;
    const gone = r.ownerGoneJobs > 0 ? `; ${r.ownerGoneJobs} running jobs belong to workers that look dead or restarted (left to the reaper)` : '';
    const named = r.lateJobIds.length < r.lateJobs ? `${r.lateJobIds.join(', ')} and ${r.lateJobs - r.lateJobIds.length} more` : r.lateJobIds.join(', ');
    add(
      'heartbeat_lag',
      byCount || byShare,
      r.lateJobs,
      t.heartbeatLateJobs,
      'count',
      r.lateJobs === 0
        ? `running jobs of live workers heartbeat on time${gone}`
        : `${r.lateJobs} of ${r.ownerAliveJobs} running jobs of live workers (${Math.round(share * 100)}%) have not heartbeated for over ${lateAfter} ms (${t.heartbeatLagFactor} heartbeat intervals): jobs ${named}${
            byCount || byShare ? '' : ` (fires at ${t.heartbeatLateJobs} jobs or ${Math.round(t.heartbeatLateShare * 100)}%)`
          }${gone}`,
    );
  }

  // Oldest running job far beyond normal runtime: the suspect rule's
  // threshold (src/core/suspect.ts), so the alert fires exactly when the
  // zombies page can show a job past it. It names the suspect ones (lease
  // live: a handler that never returns while its heartbeat runs, which the
  // reaper leaves until the deadline); a job whose lease lapsed is the
  // reaper's, and counts here only as the oldest.
  {
    const { afterMs: threshold, basis } = suspectThreshold({ runtime: q.runtime, leaseMs: q.settings.leaseMs, thresholds: t });
    const age = q.running.oldestAgeMs;
    const firing = age !== null && age > threshold;
    const s = q.running.suspect;
    const more = s.count > s.ids.length ? ` and ${s.count - s.ids.length} more` : '';
    const suspects =
      s.count > 0
        ? `; ${s.count} ${s.count === 1 ? 'is' : 'are'} suspect (heartbeating, so the reaper leaves ${s.count === 1 ? 'it' : 'them'} until the deadline): jobs ${s.ids.join(', ')}${more}`
        : '';
    add('long_running', firing, age, threshold, 'ms', firing ? `the oldest running job has run ${age} ms, over ${basis} = ${threshold} ms${suspects}` : `no running job is older than ${basis} = ${threshold} ms`);
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

  // Enqueue-dedup / stale-write rate rising: the 5-minute rate against the hour's.
  for (const [name, w, what] of [
    ['enqueue_dedup_rate', q.enqueueDeduplicated, 'enqueues deduplicated'],
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

  // Duplicate executions: a count, not a rise against the hour (a steady
  // stream of duplicates is no better). The default leaves room for one dead
  // worker's few jobs, which the reaper handles; set 0 to hear of any. The
  // duplicates handlers report (found downstream) count with the ones
  // leasehold sees: both are work done twice.
  {
    const seen = q.duplicateExecutions;
    const reported = q.duplicatesReported;
    const last5m = seen.last5m + reported.last5m;
    const firing = last5m > t.duplicateExecutionsPer5m;
    add(
      'duplicate_executions',
      firing,
      last5m,
      t.duplicateExecutionsPer5m,
      'count',
      firing
        ? `${seen.last5m} jobs ran again in 5 minutes after being taken back while their worker may still have been running them, and handlers reported ${reported.last5m} duplicates found downstream (${last5m} in all, over ${t.duplicateExecutionsPer5m}; ${seen.lastHour + reported.lastHour} in the hour)`
        : `${last5m} duplicate executions in 5 minutes (${reported.last5m} reported by handlers)`,
    );
  }

  // Pending piling up. Judged by the workers that serve this queue (they
  // report their queues), not by any worker anywhere: a queue nobody
  // consumes says so, whatever other queues' workers do.
  {
    const age = q.oldestReadyAgeMs;
    const firing = !q.paused && q.ready > 0 && age !== null && age > t.pendingAgeMs;
    const others = m.workers.active - q.servingWorkers;
    const nobody = `nobody consumes this queue: no live worker reports it or holds one of its jobs${
      others > 0 ? ` (${others} live workers serve other queues)` : m.workers.active === 0 ? ' (no worker looks alive at all)' : ''
    }`;
    add(
      'pending_backlog',
      firing,
      age,
      t.pendingAgeMs,
      'ms',
      q.paused
        ? 'the queue is paused'
        : firing
          ? q.servingWorkers > 0
            ? `${q.ready} ready jobs, the oldest waiting ${age} ms, while ${q.servingWorkers} workers serving this queue look alive`
            : `${q.ready} ready jobs, the oldest waiting ${age} ms: ${nobody}`
          : q.ready > 0 && q.servingWorkers === 0
            ? `${q.ready} ready jobs; ${nobody}`
            : `${q.ready} ready jobs`,
    );
  }
  // Jobs heartbeating without progress past the queue's stallMs: a hung
  // handler whose heartbeat timer still runs. Fires while any exist.
  {
    const stalled = q.running.stalled;
    const firing = stalled.count > 0;
    const more = stalled.count > stalled.ids.length ? ` and ${stalled.count - stalled.ids.length} more` : '';
    add(
      'stalled_jobs',
      firing,
      stalled.count,
      0,
      'count',
      firing
        ? `${stalled.count} running ${stalled.count === 1 ? 'job heartbeats' : 'jobs heartbeat'} without progress past the queue's stall limit: ${stalled.ids.join(', ')}${more}`
        : 'no running job is stalled',
    );
  }
  return alerts;
}

const round = (x: number) => Math.round(x * 1000) / 1000;
