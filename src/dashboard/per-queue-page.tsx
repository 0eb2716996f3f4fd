/**
 * The pages that list the metrics snapshot by queue (/dashboard/metrics,
 * /dashboard/alerts, /dashboard/tuning): one page of queues (?page=, ?q=),
 * those in the most trouble first, each with a polled /dashboard/live/...
 * fragment. They apply the same pure evaluations as the API
 * (src/core/alerts.ts, src/core/tuning.ts); read-only, so a read-only login
 * sees them too.
 */
import type { Context, Hono } from 'hono';
import type { Child } from 'hono/jsx';
import type { AppDeps } from '../api/deps.ts';
import { evaluateAlerts } from '../core/alerts.ts';
import { hasToken } from '../core/tokens.ts';
import { ErrorPage } from './error-page.tsx';
import type { NavKey } from './layout.tsx';
import { Live } from './live-region.tsx';
import type { MetricsRead } from './metrics-read.ts';
import { htmlDocument, layoutPage, type DashboardEnv } from './page.tsx';
import { parseQueueSelection, QueueFilterForm, queueSelectionQuery, type QueueSelection } from './queue-pages.tsx';
import type { MetricsSnapshot } from '../db/store/port.ts';

type Env = DashboardEnv;

/** Returns `queuePage(path, title, nav, render, intro)`, which registers one such page and its fragment. */
export function perQueuePages(app: Hono<Env>, deps: Pick<AppDeps, 'config'>, metrics: Pick<MetricsRead, 'snapshot'>) {
  const { config } = deps;
  const { snapshot } = metrics;
  const shell = (c: Context<Env>, title: string, nav: NavKey, children: Child) => layoutPage(c, { title, nav, loggedIn: hasToken(config, 'admin') }, children);

  /**
   * A per-queue page and its polled fragment, both showing one page of queues
   * (?page=, ?q=): `render` gets the snapshot and the selection.
   */
  const queuePage = (path: string, title: string, nav: NavKey, renderPage: (m: MetricsSnapshot, s: QueueSelection) => Promise<Child> | Child, intro: Child = null) => {
    const render = async (m: MetricsSnapshot, s: QueueSelection): Promise<Child> =>
      s.filter && !m.queues.some((q) => q.queue.toLowerCase().includes(s.filter.toLowerCase())) ? <NoQueueMatches filter={s.filter} /> : renderPage(m, s);
    app.get(`/dashboard/${path}`, async (c) => {
      const s = parseQueueSelection(c);
      if (typeof s === 'string') return htmlDocument(c, <ErrorPage title="Bad page" message={s} />, 400);
      return shell(
        c,
        title,
        nav,
        <>
          {intro}
          <QueueFilterForm action={`/dashboard/${path}`} filter={s.filter} />
          <Live src={`/dashboard/live/${path}${queueSelectionQuery(s)}`}>{await render(await snapshot(), s)}</Live>
        </>,
      );
    });
    app.get(`/dashboard/live/${path}`, async (c) => {
      const s = parseQueueSelection(c);
      if (typeof s === 'string') return c.html(<p class="notice error">{s}</p>, 400);
      return c.html(<>{await render(await snapshot(), s)}</>);
    });
  };
  return queuePage;
}

export function NoQueueMatches(props: { filter: string }) {
  return <p class="empty">No queue name contains “{props.filter}”.</p>;
}

/**
 * How much trouble a queue is in, to list it first: firing alerts weigh most,
 * then expired leases and stalled jobs.
 */
export function troubleOf(m: MetricsSnapshot, alerts = evaluateAlerts(m)): (queue: string) => number {
  const score = new Map<string, number>();
  for (const a of alerts) if (a.state === 'firing') score.set(a.queue, (score.get(a.queue) ?? 0) + 1_000_000);
  for (const q of m.queues) score.set(q.queue, (score.get(q.queue) ?? 0) + Math.min(999_999, q.running.expiredLeases + q.running.stalled.count));
  return (queue) => score.get(queue) ?? 0;
}
