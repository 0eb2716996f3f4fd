/** Prometheus text for /metrics. */
import type { MetricsSnapshot } from '../db/store/metrics.ts';

const label = (value: string | null) => JSON.stringify(value ?? '').replace(/\\u/g, '\\\\u');

export function prometheusText(m: MetricsSnapshot): string {
  const lines: string[] = [];
  const metric = (name: string, type: 'gauge' | 'counter', help: string, rows: [string, number][]) => {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const [labels, value] of rows) lines.push(`${name}${labels} ${value}`);
  };
  metric('leasehold_jobs', 'gauge', 'Jobs by queue and status.', m.jobs.map((r) => [`{queue=${label(r.queue)},status=${label(r.status)}}`, r.count]));
  metric('leasehold_expired_leases', 'gauge', 'Running jobs whose lease has expired (zombie candidates).', m.running.map((r) => [`{queue=${label(r.queue)}}`, r.expired ?? 0]));
  metric(
    'leasehold_oldest_running_job_age_seconds',
    'gauge',
    'Age of the oldest running job.',
    m.running.map((r) => [`{queue=${label(r.queue)}}`, r.oldestStartedAt === null ? 0 : (m.now - r.oldestStartedAt) / 1000]),
  );
  metric(
    'leasehold_heartbeat_lag_max_seconds',
    'gauge',
    'Longest time since a running job last heartbeated.',
    m.running.map((r) => [`{queue=${label(r.queue)}}`, (r.maxHeartbeatLagMs ?? 0) / 1000]),
  );
  const byType = (type: string) => m.events.filter((e) => e.type === type);
  metric('leasehold_stale_writes_rejected_total', 'counter', 'Writes refused because the lock token was stale.', [
    ['', byType('stale_write_rejected').reduce((s, e) => s + e.count, 0)],
  ]);
  metric('leasehold_enqueue_deduplicated_total', 'counter', 'Enqueues answered with an existing job (idempotency key).', [
    ['', byType('deduplicated').reduce((s, e) => s + e.count, 0)],
  ]);
  metric('leasehold_reaped_total', 'counter', 'Jobs taken back by the reaper, by reason.', byType('reaped').map((e) => [`{reason=${label(e.reason)}}`, e.count]));
  metric('leasehold_reap_deferred_total', 'counter', 'Reaper decisions deferred because the owner looked alive.', [
    ['', byType('reap_deferred').reduce((s, e) => s + e.count, 0)],
  ]);
  return lines.join('\n') + '\n';
}
