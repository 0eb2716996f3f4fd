/**
 * /dashboard/jobs/:id: what the operator came for first (status, lease,
 * owner and its liveness, heartbeat, what the reaper will do and when,
 * progress, runtime), then the actions that fit the job's status
 * (job-actions.tsx), then, for a job that waits for jobs or that jobs wait
 * for, its dependencies (job-dependencies.tsx), then the rest of its facts,
 * its data and its trail (job-details.tsx). Both the summary and the details are polled
 * (/dashboard/live/jobs/:id?part=); the actions are not, so a reason being
 * typed survives, and the page reloads once the job's status moves on.
 */
import type { Hono } from 'hono';
import type { AppDeps } from '../api/deps.ts';
import type { Config } from '../core/config.ts';
import { hasToken } from '../core/tokens.ts';
import { Notice } from './action-notice.tsx';
import { fmtDuration, fmtRelative, fmtTime } from './format.ts';
import { JobActions } from './job-actions.tsx';
import { LostAttempt } from './held-view.tsx';
import { inDependencyGraph, JobDependencies, readDependencyGraph } from './job-dependencies.tsx';
import { JobDetails } from './job-details.tsx';
import { deadlineText, heartbeatInterval, heartbeatLag, suspectWhy } from './job-health.ts';
import { isJobStatus } from './jobs-filter.ts';
import { ownerText } from './lease-owner-text.ts';
import { Live } from './live-region.tsx';
import { layoutPage, type DashboardEnv } from './page.tsx';
import type { PageReads } from './page-reads.ts';
import { jobStalledForMs, jobSuspectForMs, reaperView } from './reaper-view.ts';
import type { RunningJobView } from '../db/store/port.ts';

