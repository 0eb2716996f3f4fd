/**
 * Dashboard views (hono/jsx, server-rendered). Every value is rendered as
 * JSX text or attribute, which hono/jsx escapes; nothing here uses raw HTML.
 */
import type { EventRecord } from '../db/store/read.ts';
import type { Config } from '../core/config.ts';
import { ownerText } from './lease-owner-text.ts';
import { fmtCount, fmtDuration, fmtRelative, fmtTime } from './format.ts';
import { clipToBudget, CutNotice, EVENT_MESSAGE_BYTES, StoredValue } from './json-field.tsx';
import type { RunningJobView } from '../db/store/dashboard-reads.ts';
import { jobStalledForMs, jobSuspectForMs, reaperView } from './reaper-view.ts';
import { deadlineText, heartbeatInterval, heartbeatLag, suspectWhy } from './job-health.ts';

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
export function JobSummary(props: { job: RunningJobView; now: number; config: Config }) {
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

/** Below the actions: the rest of the job's facts, its data and its trail. Polled. */
export function JobDetails(props: { job: RunningJobView; events: EventRecord[]; olderEventsNotShown: number; fieldBytes: number }) {
  const { job: j, fieldBytes } = props;
  const messages = eventMessages(props.events, fieldBytes);
  return (
    <>
      <h2>Details</h2>
      <dl class="facts">
        <dt>Attempts</dt>
        <dd>
          {j.attempt_count} of {j.max_attempts} · errored {j.errored_attempts} · lost {j.lost_attempts}
        </dd>
        <dt>Priority</dt>
        <dd>{j.priority}</dd>
        <dt>Fencing token</dt>
        <dd>{j.lease_epoch}</dd>
        <dt>Idempotency key</dt>
        <dd>{j.idempotency_key ?? '—'}</dd>
        {j.schedule_name !== null && (
          <>
            <dt>Schedule</dt>
            <dd>
              {j.schedule_name} · occurrence {fmtTime(j.occurrence_at)}
            </dd>
          </>
        )}
        <dt>Available</dt>
        <dd>{fmtTime(j.available_at)}</dd>
        <dt>Created</dt>
        <dd>{fmtTime(j.created_at)}</dd>
        <dt>Started</dt>
        <dd>{fmtTime(j.started_at)}</dd>
        <dt>Finished</dt>
        <dd>{fmtTime(j.finished_at)}</dd>
        <dt>Deadline</dt>
        <dd>{fmtTime(j.deadline_at)}</dd>
      </dl>
      <h2>Progress</h2>
      <StoredValue jobId={j.id} field="progress" stored={j.progress} budget={fieldBytes} json id="job-progress" />
      <h2>Checkpoint</h2>
      <StoredValue jobId={j.id} field="checkpoint" stored={j.checkpoint} budget={fieldBytes} json id="job-checkpoint" />
      <h2>Last error</h2>
      <StoredValue jobId={j.id} field="error" stored={j.last_error} budget={fieldBytes} json={false} id="job-last-error" />
      <h2>Payload</h2>
      <StoredValue jobId={j.id} field="payload" stored={j.payload} budget={fieldBytes} json id="job-payload" />
      <h2>Result</h2>
      <StoredValue jobId={j.id} field="result" stored={j.result} budget={fieldBytes} json id="job-result" />
      <h2>Events</h2>
      {props.olderEventsNotShown > 0 ? (
        <p class="hint" id="older-events">
          {fmtCount(props.olderEventsNotShown)} older events not shown (the newest {fmtCount(props.events.length)} are below).
        </p>
      ) : null}
      <div class="table-scroll">
      <table class="events">
        <thead>
          <tr>
            <th>#</th>
            <th>At</th>
            <th>Event</th>
            <th>From → to</th>
            <th>Attempt</th>
            <th>Actor</th>
            <th>Worker</th>
            <th>Reason</th>
            <th>Message</th>
          </tr>
        </thead>
        <tbody>
          {props.events.map((e, i) => (
            // A derived entry (a job's enqueue or completion) is read from the job row: it has no event row, so no #.
            <tr class={e.derived ? 'derived' : undefined}>
              <td>{e.id ?? '—'}</td>
              <td>{fmtTime(e.at)}</td>
              <td>
                {e.type}
                {e.derived ? <span class="hint" title="read from the job row: this transition has no event row of its own"> (from the job row)</span> : null}
              </td>
              <td>
                {e.from_status ?? '—'} → {e.to_status ?? '—'}
              </td>
              <td>{e.attempt ?? '—'}</td>
              <td>{e.actor ?? '—'}</td>
              <td>{e.worker_id ?? '—'}</td>
              <td>{e.reason ?? '—'}</td>
              <td>{messages.shown[i]}</td>
            </tr>
          ))}
        </tbody>
      </table>
      </div>
      {messages.cut ? <CutNotice jobId={j.id} field="events" what="Some messages are cut to fit the page: the events with their whole messages," /> : null}
    </>
  );
}

/**
 * The events' messages share one field budget: each gets at most
 * EVENT_MESSAGE_BYTES of it, in order, and once it is spent the rest show
 * only that they were cut.
 */
function eventMessages(events: EventRecord[], budget: number): { shown: string[]; cut: boolean } {
  let left = budget;
  let cut = false;
  const shown = events.map((e) => {
    if (e.message === null) return '—';
    const clipped = clipToBudget(e.message, Math.min(EVENT_MESSAGE_BYTES, left));
    left -= clipped.pageBytes;
    if (clipped.complete) return clipped.text;
    cut = true;
    return `${clipped.text}…`;
  });
  return { shown, cut };
}

