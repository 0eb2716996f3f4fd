/**
 * /dashboard/metrics: per queue, what the metrics snapshot holds (depth,
 * expired leases, heartbeat lag, time limits and stalls, totals, attempts,
 * the heartbeat-lag histogram, and the 5 m / 1 h / all-time counts of reaps,
 * stale writes, deduplicated enqueues, duplicate executions and once()
 * effects), a page of queues at a time, polled.
 */
import type { Hono } from 'hono';
import type { Child } from 'hono/jsx';
import type { AppDeps } from '../api/deps.ts';
import { fmtDuration, fmtOptionalDuration } from './format.ts';
import type { MetricsRead } from './metrics-read.ts';
import type { DashboardEnv } from './page.tsx';
import { perQueuePages, troubleOf } from './per-queue-page.tsx';
import { pageOfQueues, QueuePager } from './queue-pages.tsx';
import type { MetricsSnapshot, QueueMetrics, WindowCount } from '../db/store/port.ts';

export function registerMetricsPage(app: Hono<DashboardEnv>, deps: Pick<AppDeps, 'config'>, metrics: MetricsRead) {
  const queuePage = perQueuePages(app, deps, metrics);
  queuePage('metrics', 'Metrics', 'metrics', (m, s) => {
    const trouble = troubleOf(m);
    const p = pageOfQueues(m.queues, s, (q) => q.queue, (q) => trouble(q.queue));
    return <MetricsFragment m={m} queues={p.items} pager={<QueuePager base="/dashboard/metrics" p={p} />} />;
  });
}

function Windows(props: { label: string; w: WindowCount; id?: string }) {
  return (
    <tr id={props.id}>
      <td>{props.label}</td>
      <td>{props.w.last5m}</td>
      <td>{props.w.lastHour}</td>
      <td>{props.w.total}</td>
    </tr>
  );
}

function QueueMetricsSection(props: { q: QueueMetrics; activeWorkers: number }) {
  const { q } = props;
  const reasons = Object.keys(q.reaped).sort();
  return (
    <section class="queue-metrics" id={`metrics-${q.queue}`}>
      <h2>
        <a href={`/dashboard/queues/${encodeURIComponent(q.queue)}`}>{q.queue}</a>
        {q.paused ? <span class="badge warn"> paused</span> : null}
      </h2>
      <dl class="facts">
        <dt>Depth</dt>
        <dd class="depth">
          {q.ready} ready · {q.counts.pending} pending · {q.running.count} running on {q.running.busyWorkers} workers ({props.activeWorkers} workers alive)
        </dd>
        <dt>Expired leases</dt>
        <dd class={q.running.expiredLeases > 0 ? 'bad expired' : 'expired'}>{q.running.expiredLeases}</dd>
        <dt>Heartbeat lag max</dt>
        <dd class={q.running.maxHeartbeatLagMs !== null && q.running.maxHeartbeatLagMs > 2 * q.settings.heartbeatMs ? 'bad lag' : 'lag'}>
          {fmtOptionalDuration(q.running.maxHeartbeatLagMs)} (interval {fmtDuration(q.settings.heartbeatMs)})
        </dd>
        <dt>Time limit per attempt</dt>
        <dd class="timeout">
          {fmtDuration(q.settings.timeoutMs)} · stall after {q.stallMs === null ? 'off' : fmtDuration(q.stallMs)}
          {q.running.stalled.count > 0 ? ` · ${q.running.stalled.count} stalled now` : ''}
        </dd>
        <dt>Jobs, all time</dt>
        <dd class="totals">
          {q.jobsTotal.enqueued} enqueued · {q.jobsTotal.claimed} claims · {q.jobsTotal.completed} completed · {q.jobsTotal.failed} failed for good ·{' '}
          {q.jobsTotal.cancelled} cancelled · {q.jobsTotal.retried} retried · {q.jobsTotal.requeuedExpired + q.jobsTotal.requeuedForced} requeued by an operator (
          {q.jobsTotal.requeuedForced} forced)
        </dd>
        <dt>Attempts (finished in the last hour)</dt>
        <dd class="attempts">
          {q.attempts.finished} jobs · {q.attempts.lostAttempts} attempts lost ({q.attempts.jobsWithLost} jobs) vs {q.attempts.erroredAttempts} errored (
          {q.attempts.jobsWithErrors} jobs)
        </dd>
        <dt>Runtime (completed in the last hour)</dt>
        <dd class="runtime">
          {q.runtime === null
            ? '—'
            : `p50 ${fmtDuration(q.runtime.p50Ms)} · p95 ${fmtDuration(q.runtime.p95Ms)} · p99 ${fmtDuration(q.runtime.p99Ms)} · max ${fmtDuration(q.runtime.maxMs)} (${q.runtime.count} jobs)`}
        </dd>
      </dl>
      <div class="metric-tables">
        <table class="histogram">
          <caption>Heartbeat lag of running jobs</caption>
          <thead>
            <tr>
              <th>Lag ≤</th>
              <th>Jobs</th>
            </tr>
          </thead>
          <tbody>
            {q.running.heartbeatLagBuckets.map((b) => (
              <tr>
                <td>{b.leMs === null ? '∞' : fmtDuration(b.leMs)}</td>
                <td>{b.count}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <table class="counters">
          <caption>Events</caption>
          <thead>
            <tr>
              <th>Event</th>
              <th>5 m</th>
              <th>1 h</th>
              <th>All time</th>
            </tr>
          </thead>
          <tbody>
            {reasons.length === 0 ? <Windows label="reaped" w={q.reapedTotal} id={`reaped-${q.queue}`} /> : null}
            {reasons.map((r) => (
              <Windows label={`reaped: ${r}`} w={q.reaped[r]!} id={`reaped-${q.queue}-${r}`} />
            ))}
            <Windows label="reap deferred (owner alive)" w={q.reapDeferred} />
            <Windows label="stale writes rejected" w={q.staleWritesRejected} id={`stale-${q.queue}`} />
            <Windows label="enqueues deduplicated" w={q.enqueueDeduplicated} id={`dedup-${q.queue}`} />
            <Windows label="duplicate executions" w={q.duplicateExecutions} id={`duplicates-${q.queue}`} />
            <Windows label="duplicates reported by handlers" w={q.duplicatesReported} id={`duplicates-reported-${q.queue}`} />
            <Windows label="once() effects skipped" w={q.effectsSkipped} id={`effects-skipped-${q.queue}`} />
            <Windows label="once() effects run again" w={q.effectsRerun} id={`effects-rerun-${q.queue}`} />
          </tbody>
        </table>
      </div>
    </section>
  );
}

function MetricsFragment(props: { m: MetricsSnapshot; queues: QueueMetrics[]; pager: Child }) {
  const { m } = props;
  if (m.queues.length === 0) return <p class="empty">No queues yet: enqueue a job to create one.</p>;
  return (
    <>
      <p class="hint">
        Workers: {m.workers.active} alive of {m.workers.total} registered. Windows: the last 5 minutes, the last hour, and all time (counted as it happens, kept through pruning).
      </p>
      {props.pager}
      {props.queues.map((q) => (
        <QueueMetricsSection q={q} activeWorkers={m.workers.active} />
      ))}
    </>
  );
}
