/**
 * The job page's lower half, polled: the job's remaining facts, its stored
 * values (progress, checkpoint, last error, payload, result) each within the
 * page's field budget (json-field.tsx), and its events, whose messages share
 * one budget.
 */
import { fmtCount, fmtDuration, fmtTime } from './format.ts';
import { clipToBudget, CutNotice, EVENT_MESSAGE_BYTES, StoredValue } from './json-field.tsx';
import { HELD_AVAILABLE_AT } from '../core/held.ts';
import type { EventRecord, JobPageView } from '../db/store/port.ts';

/** Below the actions: the rest of the job's facts, its data and its trail. Polled. */
export function JobDetails(props: { job: JobPageView; events: EventRecord[]; olderEventsNotShown: number; fieldBytes: number }) {
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
        <dt>Snoozes</dt>
        <dd id="job-snoozes" title="times a handler said 'not now, try again in N': each gave its attempt back; past the queue's maxSnoozes a snooze is refused">
          {j.snoozes} of {j.q_max_snoozes}
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
        <dd id="job-available">{availableText(j)}</dd>
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
      <div class="table-scroll" id="job-events">
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
                {eventNote(e) !== null ? <span class="hint"> ({eventNote(e)})</span> : null}
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
 * A few words after an event's type where the type alone reads ambiguously:
 * a snooze is neither a failure nor a retry (its reason is stored as
 * "for N ms").
 */
function eventNote(e: EventRecord): string | null {
  if (e.type !== 'snoozed') return null;
  const ms = /^for (\d+) ms$/.exec(e.reason ?? '');
  return `not now: due again ${ms ? `after ${fmtDuration(Number(ms[1]))}` : 'later'}; the attempt was given back`;
}

/** When a pending job is due; a waiting or held one is out of every claim's reach (HELD_AVAILABLE_AT), which says why. */
function availableText(j: JobPageView): string {
  if (j.status !== 'pending' || j.available_at < HELD_AVAILABLE_AT) return fmtTime(j.available_at);
  if (j.dependencies_unmet > 0) {
    const held = j.held_at === null ? '' : j.dependency_failed_by !== null ? ` (held: dependency ${j.dependency_failed_by} failed; retry it)` : ', and a person releases it';
    return `once its ${j.dependencies_unmet === 1 ? 'dependency completes' : `${j.dependencies_unmet} dependencies complete`}${held}`;
  }
  return j.held_at !== null ? 'once a person releases it' : fmtTime(j.available_at);
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
