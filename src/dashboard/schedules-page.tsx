/**
 * /dashboard/schedules: every recurring job with its timing, its next runs,
 * its last run and the job that run enqueued (linked), its policies and
 * what it skipped, and below the table the latest skips, read-only. Schedules
 * are changed through the API or `leasehold schedules`.
 */
import type { Context, Hono } from 'hono';
import type { AppDeps } from '../api/deps.ts';
import { nextOccurrences } from '../core/schedule.ts';
import { hasToken } from '../core/tokens.ts';
import { CATCH_UP_DEFAULT_WINDOW_MS, specOf } from '../maintenance/schedules.ts';
import { fmtTime } from './format.ts';
import { layoutPage, type DashboardEnv } from './page.tsx';
import type { ScheduleRecord, ScheduleSkipRecord } from '../db/store/port.ts';

export function registerSchedulesPage(app: Hono<DashboardEnv>, deps: AppDeps) {
  const { store, config } = deps;
  app.get('/dashboard/schedules', async (c: Context<DashboardEnv>) =>
    layoutPage(
      c,
      { title: 'Schedules', nav: 'schedules', loggedIn: hasToken(config, 'admin') },
      <>
        <SchedulesTable schedules={await store.schedulesList()} />
        <RecentSkips skips={await store.scheduleSkipsList({ limit: RECENT_SKIPS })} />
      </>,
    ),
  );
}

/** Skips listed under the table, newest first, every schedule's. */
const RECENT_SKIPS = 20;

const skipText = (k: ScheduleSkipRecord) =>
  `${k.count_capped ? 'at least ' : ''}${k.count} occurrence${k.count === 1 && !k.count_capped ? '' : 's'} ${k.reason === 'missed' ? 'missed' : "skipped: the previous occurrence's job was still pending or running"}` +
  ` (${k.count === 1 ? fmtTime(k.first_occurrence_at) : `${fmtTime(k.first_occurrence_at)} … ${fmtTime(k.last_occurrence_at)}`})`;

function RecentSkips(props: { skips: ScheduleSkipRecord[] }) {
  if (props.skips.length === 0) return <p class="empty">No occurrence has been skipped.</p>;
  return (
    <section class="schedule-skips">
      <h2>Skipped occurrences</h2>
      <ul>
        {props.skips.map((k) => (
          <li class={`skip skip-${k.reason}`}>
            {fmtTime(k.at)} <a href={`#schedule-${k.schedule_name}`}>{k.schedule_name}</a>: {skipText(k)}
          </li>
        ))}
      </ul>
    </section>
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
          <th>Policies</th>
          <th>Skipped</th>
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
              <td class="policies">
                catch-up {s.catch_up}
                {s.catch_up === 'all' ? ` (${(s.catch_up_window_ms ?? CATCH_UP_DEFAULT_WINDOW_MS) / 1000} s)` : ''}, overlap {s.overlap}
              </td>
              <td class="skipped">{s.skipped_missed + s.skipped_overlap === 0 ? '0' : `${s.skipped_missed} missed, ${s.skipped_overlap} overlapping`}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
