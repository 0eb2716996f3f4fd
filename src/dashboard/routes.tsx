/**
 * The operator dashboard at /dashboard: one file per page (its routes and
 * its view), registered here in one line each. The order matters only
 * where the comments say: the headers, the login page and the session guard
 * come before every page, so each page sees a checked session.
 *
 * Runtime-free like the rest of the app: WebCrypto for sessions, static
 * assets (/htmx.min.js, /dashboard.css) served by the runtime from public/.
 */
import { Hono } from 'hono';
import type { AppDeps } from '../api/deps.ts';
import { registerAlertThresholdRoutes } from './alert-thresholds.tsx';
import { registerAlertsPage } from './alerts-page.tsx';
import { registerAuditPage } from './audit-page.tsx';
import { registerBulkRoutes } from './bulk.tsx';
import { registerCanaryPage } from './canary-page.tsx';
import { registerDeadLettersPage } from './dead-letters-page.tsx';
import { registerJobActions } from './job-actions.tsx';
import { registerJobPage } from './job-page.tsx';
import { registerJobRawRoutes } from './job-raw.ts';
import { registerJobsPage } from './jobs-page.tsx';
import { registerLoginPage, registerLogout } from './login-page.tsx';
import { registerMaintenanceBanner } from './maintenance-watch-routes.tsx';
import { registerMetricsPage } from './metrics-page.tsx';
import { metricsRead } from './metrics-read.ts';
import { registerOverviewPage } from './overview-page.tsx';
import type { DashboardEnv } from './page.tsx';
import { pageReads } from './page-reads.ts';
import { registerQueuePageRoutes } from './queue-page.tsx';
import { registerSchedulesPage } from './schedules-page.tsx';
import { registerSecurityHeaders } from './security-headers.ts';
import { dashboardSessions } from './session-cookie.ts';
import { registerSessionGuard } from './session-guard.tsx';
import { registerTuningPage } from './tuning-page.tsx';
import { registerWorkersPage } from './workers-page.tsx';
import { registerZombiesPage } from './zombies-page.tsx';

export function dashboardRoutes(deps: AppDeps) {
  const sessions = dashboardSessions(deps.config);
  // One page clock and one shared suspect read for the jobs list, the job page and the zombies page.
  const reads = pageReads(deps);
  // One metrics read a second for the metrics, alerts and tuning pages and the overview.
  const metrics = metricsRead(deps);
  const app = new Hono<DashboardEnv>();

  app.get('/', (c) => c.redirect('/dashboard', 302));
  registerSecurityHeaders(app);
  // Before the guard: the login page is what a visitor without a session gets.
  registerLoginPage(app, deps, sessions);
  registerSessionGuard(app, deps, sessions);
  // Every page says when the reaper looks stopped (after the guard: only for a session).
  registerMaintenanceBanner(app, deps);
  registerLogout(app, deps, sessions);

  // The pages of the metrics snapshot, the overview among them; then the job pages.
  registerMetricsPage(app, deps, metrics);
  registerAlertsPage(app, deps, metrics);
  registerTuningPage(app, deps, metrics);
  registerOverviewPage(app, deps, metrics);
  registerJobsPage(app, deps, reads);
  registerJobPage(app, deps, reads);
  registerJobRawRoutes(app, deps);
  registerJobActions(app, deps);
  registerZombiesPage(app, deps, reads);
  registerWorkersPage(app, deps, reads);
  registerBulkRoutes(app, deps);
  registerCanaryPage(app, deps);
  registerDeadLettersPage(app, deps);
  registerAlertThresholdRoutes(app, deps);
  registerAuditPage(app, deps);
  registerQueuePageRoutes(app, deps);
  registerSchedulesPage(app, deps);

  return app;
}
