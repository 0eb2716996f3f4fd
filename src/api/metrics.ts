/**
 * Prometheus text for /metrics. Every `_total` is a counter that never goes
 * down (durable counters, not counts of retained events); the histograms are
 * durable too (src/core/histograms.ts), their cumulative `_bucket` series
 * added up here from the stored per-bucket counts; snapshots are gauges,
 * with no `le` or `quantile` label (those belong to histograms and
 * summaries); every known queue reports every per-queue series, 0 included.
 * `promtool check metrics` passes on it (test/api/prometheus-lint.test.ts).
 *
 * Label values that come from users (a job's group: any text) are bounded
 * in number: per queue, the GROUP_SERIES_PER_QUEUE busiest groups are named
 * and every other group is summed under group="__other__", so the series of
 * a queue stay few however many tenants it serves.
 */
import { evaluateAlerts } from '../core/alerts.ts';
import type { Config } from '../core/config.ts';
import { HISTOGRAMS, HISTOGRAM_NAMES } from '../core/histograms.ts';
import { LATE_AFTER_INTERVALS, snapshotMaintenanceVerdict } from '../core/maintenance-watch.ts';
import type { MetricsSnapshot, QueueGroupCounts, ScheduleRecord } from '../db/store/port.ts';
import { OWNER_CHECK_REFUSALS } from '../maintenance/owner-check.ts';

/** The groups named per queue in leasehold_group_jobs; the rest are summed under OTHER_GROUP. */
export const GROUP_SERIES_PER_QUEUE = 20;
/** The label value of every group of a queue past its busiest GROUP_SERIES_PER_QUEUE. */
export const OTHER_GROUP = '__other__';

/**
 * A quoted label value as the text format reads it: backslash, double quote
 * and line feed escaped, every other character as it is. (JSON's escapes,
 * `\t` or `\u0001`, are not in the format: a parser refuses them.)
 */
const label = (value: string | null) => `"${(value ?? '').replace(/[\\"\n]/g, (ch) => (ch === '\n' ? '\\n' : `\\${ch}`))}"`;

