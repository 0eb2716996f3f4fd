/** Prometheus text for /metrics. */
import { evaluateAlerts } from '../core/alerts.ts';
import type { MetricsSnapshot } from '../db/store/metrics.ts';

const label = (value: string | null) => JSON.stringify(value ?? '').replace(/\\u/g, '\\\\u');

export function prometheusText(m: MetricsSnapshot): string {
  const lines: string[] = [];
  const metric = (name: string, type: 'gauge' | 'counter', help: string, rows: [string, number][]) => {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const [labels, value] of rows) lines.push(`${name}${labels} ${value}`);
  };
  const busy = m.queues.filter((r) => r.running.count > 0);
  const sum = (pick: (r: (typeof m.queues)[number]) => number) => m.queues.reduce((s, r) => s + pick(r), 0);
  metric(
    'leasehold_jobs',
    'gauge',
    'Jobs by queue and status.',
    m.queues.flatMap((r) => Object.entries(r.counts).filter(([, n]) => n > 0).map(([status, n]) => [`{queue=${label(r.queue)},status=${label(status)}}`, n] as [string, number])),
  );
  metric('leasehold_expired_leases', 'gauge', 'Running jobs whose lease has expired (zombie candidates).', busy.map((r) => [`{queue=${label(r.queue)}}`, r.running.expiredLeases]));
  metric('leasehold_oldest_running_job_age_seconds', 'gauge', 'Age of the oldest running job.', busy.map((r) => [`{queue=${label(r.queue)}}`, (r.running.oldestAgeMs ?? 0) / 1000]));
  metric('leasehold_heartbeat_lag_max_seconds', 'gauge', 'Longest time since a running job last heartbeated.', busy.map((r) => [`{queue=${label(r.queue)}}`, (r.running.maxHeartbeatLagMs ?? 0) / 1000]));
  // Counters: all retained events, summed over queues.
  metric('leasehold_stale_writes_rejected_total', 'counter', 'Writes refused because the lock token was stale.', [['', sum((r) => r.staleWritesRejected.total)]]);
  metric('leasehold_enqueue_deduplicated_total', 'counter', 'Enqueues answered with an existing job (idempotency key).', [['', sum((r) => r.dedupHits.total)]]);
  const reapedByReason = new Map<string, number>();
  for (const r of m.queues) for (const [reason, w] of Object.entries(r.reaped)) reapedByReason.set(reason, (reapedByReason.get(reason) ?? 0) + w.total);
  metric('leasehold_reaped_total', 'counter', 'Jobs taken back by the reaper, by reason.', [...reapedByReason].map(([reason, n]) => [`{reason=${label(reason)}}`, n]));
  metric('leasehold_reap_deferred_total', 'counter', 'Reaper decisions deferred because the owner looked alive.', [['', sum((r) => r.reapDeferred.total)]]);
  const q = (name: string) => `queue=${label(name)}`;
  metric('leasehold_running_jobs', 'gauge', 'Running jobs.', m.queues.map((r) => [`{${q(r.queue)}}`, r.running.count]));
  lines.push('# HELP leasehold_heartbeat_lag_seconds Time since each running job last heartbeated.', '# TYPE leasehold_heartbeat_lag_seconds histogram');
  for (const r of m.queues) {
    for (const b of r.running.heartbeatLagBuckets) {
      lines.push(`leasehold_heartbeat_lag_seconds_bucket{${q(r.queue)},le="${b.leMs === null ? '+Inf' : b.leMs / 1000}"} ${b.count}`);
    }
    lines.push(`leasehold_heartbeat_lag_seconds_sum{${q(r.queue)}} ${r.running.heartbeatLagSumMs / 1000}`);
    lines.push(`leasehold_heartbeat_lag_seconds_count{${q(r.queue)}} ${r.running.count}`);
  }
  const windowed = (name: string, help: string, rows: [string, { last5m: number; lastHour: number }][]) =>
    metric(
      name,
      'gauge',
      help,
      rows.flatMap(([labels, w]) => [
        [`{${labels},window="5m"}`, w.last5m],
        [`{${labels},window="1h"}`, w.lastHour],
      ]),
    );
  windowed(
    'leasehold_reaped_recent',
    'Jobs taken back by the reaper in the last 5 minutes / hour, by queue and reason.',
    m.queues.flatMap((r) => Object.entries(r.reaped).map(([reason, w]) => [`${q(r.queue)},reason=${label(reason)}`, w] as [string, typeof w])),
  );
  windowed('leasehold_stale_writes_rejected_recent', 'Stale writes rejected in the last 5 minutes / hour.', m.queues.map((r) => [q(r.queue), r.staleWritesRejected]));
  windowed('leasehold_enqueue_deduplicated_recent', 'Enqueue dedup hits in the last 5 minutes / hour.', m.queues.map((r) => [q(r.queue), r.dedupHits]));
  metric('leasehold_ready_jobs', 'gauge', 'Pending jobs due now (queue depth).', m.queues.map((r) => [`{${q(r.queue)}}`, r.ready]));
  metric('leasehold_oldest_ready_job_age_seconds', 'gauge', 'How long the oldest ready job has waited.', m.queues.map((r) => [`{${q(r.queue)}}`, (r.oldestReadyAgeMs ?? 0) / 1000]));
  metric('leasehold_active_workers', 'gauge', 'Workers seen within the worker-alive window.', [['', m.workers.active]]);
  metric('leasehold_busy_workers', 'gauge', 'Distinct workers holding a running job, by queue.', m.queues.map((r) => [`{${q(r.queue)}}`, r.running.busyWorkers]));
  metric('leasehold_serving_workers', 'gauge', 'Live workers that serve the queue (report it, or hold one of its jobs).', m.queues.map((r) => [`{${q(r.queue)}}`, r.servingWorkers]));
  metric('leasehold_heartbeat_late_jobs', 'gauge', 'Running jobs of live workers not heartbeated for over the heartbeat_lag factor x interval.', m.queues.map((r) => [`{${q(r.queue)}}`, r.running.lateJobs]));
  metric('leasehold_owner_gone_jobs', 'gauge', 'Running jobs whose worker looks dead or restarted since the claim (the reaper takes them back).', m.queues.map((r) => [`{${q(r.queue)}}`, r.running.ownerGoneJobs]));
  metric(
    'leasehold_finished_jobs_by_attempts',
    'gauge',
    'Jobs finished in the last hour, by attempts taken.',
    m.queues.flatMap((r) => r.attempts.histogram.map((h) => [`{${q(r.queue)},attempts="${h.attempts}"}`, h.count] as [string, number])),
  );
  metric(
    'leasehold_finished_attempts_recent',
    'gauge',
    'Attempts of jobs finished in the last hour, lost (worker gone) vs errored.',
    m.queues.flatMap((r) => [
      [`{${q(r.queue)},kind="lost"}`, r.attempts.lostAttempts],
      [`{${q(r.queue)},kind="errored"}`, r.attempts.erroredAttempts],
    ]),
  );
  metric(
    'leasehold_job_runtime_seconds',
    'gauge',
    'Runtime percentiles of jobs completed in the last hour (completed_at - started_at).',
    m.queues.flatMap((r) =>
      r.runtime
        ? ([
            [`{${q(r.queue)},quantile="0.5"}`, r.runtime.p50Ms / 1000],
            [`{${q(r.queue)},quantile="0.95"}`, r.runtime.p95Ms / 1000],
            [`{${q(r.queue)},quantile="0.99"}`, r.runtime.p99Ms / 1000],
          ] as [string, number][])
        : [],
    ),
  );
  // The same alerts as GET /api/v1/alerts (each queue's thresholds), for
  // Prometheus rules that would rather not re-derive them.
  metric(
    'leasehold_alert_firing',
    'gauge',
    'Whether each alert is firing (1) or not (0), by queue and alert.',
    evaluateAlerts(m).map((a) => [`{${q(a.queue)},alert=${label(a.name)}}`, a.state === 'firing' ? 1 : 0]),
  );
  return lines.join('\n') + '\n';
}
