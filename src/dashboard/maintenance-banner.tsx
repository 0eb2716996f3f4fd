/**
 * The banner every dashboard page carries while the reaper looks stopped:
 * jobs run and no maintenance pass completed for 3 reaper intervals (or
 * none was ever recorded while leases are past grace), judged by
 * src/core/maintenance-watch.ts from the time the passes record in the
 * database, so it shows whichever server or isolate renders the page. Alerts
 * are evaluated by the passes themselves, so without this nobody would be
 * told. It polls /dashboard/live/maintenance (maintenance-watch-routes.tsx),
 * so it appears and goes without a reload.
 */
import type { MaintenanceVerdict } from '../core/maintenance-watch.ts';
import { fmtRelative, fmtTime } from './format.ts';
import type { MaintenanceWatchRow } from '../db/store/port.ts';

export interface MaintenanceBannerState {
  watch: MaintenanceWatchRow;
  verdict: MaintenanceVerdict;
}

/** How often an open page asks again. */
const POLL = 'every 10s';

export function MaintenanceBanner(props: { state: MaintenanceBannerState | undefined }) {
  return (
    <div id="maintenance-banner" hx-get="/dashboard/live/maintenance" hx-trigger={POLL} hx-swap="innerHTML">
      <BannerText state={props.state} />
    </div>
  );
}

export function BannerText(props: { state: MaintenanceBannerState | undefined }) {
  const s = props.state;
  if (!s || !s.verdict.late) return null;
  const { watch: w, verdict: v } = s;
  return (
    <p class="notice error banner" role="alert" id="maintenance-late">
      <strong>Reaper late.</strong>{' '}
      {w.lastCompletedAt === null ? 'No maintenance pass has been recorded on this database' : `The last maintenance pass completed ${fmtRelative(w.lastCompletedAt, w.now)} (${fmtTime(w.lastCompletedAt)})`}
      , while {w.runningJobs} {w.runningJobs === 1 ? 'job runs' : 'jobs run'} and {w.expiredLeases} {w.expiredLeases === 1 ? 'is' : 'are'} past lease + grace. Nothing takes lost jobs back, and
      alerts (evaluated by the passes) cannot fire. Check what runs the reaper: the server's timer (its log), the Workers cron trigger, or the cron
      calling <code>leasehold reap</code>. Late means over {Math.round(v.lateAfterMs / 1000)} s: 3 reaper intervals.
    </p>
  );
}