/** `config.reaperIntervalMs`: how often a pass is meant to run, for leasehold_maintenance_late (the default interval without it). */
export function prometheusText(
  m: MetricsSnapshot,
  config: Pick<Config, 'reaperIntervalMs'> = { reaperIntervalMs: 5_000 },
  /** Each schedule's skip counters (operators create schedules, so the label set stays small); absent: the series is left out. */
  schedules?: readonly Pick<ScheduleRecord, 'name' | 'skipped_missed' | 'skipped_overlap'>[],
  /** Each queue's busiest groups (at most GROUP_SERIES_PER_QUEUE) and the rest summed (store queuesGroupCounts); absent: the group series are left out. */
  groups?: readonly QueueGroupCounts[],
): string {
  const lines: string[] = [];
  const metric = (name: string, type: 'gauge' | 'counter' | 'histogram', help: string, rows: [string, number][]) => {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const [labels, value] of rows) lines.push(`${name}${labels} ${value}`);
  };
  if (schedules) {
    metric(
      'leasehold_schedule_skipped_total',
      'counter',
      "Occurrences of a schedule not run, by why: missed (its catch-up policy left it behind) or overlap (an earlier occurrence's job was still pending or running).",
      schedules.flatMap((s) => [[`{schedule=${label(s.name)},reason="missed"}`, s.skipped_missed] as [string, number], [`{schedule=${label(s.name)},reason="overlap"}`, s.skipped_overlap] as [string, number]]),
    );
  }
  const q = (name: string) => `queue=${label(name)}`;
  const perQueue = (name: string, type: 'gauge' | 'counter', help: string, pick: (r: (typeof m.queues)[number]) => number) =>
    metric(name, type, help, m.queues.map((r) => [`{${q(r.queue)}}`, pick(r)]));
  // Gauges: what is true now. Every known queue has every series (0 rather
  // than nothing), so a rule or a graph can tell "none" from "no data".
  metric(
    'leasehold_jobs',
    'gauge',
    'Jobs by queue and status.',
    m.queues.flatMap((r) => Object.entries(r.counts).map(([status, n]) => [`{${q(r.queue)},status=${label(status)}}`, n] as [string, number])),
  );
  perQueue('leasehold_expired_leases', 'gauge', 'Running jobs whose lease has expired (zombie candidates).', (r) => r.running.expiredLeases);
  // Read now from the database's clock, not counted by the reaper: it rises
  // while no reaper runs (leasehold_maintenance_last_pass_timestamp_seconds).
  perQueue(
    'leasehold_expired_leases_past_grace',
    'gauge',
    "Running jobs whose lease + grace has passed, read now: the reaper's to take back (or to defer while the owner reports in).",
    (r) => r.running.expiredPastGrace,
  );
  perQueue(
    'leasehold_suspect_jobs',
    'gauge',
    "Running jobs with a live lease that have run longer than max(k x p99 runtime, lease) of their queue (the long_running threshold): a handler that may never return while its heartbeat runs.",
    (r) => r.running.suspect.count,
  );
  perQueue('leasehold_oldest_running_job_age_seconds', 'gauge', 'Age of the oldest running job (0 when none runs).', (r) => (r.running.oldestAgeMs ?? 0) / 1000);
  perQueue('leasehold_queue_rate_limited', 'gauge', "1 while the queue's rate limit holds claims back (this window's claims are spent), else 0.", (r) => (r.rateLimitedUntil === null ? 0 : 1));
  perQueue(
    'leasehold_queue_rate_limit_wait_seconds',
    'gauge',
    "Seconds until the queue's rate limit lets claims through again (0 when it does now).",
    (r) => (r.rateLimitedUntil === null ? 0 : Math.max(0, r.rateLimitedUntil - m.now) / 1000),
  );
  perQueue('leasehold_heartbeat_lag_max_seconds', 'gauge', 'Longest time since a running job last heartbeated (0 when none runs).', (r) => (r.running.maxHeartbeatLagMs ?? 0) / 1000);

  // Counters: the durable counters table (drizzle/0006), counted as each
  // transition happens and never pruned, so none of them ever goes down.
  perQueue('leasehold_jobs_enqueued_total', 'counter', 'Jobs enqueued (a deduplicated enqueue is not a new job).', (r) => r.jobsTotal.enqueued);
  perQueue('leasehold_jobs_claimed_total', 'counter', 'Claims: jobs handed to a worker (each attempt counts).', (r) => r.jobsTotal.claimed);
  perQueue('leasehold_jobs_completed_total', 'counter', 'Jobs completed.', (r) => r.jobsTotal.completed);
  perQueue('leasehold_jobs_failed_total', 'counter', 'Jobs failed for good (by their worker, the reaper or a deadline).', (r) => r.jobsTotal.failed);
  perQueue('leasehold_jobs_cancelled_total', 'counter', 'Jobs cancelled by an operator.', (r) => r.jobsTotal.cancelled);
  perQueue('leasehold_jobs_retried_total', 'counter', 'Jobs put back to run again after an errored attempt, or by an operator retry.', (r) => r.jobsTotal.retried);
  perQueue('leasehold_jobs_dead_lettered_total', 'counter', "Jobs of the queue that failed for good and were listed in its dead-letter queue (counted in failed too).", (r) => r.jobsTotal.deadLettered);
  perQueue('leasehold_jobs_snoozed_total', 'counter', 'Snoozes by handlers (JobSnooze): back to pending after the delay, the attempt given back.', (r) => r.jobsTotal.snoozed);
  perQueue('leasehold_jobs_redriven_total', 'counter', 'Dead letters sent back into the queue by a redrive.', (r) => r.jobsTotal.redriven);
  metric(
    'leasehold_enqueue_replaced_total',
    'counter',
    "Unclaimed jobs rewritten by a later enqueue with their key, by the enqueue's uniqueWhile ('replace' or 'debounce').",
    m.queues.flatMap((r) => [
      [`{${q(r.queue)},mode="replace"}`, r.jobsTotal.replaced],
      [`{${q(r.queue)},mode="debounce"}`, r.jobsTotal.debounced],
    ]),
  );
  metric(
    'leasehold_jobs_requeued_total',
    'counter',
    'Running jobs an operator requeued, after their lease expired (forced="false") or by force (forced="true").',
    m.queues.flatMap((r) => [
      [`{${q(r.queue)},forced="false"}`, r.jobsTotal.requeuedExpired],
      [`{${q(r.queue)},forced="true"}`, r.jobsTotal.requeuedForced],
    ]),
  );
  metric(
    'leasehold_jobs_reaped_total',
    'counter',
    'Jobs taken back by the reaper, by queue and reason.',
    m.queues.flatMap((r) => Object.entries(r.reaped).map(([reason, w]) => [`{${q(r.queue)},reason=${label(reason)}}`, w.total] as [string, number])),
  );
  perQueue('leasehold_reap_deferred_total', 'counter', 'Reaper decisions deferred because the owner looked alive.', (r) => r.reapDeferred.total);
  perQueue('leasehold_stale_writes_rejected_total', 'counter', 'Writes refused because the lock token was stale.', (r) => r.staleWritesRejected.total);
  perQueue('leasehold_enqueue_deduplicated_total', 'counter', 'Enqueues answered with an existing job (same idempotency key).', (r) => r.enqueueDeduplicated.total);
  perQueue(
    'leasehold_duplicate_executions_total',
    'counter',
    'Claims of a job whose previous claim was taken back (reaped, deadline, operator requeue) while it may still have been running.',
    (r) => r.duplicateExecutions.total,
  );
  perQueue('leasehold_duplicates_reported_total', 'counter', 'Duplicates a handler found downstream and reported (ctx.reportDuplicate).', (r) => r.duplicatesReported.total);
  perQueue('leasehold_effects_skipped_total', 'counter', 'once() effects not run because an earlier attempt recorded them done.', (r) => r.effectsSkipped.total);
  perQueue('leasehold_effects_rerun_total', 'counter', 'once() effects run again because an earlier start was never recorded done.', (r) => r.effectsRerun.total);

  // Histograms: every observation counted once, durably, in the statement
  // that made it; Prometheus aggregates them across servers and queues and
  // computes the quantiles (histogram_quantile over rate(..._bucket)).
  for (const name of HISTOGRAM_NAMES) {
    const spec = HISTOGRAMS[name];
    metric(
      spec.metric,
      'histogram',
      spec.help,
      m.queues.flatMap((r) => {
        const h = r.histograms[name];
        return [
          ...h.buckets.map((b) => [`_bucket{${q(r.queue)},le="${b.leMs === null ? '+Inf' : b.leMs / 1000}"}`, b.count] as [string, number]),
          [`_sum{${q(r.queue)}}`, h.sumMs / 1000],
          [`_count{${q(r.queue)}}`, h.count],
        ];
      }),
    );
  }

  perQueue('leasehold_running_jobs', 'gauge', 'Running jobs.', (r) => r.running.count);
  // A snapshot of the running jobs, not a count of observations: its buckets
  // go down as jobs finish, so it is a gauge (a histogram must only grow),
  // and its bound is not called `le`, which only a histogram may carry.
  metric(
    'leasehold_running_jobs_by_heartbeat_lag',
    'gauge',
    'Running jobs whose time since their last heartbeat is at most lag_at_most_seconds (cumulative; "+Inf" is every running job). For the intervals between heartbeats over time, see leasehold_heartbeat_interval_seconds.',
    m.queues.flatMap((r) =>
      r.running.heartbeatLagBuckets.map((b) => [`{${q(r.queue)},lag_at_most_seconds="${b.leMs === null ? '+Inf' : b.leMs / 1000}"}`, b.count] as [string, number]),
    ),
  );
  perQueue('leasehold_queue_lease_seconds', 'gauge', "The queue's lease (its own setting, else LEASEHOLD_LEASE_MS): what a claim gets unless it asks for another.", (r) => r.settings.leaseMs / 1000);
  perQueue('leasehold_queue_heartbeat_seconds', 'gauge', "The queue's heartbeat interval (its own setting, else LEASEHOLD_HEARTBEAT_MS); a claim tells workers at most a third of its lease.", (r) => r.settings.heartbeatMs / 1000);
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
  windowed('leasehold_enqueue_deduplicated_recent', 'Enqueues deduplicated in the last 5 minutes / hour.', m.queues.map((r) => [q(r.queue), r.enqueueDeduplicated]));
  windowed('leasehold_duplicate_executions_recent', 'Duplicate executions in the last 5 minutes / hour.', m.queues.map((r) => [q(r.queue), r.duplicateExecutions]));
  metric('leasehold_held_jobs', 'gauge', "Pending jobs held for a person after a lost attempt (onLost 'hold'): they run again only when released.", m.queues.map((r) => [`{${q(r.queue)}}`, r.held]));
  metric('leasehold_ready_jobs', 'gauge', 'Pending jobs due now (queue depth).', m.queues.map((r) => [`{${q(r.queue)}}`, r.ready]));
  metric('leasehold_oldest_ready_job_age_seconds', 'gauge', 'How long the oldest ready job has waited.', m.queues.map((r) => [`{${q(r.queue)}}`, (r.oldestReadyAgeMs ?? 0) / 1000]));
  if (groups) groupMetrics(metric, m, groups, q);
  // The maintenance pass (reaper, schedules, retention, alerts) as the
  // database last saw it complete: alerts are evaluated inside the pass, so
  // a stopped reaper can only be seen from here (src/core/maintenance-watch.ts).
  const pass = m.maintenance;
  const verdict = snapshotMaintenanceVerdict(m, config.reaperIntervalMs);
  metric('leasehold_maintenance_last_pass_timestamp_seconds', 'gauge', 'When the last maintenance (reaper) pass completed, Unix time in seconds, on the database clock; 0 when none was recorded.', [
    ['', (pass.lastCompletedAt ?? 0) / 1000],
  ]);
  metric('leasehold_maintenance_last_pass_age_seconds', 'gauge', 'Seconds since the last maintenance pass completed, on the database clock (the same clock as the timestamp; -1 when none was recorded).', [
    ['', verdict.ageMs === null ? -1 : verdict.ageMs / 1000],
  ]);
  metric('leasehold_maintenance_last_pass_duration_seconds', 'gauge', 'How long the last completed maintenance pass took (0 when none was recorded).', [
    ['', pass.lastCompletedAt === null || pass.lastStartedAt === null ? 0 : (pass.lastCompletedAt - pass.lastStartedAt) / 1000],
  ]);
  metric('leasehold_maintenance_passes_total', 'counter', 'Maintenance passes completed, by every reaper on this database.', [['', pass.passes]]);
  metric('leasehold_dependency_cascades_owed', 'gauge', 'Failed, cancelled or retried jobs whose dependents are still being settled, in bounded steps (docs/flows.md): above 0 for long, the maintenance pass or the engine is not keeping up.', [['', m.cascadesOwed]]);
  metric('leasehold_maintenance_interval_seconds', 'gauge', 'How often a maintenance pass is meant to run (LEASEHOLD_REAPER_INTERVAL_MS).', [['', config.reaperIntervalMs / 1000]]);
  metric(
    'leasehold_maintenance_late',
    'gauge',
    `1 while jobs run and the last pass is over ${verdict.lateAfterMs / 1000} s old (${LATE_AFTER_INTERVALS} intervals), or none was ever recorded while leases are past grace; else 0.`,
    [['', verdict.late ? 1 : 0]],
  );
  metric(
    'leasehold_owner_check_refused_total',
    'counter',
    "Owner check answers refused and treated as unknown, by reason: redirect (not followed) or too_large (over the size cap, not read further).",
    OWNER_CHECK_REFUSALS.map((reason) => [`{reason="${reason}"}`, m.ownerCheckRefused?.[reason] ?? 0]),
  );
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
  // What the long_running alert and tuning judge by (the last hour's sample),
  // as a gauge: not a summary, so its label is not `quantile`. Over time and
  // across servers, use the leasehold_job_runtime_seconds histogram.
  metric(
    'leasehold_job_runtime_recent_seconds',
    'gauge',
    'Runtime percentiles (nearest rank) of the newest jobs completed in the last hour (completed_at - started_at), as the long_running alert and tuning read them; none while the hour has none.',
    m.queues.flatMap((r) =>
      r.runtime
        ? ([
            [`{${q(r.queue)},percentile="50"}`, r.runtime.p50Ms / 1000],
            [`{${q(r.queue)},percentile="95"}`, r.runtime.p95Ms / 1000],
            [`{${q(r.queue)},percentile="99"}`, r.runtime.p99Ms / 1000],
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

/**
 * The group series: how many groups each queue has with work (every known
 * queue, 0 included), and the jobs of its busiest groups by state, the rest
 * under OTHER_GROUP (present for every queue with groups, 0 when none is
 * left over), so `sum by (queue, state)` is every grouped job of the queue.
 * A group that is itself named OTHER_GROUP is counted with the rest rather
 * than named, so no two series share their labels.
 */
function groupMetrics(
  metric: (name: string, type: 'gauge', help: string, rows: [string, number][]) => void,
  m: MetricsSnapshot,
  groups: readonly QueueGroupCounts[],
  q: (queue: string) => string,
) {
  const byQueue = new Map(groups.map((g) => [g.queue, g]));
  metric(
    'leasehold_groups',
    'gauge',
    "Groups (a job's group: a tenant, a customer) with pending or running jobs in the queue.",
    m.queues.map((r) => [`{${q(r.queue)}}`, byQueue.get(r.queue)?.groups ?? 0]),
  );
  const rows: [string, number][] = [];
  for (const g of groups) {
    const named = g.top.filter((x) => x.group !== OTHER_GROUP).slice(0, GROUP_SERIES_PER_QUEUE);
    const rest = { group: OTHER_GROUP, pending: g.other.pending, running: g.other.running };
    for (const x of g.top.filter((x) => !named.includes(x))) {
      rest.pending += x.pending;
      rest.running += x.running;
    }
    for (const x of [...named, rest]) {
      for (const state of ['pending', 'running'] as const) rows.push([`{${q(g.queue)},group=${label(x.group)},state="${state}"}`, x[state]]);
    }
  }
  metric(
    'leasehold_group_jobs',
    'gauge',
    `Pending and running jobs of the queue's ${GROUP_SERIES_PER_QUEUE} busiest groups (by pending + running, ties by group), by state; group="${OTHER_GROUP}" sums every other group of the queue, so a queue has at most ${2 * (GROUP_SERIES_PER_QUEUE + 1)} of these series. Only queues with groups have them.`,
    rows,
  );
}
