/**
 * /dashboard/alerts: every queue's alerts as the API evaluates them
 * (src/core/alerts.ts) from the metrics snapshot, beside what the reaper's
 * alert pass last recorded (since when, what the webhook was told), with
 * links to the jobs involved and to each queue's thresholds
 * (alert-thresholds.tsx); a page of queues at a time, polled.
 */
import type { Hono } from 'hono';
import type { AppDeps } from '../api/deps.ts';
import { evaluateAlerts, type Alert } from '../core/alerts.ts';
import { fmtDuration, fmtTime } from './format.ts';
import type { MetricsRead } from './metrics-read.ts';
import type { DashboardEnv } from './page.tsx';
import { perQueuePages, troubleOf } from './per-queue-page.tsx';
import { PlaybookHint } from './playbook-hint.tsx';
import { pageOfQueues, QueuePager } from './queue-pages.tsx';
import type { AlertStateRow, MetricsSnapshot } from '../db/store/port.ts';

export function registerAlertsPage(app: Hono<DashboardEnv>, deps: Pick<AppDeps, 'store' | 'config'>, metrics: MetricsRead) {
  const { store, config } = deps;
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
}

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