export function registerJobPage(app: Hono<DashboardEnv>, deps: AppDeps, reads: PageReads) {
  const { store, config } = deps;
  const { now, suspects } = reads;
  const loggedIn = hasToken(config, 'admin');
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
    // A job in no graph (most) costs no read of it: the job's row says whether it is in one.
    const graph = inDependencyGraph(job) ? await readDependencyGraph(store, id) : null;
    const details = (
      <>
        {graph !== null ? <JobDependencies job={job} graph={graph} /> : null}
        <JobDetails job={job} events={events} olderEventsNotShown={olderNotShown} fieldBytes={config.dashboardFieldBytes} />
      </>
    );
    return { t, job, body: part === 'details' ? details : <>{summary}{details}</>, summary, details };
  };
  app.get('/dashboard/jobs/:id{[0-9]{1,15}}', async (c) => {
    const id = Number(c.req.param('id'));
    const { t, job, body, summary, details } = await jobFragment(id, 'all');
    if (!job) return layoutPage(c, { title: 'Job not found', nav: 'jobs', loggedIn }, body, 404);
    const was = c.req.query('was');
    const live = `/dashboard/live/jobs/${id}?shown=${job.status}`;
    return layoutPage(
      c,
      { title: `Job ${id}`, nav: 'jobs', loggedIn },
      <>
        <Notice notice={c.req.query('notice')} was={isJobStatus(was) ? was : undefined} />
        <Live src={`${live}&part=summary`}>{summary}</Live>
        {/* A job held because a dependency failed lost no attempt: its Dependencies section says why it is held. */}
        {job.held_at !== null && job.status === 'pending' && job.dependency_failed_by === null ? <LostAttempt job={job} effects={await store.effectsForJob({ jobId: id })} now={t} /> : null}
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
}

/** The reaper's view of a running job, in the words of its decision. */
function reaperText(d: NonNullable<ReturnType<typeof reaperView>>, now: number): string {
  if (d.action === 'requeue' || d.action === 'fail') return `takes it back at its next pass: ${d.why}`;
  const when = d.takesAt <= now ? 'at its next pass' : fmtRelative(d.takesAt, now);
  return `waits: ${d.why}; takes it back ${when} if no heartbeat or beat arrives`;
}

/** The job's lease: its own length (what its claim granted) and when it runs out or ran out. */
function LeaseFact(props: { job: RunningJobView; now: number }) {
  const { job: j, now } = props;
  if (j.status !== 'running' || j.lease_expires_at === null) return <dd id="job-lease">—</dd>;
  const expired = j.lease_expires_at < now;
  const length = j.lease_ms === null ? '' : `${fmtDuration(j.lease_ms)} lease (this claim's) · `;
  return (
    <dd id="job-lease" class={expired ? 'bad' : undefined} title={`expires at ${fmtTime(j.lease_expires_at)}`}>
      {length}
      {expired ? `expired ${fmtDuration(now - j.lease_expires_at)} ago` : `expires in ${fmtDuration(j.lease_expires_at - now)}`} ({fmtTime(j.lease_expires_at)})
    </dd>
  );
}

/**
 * What the operator came for, first: status, lease, owner and its liveness,
 * heartbeat, what the reaper will do and when. Polled; the actions follow it.
 */
function JobSummary(props: { job: RunningJobView; now: number; config: Config }) {
  const { job: j, now } = props;
  const lag = heartbeatLag(j, now);
  const interval = heartbeatInterval(j);
  const reap = reaperView(j, now, props.config);
  const stalled = jobStalledForMs(j, now);
  const suspect = jobSuspectForMs(j, now);
  return (
    <dl class="facts summary" id="job-summary">
      <dt>Status</dt>
      <dd>
        <span class={`status ${j.status}`} id="job-status">
          {j.status}
        </span>{' '}
        in <a href={`/dashboard/jobs?queue=${encodeURIComponent(j.queue_name)}`}>{j.queue_name}</a> · attempt {j.attempt_count} of {j.max_attempts}
        {j.status === 'pending' && j.dependencies_unmet > 0 ? (
          <>
            {' · '}
            <a href="#job-dependencies" id="job-waiting">
              waiting for {j.dependencies_unmet} {j.dependencies_unmet === 1 ? 'dependency' : 'dependencies'}
            </a>
          </>
        ) : null}
      </dd>
      <dt>Lease</dt>
      <LeaseFact job={j} now={now} />
      <dt>Owner</dt>
      <dd id="job-owner">{ownerText(j, now, props.config)}</dd>
      <dt>Heartbeat</dt>
      <dd id="job-heartbeat" class={lag !== null && lag > 2 * interval ? 'bad' : undefined}>
        {lag === null
          ? '—'
          : `last ${fmtDuration(lag)} ago · interval ${fmtDuration(interval)}${
              j.job_heartbeat_ms !== null && j.job_heartbeat_ms < j.q_heartbeat_ms ? ` (a third of this lease; the queue's is ${fmtDuration(j.q_heartbeat_ms)})` : ''
            }`}
      </dd>
      <dt>Reaper</dt>
      <dd id="job-reaper">
        {reap === null ? '—' : reaperText(reap, now)}
        {reap !== null && reap.takesAt > now ? <span class="hint"> (at {fmtTime(reap.takesAt)})</span> : null}
      </dd>
      <dt>Progress changed</dt>
      <dd id="job-stall" class={stalled !== null ? 'bad' : undefined}>
        {j.status !== 'running'
          ? '—'
          : `${fmtRelative(j.progressed_at ?? j.started_at, now)}${j.progressed_at === null ? ' (not since the claim)' : ''}${
              stalled !== null ? ` · stalled: no progress for ${fmtDuration(stalled)}, over the queue's ${fmtDuration(j.q_stall_ms!)}` : ''
            }`}
      </dd>
      <dt>Running for</dt>
      <dd id="job-runtime" class={suspect !== null ? 'bad suspect' : undefined} title={suspect !== null ? suspectWhy(j) : undefined}>
        {j.status !== 'running' || j.started_at === null
          ? '—'
          : `${fmtDuration(now - j.started_at)} (this attempt)${
              suspect !== null ? ` · suspect: past its queue's normal runtime, ${j.suspect_basis ?? ''} = ${fmtDuration(j.suspect_after_ms!)}${deadlineText(j, now)}` : ''
            }`}
      </dd>
      {j.last_error !== null ? (
        <>
          <dt>Last error</dt>
          <dd class="bad last-error">{j.last_error.length > 300 ? `${j.last_error.slice(0, 300)}…` : j.last_error}</dd>
        </>
      ) : null}
    </dl>
  );
}
