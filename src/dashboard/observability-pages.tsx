/**
 * Dashboard pages for observability: /dashboard/metrics, /dashboard/alerts,
 * /dashboard/tuning (each with a polled /dashboard/live/... fragment), and the
 * overview's extras (firing-alert count and the last hour's SVG charts).
 *
 * Every page reads one metrics snapshot (src/db/store/metrics.ts) and applies
 * the same pure evaluations as the API (src/core/alerts.ts, src/core/tuning.ts).
 * Registered by dashboardRoutes after its session/CSRF guard; read-only, so a
 * read-only login sees them too.
 */
import type { Hono } from 'hono';
import type { Child } from 'hono/jsx';
import type { AppDeps } from '../api/deps.ts';
import { evaluateAlerts } from '../core/alerts.ts';
import type { MetricsSnapshot } from '../db/store/metrics.ts';
import { CHART_MINUTES, type ChartSeries, type QueueActivity } from './charts.ts';
import { fmtDuration, fmtOptionalDuration } from './format.ts';
import type { MetricsRead } from './metrics-read.ts';
import { troubleOf } from './per-queue-page.tsx';
import type { DashboardEnv } from './page.tsx';
import { pageOfQueues, type QueuePage, type QueueSelection } from './queue-pages.tsx';

type Env = DashboardEnv;

/** Per queue, what the overview shows beside the counts (from the metrics snapshot and the per-minute activity). */
export interface QueueActivitySummary {
  /** Jobs completed per minute over the last 5 full minutes. */
  completedPerMin: number;
  completedLastHour: number;
  /** Workers holding one of this queue's jobs now. */
  busyWorkers: number;
  firingAlerts: number;
  /** Duplicate executions in the last hour. */
  duplicatesLastHour: number;
}

/**
 * Adds the pages to the dashboard app; returns what the overview route renders
 * around its table: the summary line (firing alerts, live workers), the
 * hour's charts, and per queue its throughput, busy workers and firing alerts.
 */
export function observabilityPages(app: Hono<Env>, deps: Pick<AppDeps, 'store' | 'config'>, metrics: MetricsRead) {
  const { snapshotAndActivity } = metrics;
  /**
   * The overview's parts (all inside its live region), and the queue health
   * the snapshot already read, so the overview table does not count every
   * queue's jobs a second time.
   */
  return async (
    s: QueueSelection,
  ): Promise<{ summary: Child; charts: Child; health: QueuePage<MetricsSnapshot['health'][number]>; all: MetricsSnapshot['health']; at: number; perQueue: Map<string, QueueActivitySummary> }> => {
    const { m, activity } = await snapshotAndActivity();
    const alerts = evaluateAlerts(m);
    const firing = alerts.filter((a) => a.state === 'firing');
    const trouble = troubleOf(m, alerts);
    const health = pageOfQueues(m.health, s, (h) => h.name, (h) => trouble(h.name));
    const shown = new Set(health.items.map((h) => h.name));
    const perQueue = new Map(
      m.queues.filter((q) => shown.has(q.queue)).map((q) => {
        const a = activity.find((x) => x.queue === q.queue);
        // The last 5 full minutes (the current one is still filling).
        const recent = a ? a.completed.slice(CHART_MINUTES - 6, CHART_MINUTES - 1) : [];
        return [
          q.queue,
          {
            completedPerMin: recent.reduce((s, n) => s + n, 0) / 5,
            completedLastHour: a ? a.completed.reduce((s, n) => s + n, 0) : 0,
            busyWorkers: q.running.busyWorkers,
            firingAlerts: firing.filter((x) => x.queue === q.queue).length,
            duplicatesLastHour: q.duplicateExecutions.lastHour,
          },
        ];
      }),
    );
    if (m.queues.length === 0) return { summary: null, charts: null, health, all: m.health, at: m.now, perQueue };
    return {
      summary: <OverviewSummary firing={firing.length} m={m} />,
      charts: <OverviewCharts m={m} activity={activity} shown={shown} />,
      health,
      all: m.health,
      at: m.now,
      perQueue,
    };
  };
}

// ---- overview extras: firing alerts and charts ----

const W = 4;
const H = 40;

/** One bar per minute with data, oldest left; heights scale to the series' busiest minute. */
function BarChart(props: { queue: string; series: ChartSeries; counts: number[] }) {
  const max = Math.max(0, ...props.counts);
  const total = props.counts.reduce((s, n) => s + n, 0);
  const label = `${props.queue}: ${total} ${props.series} in the last hour${max > 0 ? `, at most ${max} a minute` : ''}`;
  return (
    <svg class={`chart ${props.series}`} viewBox={`0 0 ${CHART_MINUTES * W} ${H}`} width={CHART_MINUTES * W} height={H} role="img" aria-label={label}>
      <title>{label}</title>
      <line class="axis" x1={0} y1={H - 0.5} x2={CHART_MINUTES * W} y2={H - 0.5} />
      {props.counts.map((n, i) => {
        if (n === 0) return null;
        const h = Math.max(1, Math.round((n / max) * (H - 2)));
        const ago = CHART_MINUTES - 1 - i;
        return (
          <rect class="bar" x={i * W} y={H - h} width={W - 1} height={h} data-minute={ago}>
            <title>{`${n} ${props.series}, ${ago === 0 ? 'in the last minute' : `${ago} min ago`}`}</title>
          </rect>
        );
      })}
    </svg>
  );
}

