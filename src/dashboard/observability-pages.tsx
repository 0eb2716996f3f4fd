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
import { evaluateAlerts, type Alert } from '../core/alerts.ts';
import { recommendTuning, type QueueTuning } from '../core/tuning.ts';
import type { AlertStateRow } from '../db/store/alert-states.ts';
import type { MetricsSnapshot } from '../db/store/metrics.ts';
import { CHART_MINUTES, type ChartSeries, type QueueActivity } from './charts.ts';
import { fmtDuration, fmtOptionalDuration, fmtTime } from './format.ts';
import type { MetricsRead } from './metrics-read.ts';
import { perQueuePages, troubleOf } from './per-queue-page.tsx';
import { PlaybookHint } from './playbook-hint.tsx';
import type { DashboardEnv } from './page.tsx';
import { pageOfQueues, QueuePager, type QueuePage, type QueueSelection } from './queue-pages.tsx';

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
  const { store, config } = deps;
  const { snapshotAndActivity } = metrics;
  const queuePage = perQueuePages(app, deps, metrics);

  queuePage(
    'alerts',
    'Alerts',
    'alerts',
    async (m, s) => {
      // What the reaper's alert pass last recorded: since when, and what the webhook was told.
      const recorded = await store.alertStatesList();
      const all = evaluateAlerts(m);
      const trouble = troubleOf(m, all);
      const p = pageOfQueues(m.queues, s, (q) => q.queue, (q) => trouble(q.queue));
      const shown = new Set(p.items.map((q) => q.queue));
      const queues = p.items.map((q) => ({ name: q.queue, overrides: Object.keys(q.alertOverrides).length }));
      return (
        <>
          <QueuePager base="/dashboard/alerts" p={p} />
          <AlertsFragment
            alerts={all.filter((a) => shown.has(a.queue))}
            firingTotal={all.filter((a) => a.state === 'firing').length}
            recorded={recorded}
            now={m.now}
            webhook={!!config.alertWebhookUrl}
            queues={queues}
            jobs={alertJobs(m)}
          />
        </>
      );
    },
    <PlaybookHint step="steps 2 and 5 (how wide is it; watch the alerts clear)" />,
  );

  queuePage('tuning', 'Tuning', 'tuning', (m, s) => {
    const trouble = troubleOf(m);
    // A broken rule counts as trouble too: those queues come first.
    const p = pageOfQueues(recommendTuning(m), s, (r) => r.queue, (r) => trouble(r.queue) + r.flags.filter((f) => f.severity === 'error').length);
    return (
      <>
        <QueuePager base="/dashboard/tuning" p={p} />
        <TuningFragment rows={p.items} />
      </>
    );
  });

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

// ---- metrics ----

// ---- alerts ----

function fmtValue(v: number | null, unit: Alert['unit']): string {
  if (v === null) return '—';
  if (unit === 'ms') return fmtDuration(v);
  if (unit === 'per_minute') return `${v}/min`;
  return String(v);
}

/** Since when the recorded state has held (the reaper's alert pass records it); blank if not recorded yet or it differs from now. */
function Since(props: { alert: Alert; row: AlertStateRow | undefined; now: number }) {
  const r = props.row;
  if (!r || r.state !== props.alert.state) return <td class="since">—</td>;
  return (
    <td class="since" title={new Date(r.since).toISOString()}>
      {fmtDuration(Math.max(0, props.now - r.since))} <span class="hint">since {fmtTime(r.since)}</span>
    </td>
  );
}

/** The jobs an alert is about (the snapshot names the first few), by queue and alert name. */
function alertJobs(m: MetricsSnapshot): Map<string, string[]> {
  const jobs = new Map<string, string[]>();
  for (const q of m.queues) {
    jobs.set(`${q.queue}\u0000heartbeat_lag`, q.running.lateJobIds);
    jobs.set(`${q.queue}\u0000stalled_jobs`, q.running.stalled.ids);
  }
  return jobs;
}

/** Links to the first jobs an alert names, so the operator goes from the alert to the job. */
function AlertJobLinks(props: { ids: string[] | undefined }) {
  if (!props.ids || props.ids.length === 0) return null;
  return (
    <span class="alert-jobs">
      {' '}
      Jobs:{' '}
      {props.ids.map((id, i) => (
        <>
          {i > 0 ? ', ' : null}
          <a href={`/dashboard/jobs/${id}`}>{id}</a>
        </>
      ))}
    </span>
  );
}

/** What the webhook was last told about this alert. */
function WebhookCell(props: { row: AlertStateRow | undefined }) {
  const r = props.row;
  if (!r) return <td class="webhook">—</td>;
  if (r.notifiedState === r.state) return <td class="webhook">{r.state === 'firing' ? 'sent' : '—'}</td>;
  return (
    <td class="webhook bad">
      {r.notifyAttempts === 0 ? 'to send' : `not delivered (${r.notifyAttempts} ${r.notifyAttempts === 1 ? 'try' : 'tries'}): ${r.lastNotifyError ?? ''}`}
    </td>
  );
}

