/**
 * /dashboard/zombies: the running jobs in trouble (an expired lease, a late
 * heartbeat, a stall, a suspect runtime) with what the reaper will do and
 * when; an admin may requeue one whose lease expired, which does what the
 * reaper would do now. Polled (/dashboard/live/zombies).
 */
import type { Context, Hono } from 'hono';
import type { AppDeps } from '../api/deps.ts';
import type { Config } from '../core/config.ts';
import { hasToken } from '../core/tokens.ts';
import { requeueVerdict } from '../engine/operator-actions.ts';
import { Notice } from './action-notice.tsx';
import { HeldList } from './held-view.tsx';
import { FormToken } from './form-token.tsx';
import { fmtDuration, fmtRelative } from './format.ts';
import { deadlineText, heartbeatLag, suspectWhy } from './job-health.ts';
import { leaseText, ownerText } from './lease-owner-text.ts';
import { Live } from './live-region.tsx';
import { layoutPage, type DashboardEnv } from './page.tsx';
import type { PageReads } from './page-reads.ts';
import { PlaybookHint } from './playbook-hint.tsx';
import { jobStalledForMs, jobSuspectForMs, reaperView } from './reaper-view.ts';
import type { RunningJobView } from '../db/store/port.ts';

type Env = DashboardEnv;

export function registerZombiesPage(app: Hono<Env>, deps: AppDeps, reads: PageReads) {
  const { store, config } = deps;
  const { now, suspects } = reads;
  const zombies = async (c: Context<Env>) => {
    const t = await now();
    const csrf = c.get('session').role === 'admin' ? c.get('csrf') : undefined;
    return <ZombiesFragment jobs={await store.jobsListZombieCandidates({ now: t, defaults: config, limit: 500, suspects: await suspects() })} now={t} config={config} csrf={csrf} />;
  };
  app.get('/dashboard/zombies', async (c) =>
    layoutPage(
      c,
      { title: 'Zombie candidates', nav: 'zombies', loggedIn: hasToken(config, 'admin') },
      <>
        <Notice notice={c.req.query('notice')} />
        <p class="hint">
          Running jobs whose lease has expired, whose heartbeat is more than two intervals late, that are stalled (heartbeating without progress past
          their queue's stall setting), or that are suspect: heartbeating, but running longer than max(3 × the p99 runtime of the queue's jobs
          completed in the last hour, its lease), or 10 leases when none completed (the long_running alert's thresholds, settable per queue). The
          reaper takes a job back after its lease plus grace (longer while its owner still looks alive), or at its deadline, and never for being
          suspect or stalled; Requeue here does what the reaper would do now and nothing sooner. Only a force requeue, on the job page, acts before it.
        </p>
        <PlaybookHint step="steps 1 and 3 (is the worker dead, hung, or is storage slow; what will the reaper do)" />
        <Live src="/dashboard/live/zombies">{await zombies(c)}</Live>
        <h2>Held for a person</h2>
        <p class="hint">
          Jobs whose attempt was lost on a queue (or with a job option) that says onLost 'hold': they are not run again until someone releases,
          completes or fails them on their job page, where what the lost attempt did is shown.
        </p>
        <HeldList jobs={await store.jobsHeldList({ limit: 200 })} now={await now()} />
      </>,
    ),
  );
  app.get('/dashboard/live/zombies', async (c) => c.html(await zombies(c)));
}

/** `csrf` undefined: a read-only login, shown without actions. */
function ZombiesFragment(props: { jobs: RunningJobView[]; now: number; config: Config; csrf: string | undefined }) {
  const { now, config } = props;
  if (props.jobs.length === 0) return <p class="empty">No running job has an expired lease, a late heartbeat, a stall or a suspect runtime.</p>;
  return (
    <div class="table-scroll">
    <table class="zombies">
      <thead>
        <tr>
          <th>Id</th>
          <th>Queue</th>
          <th>Owner</th>
          <th>Lease</th>
          <th>Heartbeat lag</th>
          <th>Progress</th>
          <th title="this attempt's runtime; suspect past max(k x p99 runtime, lease) of its queue (src/core/suspect.ts)">Running</th>
          <th>Reaper</th>
          <th>Action</th>
        </tr>
      </thead>
      <tbody>
        {props.jobs.map((j) => {
          const expired = j.lease_expires_at !== null && j.lease_expires_at < now;
          const lag = heartbeatLag(j, now);
          const reap = reaperView(j, now, config);
          const takesNow = reap !== null && (reap.action === 'requeue' || reap.action === 'fail');
          const stalled = jobStalledForMs(j, now);
          const suspect = jobSuspectForMs(j, now);
          return (
            <tr id={`zombie-${j.id}`} class={suspect !== null || stalled !== null ? 'suspect' : undefined}>
              <td>
                <a href={`/dashboard/jobs/${j.id}`}>{j.id}</a>
              </td>
              <td>{j.queue_name}</td>
              <td>{ownerText(j, now, config)}</td>
              <td class={expired ? 'bad' : undefined}>{leaseText(j, now)}</td>
              <td>{lag === null ? '—' : fmtDuration(lag)}</td>
              <td class={stalled !== null ? 'bad stalled' : undefined}>{stalled !== null ? `stalled ${fmtDuration(stalled)}` : '—'}</td>
              <td class={suspect !== null ? 'bad suspect' : undefined} title={suspect !== null ? suspectWhy(j) : undefined}>
                {j.started_at === null ? '—' : fmtDuration(now - j.started_at)}
                {suspect !== null ? ` · suspect: past ${fmtDuration(j.suspect_after_ms!)}${deadlineText(j, now)}` : ''}
              </td>
              <td title={reap?.why}>{reap === null ? '—' : takesNow || reap.takesAt <= now ? 'next pass' : fmtRelative(reap.takesAt, now)}</td>
              <td>
                {props.csrf === undefined ? (
                  'read-only'
                ) : expired && !takesNow ? (
                  <span class="hint">reaper waits: {reap?.why}</span>
                ) : expired ? (
                  <form method="post" action={`/dashboard/jobs/${j.id}/requeue`} class="inline" title={reap ? `Requeue now: ${requeueVerdict(reap)}` : undefined}>
                    <FormToken csrf={props.csrf} returnTo="/dashboard/zombies" />
                    <input type="hidden" name="reason" value="requeued from the zombies page" />
                    {/* What the reaper would do is what this does: the label says which. */}
                    <button type="submit">{reap?.action === 'fail' ? 'Fail for good' : 'Requeue'}</button>
                  </form>
                ) : (
                  <a href={`/dashboard/jobs/${j.id}`}>lease live: force on job page</a>
                )}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
    </div>
  );
}