/**
 * The worst heartbeat lag the reaper saw in each minute, one bar per sampled
 * minute; bars over `lateMs` (two heartbeat intervals) are marked late.
 */
function LagChart(props: { queue: string; lags: (number | null)[]; lateMs: number }) {
  const max = Math.max(props.lateMs, ...props.lags.map((x) => x ?? 0));
  const worst = Math.max(0, ...props.lags.map((x) => x ?? 0));
  const sampled = props.lags.some((x) => x !== null);
  const label = sampled ? `${props.queue}: worst heartbeat lag ${fmtDuration(worst)} in the last hour` : `${props.queue}: nothing running was sampled in the last hour`;
  const lateY = H - Math.max(1, Math.round((props.lateMs / max) * (H - 2)));
  return (
    <svg class="chart lag" viewBox={`0 0 ${CHART_MINUTES * W} ${H}`} width={CHART_MINUTES * W} height={H} role="img" aria-label={label}>
      <title>{label}</title>
      <line class="axis" x1={0} y1={H - 0.5} x2={CHART_MINUTES * W} y2={H - 0.5} />
      <line class="limit" x1={0} y1={lateY} x2={CHART_MINUTES * W} y2={lateY}>
        <title>{`late: over ${fmtDuration(props.lateMs)} (two heartbeat intervals)`}</title>
      </line>
      {props.lags.map((lag, i) => {
        if (lag === null) return null;
        const h = Math.max(1, Math.round((lag / max) * (H - 2)));
        const ago = CHART_MINUTES - 1 - i;
        return (
          <rect class={lag > props.lateMs ? 'bar late' : 'bar'} x={i * W} y={H - h} width={W - 1} height={h} data-minute={ago}>
            <title>{`worst heartbeat lag ${fmtDuration(lag)}, ${ago === 0 ? 'this minute' : `${ago} min ago`}`}</title>
          </rect>
        );
      })}
    </svg>
  );
}

/** Above the overview's table: firing alerts and live workers. */
function OverviewSummary(props: { firing: number; m: MetricsSnapshot }) {
  return (
    <p class={props.firing > 0 ? 'notice error alerts-summary' : 'notice alerts-summary'} id="overview-alerts">
        <a href="/dashboard/alerts">{props.firing === 1 ? '1 alert firing' : `${props.firing} alerts firing`}</a> ·{' '}
        <a href="/dashboard/workers" id="overview-workers">
          {props.m.workers.active === 1 ? '1 worker alive' : `${props.m.workers.active} workers alive`}
        </a>{' '}
        <span class="hint">(seen in the last {fmtDuration(props.m.workers.aliveMs)})</span>
    </p>
  );
}

/** Below the overview's table: the last hour per minute, per queue. */
function OverviewCharts(props: { m: MetricsSnapshot; activity: QueueActivity[]; shown: Set<string> }) {
  const none = new Array<number>(CHART_MINUTES).fill(0);
  const noLag = new Array<number | null>(CHART_MINUTES).fill(null);
  return (
    <>
      <h2>The last hour</h2>
      <div class="table-scroll">
      <table class="charts">
        <thead>
          <tr>
            <th>Queue</th>
            <th>Completed / min (1 h)</th>
            <th>Failed / min (1 h)</th>
            <th>Reaped / min (1 h)</th>
            <th>Worst heartbeat lag / min (1 h)</th>
            <th>Max heartbeat lag now</th>
          </tr>
        </thead>
        <tbody>
          {props.m.queues.filter((q) => props.shown.has(q.queue)).map((q) => {
            const a = props.activity.find((x) => x.queue === q.queue);
            const lag = q.running.maxHeartbeatLagMs;
            return (
              <tr id={`chart-${q.queue}`}>
                <td>{q.queue}</td>
                <td>
                  <BarChart queue={q.queue} series="completed" counts={a?.completed ?? none} />
                </td>
                <td>
                  <BarChart queue={q.queue} series="failed" counts={a?.failed ?? none} />
                </td>
                <td>
                  <BarChart queue={q.queue} series="reaped" counts={a?.reaped ?? none} />
                </td>
                <td>
                  <LagChart queue={q.queue} lags={a?.heartbeatLagMs ?? noLag} lateMs={2 * q.settings.heartbeatMs} />
                </td>
                <td class={lag !== null && lag > 2 * q.settings.heartbeatMs ? 'bad' : undefined}>
                  {fmtOptionalDuration(lag)} <span class="hint">(interval {fmtDuration(q.settings.heartbeatMs)})</span>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      </div>
    </>
  );
}
