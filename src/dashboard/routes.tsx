/**
 * The operator dashboard at /dashboard: login, overview, jobs, job detail,
 * zombies, workers, and the operator actions (retry, requeue, force requeue,
 * cancel) as CSRF-checked POST forms recorded with who and why.
 *
 * Runtime-free like the rest of the app: WebCrypto for sessions, static
 * assets (/htmx.min.js, /dashboard.css) served by the runtime from public/.
 */
import { Hono, type Context } from 'hono';
import type { Child } from 'hono/jsx';
import type { AppDeps } from '../api/deps.ts';
import { registerAlertThresholdRoutes } from './alert-thresholds.tsx';
import { registerBulkRoutes } from './bulk.tsx';
import { registerAuditPage } from './audit-page.tsx';
import { registerQueuePageRoutes } from './queue-page.tsx';
import { registerSchedulesPage } from './schedules-page.tsx';
import { registerMaintenanceBanner } from './maintenance-watch-routes.tsx';
import { registerJobRawRoutes } from './job-raw.ts';
import { observabilityPages } from './observability-pages.tsx';
import { registerOverviewPage } from './overview-page.tsx';
import { registerJobsPage } from './jobs-page.tsx';
import { registerJobActions } from './job-actions.tsx';
import { registerWorkersPage } from './workers-page.tsx';
import { registerZombiesPage } from './zombies-page.tsx';
import { pageReads } from './page-reads.ts';
import { registerLoginPage, registerLogout } from './login-page.tsx';
import { registerSecurityHeaders } from './security-headers.ts';
import { dashboardSessions } from './session-cookie.ts';
import { registerSessionGuard } from './session-guard.tsx';
import type { NavKey } from './layout.tsx';
import { Live } from './live-region.tsx';
import { Notice } from './action-notice.tsx';
import {
  JobDetails,
  JobSummary,
} from './views.tsx';
import { JobActions } from './job-actions.tsx';
import { isJobStatus } from './jobs-filter.ts';
import { layoutPage, type DashboardEnv } from './page.tsx';

type Env = DashboardEnv;


export function dashboardRoutes(deps: AppDeps) {
  const { store, config } = deps;
  const sessions = dashboardSessions(config);
  const { open } = sessions;
  const reads = pageReads(deps);
  const { now, suspects } = reads;
  const app = new Hono<Env>();

  app.get('/', (c) => c.redirect('/dashboard', 302));
  registerSecurityHeaders(app);
  registerLoginPage(app, deps, sessions);
  registerSessionGuard(app, deps, sessions);
  // Every page says when the reaper looks stopped (after the guard: only for a session).
  registerMaintenanceBanner(app, deps);
  registerLogout(app, deps, sessions);

  const shell = (c: Context<Env>, title: string, nav: NavKey, children: Child, status: 200 | 404 = 200) =>
    layoutPage(c, { title, nav, loggedIn: !open }, children, status);

  // ---- metrics, alerts, tuning; the overview's alert count and charts ----
  const overviewExtras = observabilityPages(app, deps);
  registerOverviewPage(app, deps, overviewExtras);
  registerJobsPage(app, deps, reads);

  // ---- job detail ----
  // The page leads with the summary (polled), then the actions (not polled:
  // a reason being typed must survive), then the details and trail (polled).
  type JobPart = 'summary' | 'details' | 'all';
  const jobFragment = async (id: number, part: JobPart) => {
    const t = await now();
    const job = await store.jobGetWithSettings({ id, defaults: config, now: t, suspects: await suspects() });
    if (!job) return { t, job, body: <p class="notice error">No job has id {id}.</p>, summary: null, details: null };
    const summary = <JobSummary job={job} now={t} config={config} />;
    if (part === 'summary') return { t, job, body: summary, summary, details: null };
    const { events, olderNotShown } = await store.eventsForJob({ jobId: id, limit: 1000 });
    const details = <JobDetails job={job} events={events} olderEventsNotShown={olderNotShown} fieldBytes={config.dashboardFieldBytes} />;
    return { t, job, body: part === 'details' ? details : <>{summary}{details}</>, summary, details };
  };
  app.get('/dashboard/jobs/:id{[0-9]{1,15}}', async (c) => {
    const id = Number(c.req.param('id'));
    const { t, job, body, summary, details } = await jobFragment(id, 'all');
    if (!job) return shell(c, 'Job not found', 'jobs', body, 404);
    const was = c.req.query('was');
    const live = `/dashboard/live/jobs/${id}?shown=${job.status}`;
    return shell(
      c,
      `Job ${id}`,
      'jobs',
      <>
        <Notice notice={c.req.query('notice')} was={isJobStatus(was) ? was : undefined} />
        <Live src={`${live}&part=summary`}>{summary}</Live>
        <h2>Actions</h2>
        {c.get('session').role === 'admin' ? <JobActions job={job} now={t} csrf={c.get('csrf')} config={config} /> : <p class="empty">Read-only login: no actions.</p>}
        <Live src={`${live}&part=details`} id="live-details">
          {details}
        </Live>
      </>,
    );
  });
  app.get('/dashboard/live/jobs/:id{[0-9]{1,15}}', async (c) => {
    const id = Number(c.req.param('id'));
    const partText = c.req.query('part');
    const part: JobPart = partText === 'summary' || partText === 'details' ? partText : 'all';
    const { job, body } = await jobFragment(id, part);
    // The actions between the live regions fit the status the page was loaded
    // with; once the status moves on, htmx loads the page afresh.
    const shown = c.req.query('shown');
    if (job && shown && shown !== job.status) return c.body(null, 200, { 'hx-redirect': `/dashboard/jobs/${id}` });
    return c.html(body, job ? 200 : 404);
  });

  registerJobRawRoutes(app, deps);
  registerZombiesPage(app, deps, reads);
  registerWorkersPage(app, deps, reads);

  registerJobActions(app, deps);
  registerBulkRoutes(app, deps);
  registerAlertThresholdRoutes(app, deps);
  registerAuditPage(app, deps);
  registerQueuePageRoutes(app, deps);
  registerSchedulesPage(app, deps);

  return app;
}
