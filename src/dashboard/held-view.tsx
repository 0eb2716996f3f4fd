/**
 * Held jobs on the dashboard (onLost 'hold', src/core/held.ts): what is known
 * of a held job's lost attempt (worker, last heartbeat, progress, checkpoint,
 * the effects it started and finished), the forms that end the hold
 * (release, complete by hand, fail; a reason is required), and the list the
 * zombies page shows.
 */
import type { Child } from 'hono/jsx';
import { parseLostAttempt } from '../core/held.ts';
import { FormToken } from './form-token.tsx';
import { fmtRelative } from './format.ts';
import type { EffectRow } from '../db/store/port.ts';
import type { JobRecord } from '../core/job-record.ts';

const at = (ms: number | null | undefined, now: number) => (ms == null ? '—' : `${new Date(ms).toISOString()} (${fmtRelative(ms, now)})`);

/** The lost attempt of a held job, as a facts table, with its effects ledger. */
export function LostAttempt(props: { job: JobRecord; effects: EffectRow[]; now: number }) {
  const { job: j, now } = props;
  if (j.status !== 'pending' || j.held_at === null) return null;
  const a = parseLostAttempt(j.held_attempt);
  const started = props.effects.filter((e) => e.state === 'started');
  return (
    <section id="lost-attempt">
      <h2>Held for a person</h2>
      <p class="notice error">
        This job's attempt was lost and its queue (or the job) says onLost 'hold': it runs again only when someone releases it. Check what the lost
        attempt did first: {started.length > 0 ? `${started.length} effect(s) were started and never recorded done.` : 'no effect was left started.'}
      </p>
      <table class="facts">
        <tbody>
          <tr><th>Held since</th><td>{at(j.held_at, now)}</td></tr>
          <tr><th>Worker</th><td>{a?.worker ?? '—'}{a?.instance ? ` (instance ${a.instance})` : ''}</td></tr>
          <tr><th>Attempt</th><td>{a ? `${a.attempt} (fencing token ${a.fencingToken})` : '—'}</td></tr>
          <tr><th>Started</th><td>{at(a?.startedAt, now)}</td></tr>
          <tr><th>Last heartbeat</th><td>{at(a?.lastHeartbeatAt, now)}</td></tr>
          <tr><th>Lease expired</th><td>{at(a?.leaseExpiresAt, now)}</td></tr>
          <tr><th>Why</th><td>{a?.why ?? '—'}</td></tr>
          <tr><th>Progress</th><td><code>{j.progress ?? '—'}</code></td></tr>
          <tr><th>Checkpoint</th><td><code>{j.checkpoint ?? '—'}</code></td></tr>
        </tbody>
      </table>
      <h3>Effects</h3>
      {props.effects.length === 0 ? (
        <p class="empty">No effect recorded (once() and step() keys).</p>
      ) : (
        <table>
          <thead><tr><th>key</th><th>state</th><th>attempt</th><th>worker</th><th>started</th><th>done</th></tr></thead>
          <tbody>
            {props.effects.map((e) => (
              <tr>
                <td>{e.key}</td>
                <td>{e.state === 'started' ? 'started, never done: it may or may not have happened' : 'done'}</td>
                <td>{e.attempt}</td>
                <td>{e.workerId ?? '—'}</td>
                <td>{at(e.createdAt, now)}</td>
                <td>{at(e.completedAt, now)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** The forms that end a hold; each needs a reason (kept in the audit trail and on the job's event). */
export function HeldActions(props: { job: JobRecord; csrf: string }) {
  const base = `/dashboard/jobs/${props.job.id}/held`;
  const reason = <label>Reason <input type="text" name="reason" maxlength={500} required /></label>;
  const forms: Child[] = [
    <form method="post" action={`${base}/release`} class="action">
      <FormToken csrf={props.csrf} />
      <p class="hint">Release: back to the queue, due now; it runs again (the next attempt sees the checkpoint and the effects ledger).</p>
      {reason}
      <button type="submit">Release (run again)</button>
    </form>,
    <form method="post" action={`${base}/complete`} class="action">
      <FormToken csrf={props.csrf} />
      <p class="hint">Complete by hand: the lost attempt did the work; record a result (JSON, optional).</p>
      <label>Result <input type="text" name="result" maxlength={10000} /></label>
      {reason}
      <button type="submit">Complete by hand</button>
    </form>,
    <form method="post" action={`${base}/fail`} class="action danger">
      <FormToken csrf={props.csrf} />
      {reason}
      <button type="submit">Fail for good</button>
    </form>,
  ];
  return <div class="actions">{forms}</div>;
}

/** The held jobs (the zombies page's section), longest held first. */
export function HeldList(props: { jobs: JobRecord[]; now: number }) {
  if (props.jobs.length === 0) return <p class="empty">No job is held for a person.</p>;
  return (
    <div class="table-scroll">
      <table id="held-jobs">
        <thead><tr><th>job</th><th>queue</th><th>held</th><th>lost attempt of</th><th>last heartbeat</th><th>why</th></tr></thead>
        <tbody>
          {props.jobs.map((j) => {
            const a = parseLostAttempt(j.held_attempt);
            return (
              <tr>
                <td><a href={`/dashboard/jobs/${j.id}`}>{String(j.id)}</a></td>
                <td>{j.queue_name}</td>
                <td>{fmtRelative(j.held_at!, props.now)}</td>
                <td>{a?.worker ?? '—'}</td>
                <td>{a?.lastHeartbeatAt == null ? '—' : fmtRelative(a.lastHeartbeatAt, props.now)}</td>
                <td>{a?.why ?? '—'}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
