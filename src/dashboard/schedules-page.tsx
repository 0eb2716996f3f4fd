/**
 * /dashboard/schedules: every recurring job with its timing, its next runs,
 * its last run and the job that run enqueued (linked), read-only. Schedules
 * are changed through the API or `leasehold schedules`.
 */
import type { Context, Hono } from 'hono';
import type { AppDeps } from '../api/deps.ts';
import { nextOccurrences } from '../core/schedule.ts';
import { hasToken } from '../core/tokens.ts';
import { specOf } from '../maintenance/schedules.ts';
import { fmtTime } from './format.ts';
import { layoutPage, type DashboardEnv } from './page.tsx';
import type { ScheduleRecord } from '../db/store/port.ts';

export function registerSchedulesPage(app: Hono<DashboardEnv>, deps: AppDeps) {
  const { store, config } = deps;
  app.get('/dashboard/schedules', async (c: Context<DashboardEnv>) =>
    layoutPage(c, { title: 'Schedules', nav: 'schedules', loggedIn: hasToken(config, 'admin') }, <SchedulesTable schedules={await store.schedulesList()} />),
  );
}

function SchedulesTable(props: { schedules: ScheduleRecord[] }) {
  if (props.schedules.length === 0) {
    return <p class="empty">No schedules: create one with POST /api/v1/schedules or <code>leasehold schedules add</code>.</p>;
  }
  return (
    <table class="schedules">
      <thead>
        <tr>
          <th>Name</th>
          <th>Queue</th>
          <th>Timing</th>
          <th>Next runs</th>
          <th>Last run</th>
          <th>Its job</th>
        </tr>
      </thead>
      <tbody>
        {props.schedules.map((s) => {
          const next = s.paused || s.next_run_at >= Number.MAX_SAFE_INTEGER ? [] : [s.next_run_at, ...nextOccurrences(specOf(s), s.next_run_at, 2, s.next_run_at)];
          return (
            <tr id={`schedule-${s.name}`}>
              <td>{s.name}</td>
              <td>
                <a href={`/dashboard/jobs?queue=${encodeURIComponent(s.queue_name)}`}>{s.queue_name}</a>
              </td>
              <td>{s.cron ? `${s.cron} (${s.time_zone ?? 'UTC'})` : `every ${s.interval_ms} ms`}</td>
              <td class="next-runs">{s.paused ? 'paused' : next.map(fmtTime).join(' · ')}</td>
              <td>{fmtTime(s.last_run_at)}</td>
              <td>{s.last_job_id === null ? '—' : <a href={`/dashboard/jobs/${s.last_job_id}`}>#{s.last_job_id}</a>}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
