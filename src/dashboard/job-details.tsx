/**
 * The job page's lower half, polled: the job's remaining facts, its stored
 * values (progress, checkpoint, last error, payload, result) each within the
 * page's field budget (json-field.tsx), and its events, whose messages share
 * one budget.
 */
import { fmtCount, fmtTime } from './format.ts';
import { clipToBudget, CutNotice, EVENT_MESSAGE_BYTES, StoredValue } from './json-field.tsx';
import type { EventRecord, RunningJobView } from '../db/store/port.ts';

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
