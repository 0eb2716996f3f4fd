/**
 * The reaper-late banner's data: read for every full dashboard page into the
 * request (layoutPage renders it, maintenance-banner.tsx), and its polled
 * fragment, /dashboard/live/maintenance.
 */
import type { Context, Hono } from 'hono';
import type { AppDeps } from '../api/deps.ts';
import { maintenanceVerdict } from '../core/maintenance-watch.ts';
import { BannerText, type MaintenanceBannerState } from './maintenance-banner.tsx';
import type { DashboardEnv } from './page.tsx';

/**
 * Reads the state for every full page (GET, not the polled fragments) into
 * the request, for layoutPage, and serves the banner's own fragment. Register
 * after the session guard and before the pages.
 */
export function registerMaintenanceBanner(app: Hono<DashboardEnv>, deps: Pick<AppDeps, 'store' | 'config' | 'clock'>) {
  const read = async (): Promise<MaintenanceBannerState> => {
    const watch = await deps.store.maintenanceWatch({ now: deps.clock.now(), defaults: deps.config });
    const verdict = maintenanceVerdict({
      now: watch.now,
      lastPassAt: watch.lastCompletedAt,
      runningJobs: watch.runningJobs,
      expiredLeases: watch.expiredLeases,
      reaperIntervalMs: deps.config.reaperIntervalMs,
    });
    return { watch, verdict };
  };
  const onPages = async (c: Context<DashboardEnv>, next: () => Promise<void>) => {
    if (c.req.method === 'GET' && !c.req.path.startsWith('/dashboard/live/') && c.req.path !== '/dashboard/login') c.set('maintenance', await read());
    return next();
  };
  app.use('/dashboard', onPages);
  app.use('/dashboard/*', onPages);
  app.get('/dashboard/live/maintenance', async (c) => c.html(<BannerText state={await read()} />));
}