function AlertsFragment(props: {
  alerts: Alert[];
  /** Firing alerts over every queue, not only this page's. */
  firingTotal?: number;
  recorded: AlertStateRow[];
  now: number;
  webhook: boolean;
  queues: { name: string; overrides: number }[];
  /** The jobs each alert is about, by queue and name (alertJobs). */
  jobs?: Map<string, string[]>;
}) {
  if (props.alerts.length === 0) return <p class="empty">No queues yet: nothing to alert on.</p>;
  const firing = props.alerts.filter((a) => a.state === 'firing');
  // Over every queue, not only this page's.
  const firingTotal = props.firingTotal ?? firing.length;
  const ok = props.alerts.filter((a) => a.state !== 'firing');
  const recorded = new Map(props.recorded.map((r) => [`${r.queue}\u0000${r.name}`, r]));
  // One row per alert, with what the alert pass recorded for it.
  const rowOf = (a: Alert, row: AlertStateRow | undefined) => (
    <tr class={a.state === 'firing' ? 'firing' : 'ok'} id={`alert-${a.queue}-${a.name}`}>
      <td>
        <span class={`alert-state ${a.state}`}>{a.state}</span>
      </td>
      <td>{a.name}</td>
      <td>
        <a href={`/dashboard/jobs?queue=${encodeURIComponent(a.queue)}`}>{a.queue}</a>
      </td>
      <td>{fmtValue(a.value, a.unit)}</td>
      <td>
        {fmtValue(a.threshold, a.unit)}
        {a.overridden.length > 0 ? (
          <span class="badge" title={`this queue sets ${a.overridden.join(', ')}`}>
            {' '}
            queue override
          </span>
        ) : null}
      </td>
      <td>
        {a.message}
        {a.state === 'firing' ? <AlertJobLinks ids={props.jobs?.get(`${a.queue}\u0000${a.name}`)} /> : null}
      </td>
      <Since alert={a} row={row} now={props.now} />
      {props.webhook ? <WebhookCell row={row} /> : null}
    </tr>
  );
  const rows = (list: Alert[]) =>
    list.map((a) => rowOf(a, recorded.get(`${a.queue}\u0000${a.name}`)));
  return (
    <>
      <p id="alerts-firing" class={firingTotal > 0 ? 'notice error' : 'notice'}>
        {firingTotal === 0 ? 'No alert is firing.' : `${firingTotal} firing`}
      </p>
      <p class="hint" id="alert-thresholds">
        Thresholds are the server's unless a queue sets its own (here, or <code>PUT /api/v1/queues/:queue/alerts</code>):{' '}
        {props.queues.map((q, i) => (
          <>
            {i > 0 ? ' · ' : null}
            <a href={`/dashboard/alerts/thresholds/${encodeURIComponent(q.name)}`}>{q.name}</a>{' '}
            {q.overrides === 0 ? "(server's)" : `(${q.overrides} set)`}
          </>
        ))}
      </p>
      <table class="alerts">
        <thead>
          <tr>
            <th>State</th>
            <th>Alert</th>
            <th>Queue</th>
            <th>Value</th>
            <th>Threshold</th>
            <th>Message</th>
            <th>For (since)</th>
            {props.webhook ? <th>Webhook</th> : null}
          </tr>
        </thead>
        <tbody>
          {rows(firing)}
          {rows(ok)}
        </tbody>
      </table>
    </>
  );
}

// ---- tuning ----

const SETTINGS = [
  ['leaseMs', 'Lease'],
  ['heartbeatMs', 'Heartbeat interval'],
  ['graceMs', 'Grace'],
] as const;

function TuningFragment(props: { rows: QueueTuning[] }) {
  if (props.rows.length === 0) return <p class="empty">No queues yet: nothing to tune.</p>;
  return (
    <>
      {props.rows.map((r) => {
        const flagged = (setting: string) => r.flags.find((f) => f.setting === setting && f.severity === 'error') ?? r.flags.find((f) => f.setting === setting);
        return (
          <section class="queue-tuning" id={`tuning-${r.queue}`}>
            <h2>
              {r.queue} <span class={`confidence ${r.confidence}`}>confidence: {r.confidence}</span>
            </h2>
            <table class="tuning">
              <thead>
                <tr>
                  <th>Setting</th>
                  <th>Current</th>
                  <th>Recommended</th>
                </tr>
              </thead>
              <tbody>
                {SETTINGS.map(([key, label]) => {
                  const f = flagged(key);
                  const changed = r.recommended[key] !== r.current[key];
                  return (
                    <tr class={f ? `flagged ${f.severity}` : undefined}>
                      <td>{label}</td>
                      <td>{`${r.current[key]} ms (${fmtDuration(r.current[key])})`}</td>
                      <td class={changed ? 'changed' : undefined}>{`${r.recommended[key]} ms (${fmtDuration(r.recommended[key])})`}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
            {r.flags.length === 0 ? (
              <p class="empty">No rule is broken.</p>
            ) : (
              <ul class="flags">
                {r.flags.map((f) => (
                  <li class={`flag ${f.severity}`}>
                    <strong>{f.severity}</strong>: {f.setting} {f.rule}
                  </li>
                ))}
              </ul>
            )}
            <ul class="notes">
              {r.notes.map((n) => (
                <li>{n}</li>
              ))}
            </ul>
          </section>
        );
      })}
    </>
  );
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
