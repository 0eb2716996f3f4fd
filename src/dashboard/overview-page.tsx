/**
 * /dashboard, the overview: one page of queues (filtered, ?q= and ?page=)
 * with their counts, throughput, busy workers, firing alerts and duplicate
 * runs, the summary line above and the hour's charts below, polled as one
 * region (/dashboard/live/overview).
 */
import type { Hono } from 'hono';
import type { Child } from 'hono/jsx';
import type { AppDeps } from '../api/deps.ts';
import { evaluateAlerts } from '../core/alerts.ts';
import { hasToken } from '../core/tokens.ts';
import { CHART_MINUTES } from './charts.ts';
import { ErrorPage } from './error-page.tsx';
import { fmtCount, fmtDuration } from './format.ts';
import { Live } from './live-region.tsx';
import type { MetricsRead } from './metrics-read.ts';
import { OverviewCharts } from './overview-charts.tsx';
import { htmlDocument, layoutPage, type DashboardEnv } from './page.tsx';
import { NoQueueMatches, troubleOf } from './per-queue-page.tsx';
import { pageOfQueues, parseQueueSelection, QueueFilterForm, QueuePager, queueSelectionQuery, type QueuePage, type QueueSelection } from './queue-pages.tsx';
import { QueueTotals } from './queue-totals.tsx';
import type { MetricsSnapshot, QueueHealth } from '../db/store/port.ts';

export function registerOverviewPage(app: Hono<DashboardEnv>, deps: Pick<AppDeps, 'config'>, metrics: MetricsRead) {
  const { config } = deps;
  const overviewExtras = overviewParts(metrics);
  const overview = async (s: QueueSelection) => {
    const { summary, charts, health, all, at, perQueue } = await overviewExtras(s);
    return (
      <>
        {summary}
        {all.length > 0 ? <QueueTotals queues={all} /> : null}
        <QueuePager base="/dashboard" p={health} />
        {health.matching === 0 && all.length > 0 ? <NoQueueMatches filter={s.filter} /> : <OverviewFragment queues={health.items} now={at} activity={perQueue} />}
        {charts}
      </>
    );
  };
  app.get('/dashboard', async (c) => {
    const s = parseQueueSelection(c);
    if (typeof s === 'string') return htmlDocument(c, <ErrorPage title="Bad page" message={s} />, 400);
    return layoutPage(
      c,
      { title: 'Queues', nav: 'overview', loggedIn: hasToken(config, 'admin') },
      <>
        <QueueFilterForm action="/dashboard" filter={s.filter} />
        <Live src={`/dashboard/live/overview${queueSelectionQuery(s)}`}>{await overview(s)}</Live>
      </>,
    );
  });
  app.get('/dashboard/live/overview', async (c) => {
    const s = parseQueueSelection(c);
    if (typeof s === 'string') return c.html(<p class="notice error">{s}</p>, 400);
    return c.html(await overview(s));
  });
}

/**
 * The overview's parts from the metrics snapshot, all inside its live region:
 * the summary line (firing alerts, live workers), the hour's charts, per
 * queue its throughput, busy workers and firing alerts, and the queue health
 * the snapshot already read, so the overview table does not count every
 * queue's jobs a second time.
 */
function overviewParts(metrics: MetricsRead) {
  const { snapshotAndActivity } = metrics;
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
            duplicatesLastHour: q.duplicateExecutions.lastHour + q.duplicatesReported.lastHour,
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

/** Per queue, what the overview shows beside the counts (from the metrics snapshot and the per-minute activity). */
interface QueueActivitySummary {
  /** Jobs completed per minute over the last 5 full minutes. */
  completedPerMin: number;
  completedLastHour: number;
  /** Workers holding one of this queue's jobs now. */
  busyWorkers: number;
  firingAlerts: number;
  /** Duplicate executions in the last hour. */
  duplicatesLastHour: number;
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

const age = (at: number | null, now: number) => (at === null ? '—' : fmtDuration(now - at));

const perMin = (x: number) => (x >= 10 || x === 0 ? String(Math.round(x)) : x.toFixed(1));

function ActivityCells(props: { a: QueueActivitySummary | undefined }) {
  const a = props.a;
  if (!a) return <><td>—</td><td>—</td><td>—</td><td>—</td></>;
  return (
    <>
      <td class="busy">{a.busyWorkers}</td>
      <td class="throughput" title={`${a.completedLastHour} completed in the last hour`}>
        {perMin(a.completedPerMin)}/min <span class="hint">({a.completedLastHour} in 1 h)</span>
      </td>
      <td class={a.firingAlerts > 0 ? 'bad alerts' : 'alerts'}>{a.firingAlerts > 0 ? <a href="/dashboard/alerts">{a.firingAlerts} firing</a> : 'none'}</td>
      <td class={a.duplicatesLastHour > 0 ? 'warn duplicates' : 'duplicates'} title="claims of jobs taken back while their worker may still have been running them, and repeats handlers reported (ctx.reportDuplicate)">
        {fmtCount(a.duplicatesLastHour)}
      </td>
    </>
  );
}

export function OverviewFragment(props: { queues: QueueHealth[]; now: number; activity?: Map<string, QueueActivitySummary> }) {
  if (props.queues.length === 0) return <p class="empty">No queues yet: enqueue a job to create one.</p>;
  const q = (name: string, status?: string) => `/dashboard/jobs?queue=${encodeURIComponent(name)}${status ? `&status=${status}` : ''}`;
  return (
    <div class="table-scroll">
    <table class="queues">
      <thead>
        <tr>
          <th>Queue</th>
          <th>Pending</th>
          <th>Ready</th>
          <th>Running</th>
          <th>Workers busy</th>
          <th>Throughput</th>
          <th>Alerts</th>
          <th>Duplicate runs (1 h)</th>
          <th>Expired leases</th>
          <th>Oldest running</th>
          <th>Oldest ready waiting</th>
          <th>Completed</th>
          <th>Failed</th>
          <th>Cancelled</th>
        </tr>
      </thead>
      <tbody>
        {props.queues.map((x) => (
          <tr>
            <td>
              <a href={q(x.name)}>{x.name}</a>
              {x.paused ? <span class="badge warn"> paused</span> : null}
            </td>
            <td>
              <a href={q(x.name, 'pending')}>{fmtCount(x.counts.pending)}</a>
            </td>
            <td>{fmtCount(x.ready)}</td>
            <td>
              <a href={q(x.name, 'running')}>{fmtCount(x.counts.running)}</a>
            </td>
            <ActivityCells a={props.activity?.get(x.name)} />
            <td class={x.expiredLeases > 0 ? 'warn' : undefined}>
              {x.expiredLeases > 0 ? <a href="/dashboard/zombies">{x.expiredLeases}</a> : 0}
            </td>
            <td>{age(x.oldestRunningStartedAt, props.now)}</td>
            <td>{age(x.oldestReadyAvailableAt, props.now)}</td>
            <td>
              <a href={q(x.name, 'completed')}>{fmtCount(x.counts.completed)}</a>
            </td>
            <td class={x.counts.failed > 0 ? 'bad' : undefined}>
              <a href={q(x.name, 'failed')}>{fmtCount(x.counts.failed)}</a>
            </td>
            <td>
              <a href={q(x.name, 'cancelled')}>{fmtCount(x.counts.cancelled)}</a>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
    </div>
  );
}
