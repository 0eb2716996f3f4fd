/**
 * Held jobs on the dashboard (onLost 'hold', src/core/held.ts): what is known
 * of a held job's lost attempt (worker, last heartbeat, progress, checkpoint,
 * the effects it started and finished), the forms that end the hold
 * (release, complete by hand, fail; a reason is required), and the list the
 * zombies page shows. A job held because a dependency failed (policy
 * 'hold', docs/flows.md) lost no attempt: its forms and its row say so.
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

/**
 * The forms that end a hold; each needs a reason (kept in the audit trail and
 * on the job's event). A job held because a dependency failed (policy 'hold',
 * docs/flows.md) lost no attempt: it gets DependencyHoldActions instead.
 */
export function HeldActions(props: { job: JobRecord; csrf: string }) {
  if (props.job.dependency_failed_by !== null) return <DependencyHoldActions job={props.job} failedBy={props.job.dependency_failed_by} csrf={props.csrf} />;
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

/**
 * A job held because dependency `failedBy` failed: it ran no attempt, and it
 * still waits for that dependency, so releasing the hold would not run it
 * (no Release here). What lets the flow go on is retrying the dependency
 * (its own Retry, offered here too): this job then waits again and runs
 * once the dependency completes. Or a person settles this job without
 * running it: complete it in its place (the jobs waiting for it go on), or
 * fail it (they follow their own policies).
 */
function DependencyHoldActions(props: { job: JobRecord; failedBy: number; csrf: string }) {
  const base = `/dashboard/jobs/${props.job.id}/held`;
  const dependency = `/dashboard/jobs/${props.failedBy}`;
  const reason = (required: boolean) => (
    <label>
      Reason{required ? '' : ' (optional)'} <input type="text" name="reason" maxlength={500} required={required} />
    </label>
  );
  return (
    <div class="actions" id="dependency-hold-actions">
      <form method="post" action={`${dependency}/retry`} class="action">
        <FormToken csrf={props.csrf} />
        <p class="hint">
          Retry <a href={dependency}>job {props.failedBy}</a>, the failed dependency: the flow goes on. This job waits again, no longer held, and runs once job{' '}
          {props.failedBy} completes.
        </p>
        {reason(false)}
        <button type="submit">Retry job {props.failedBy}</button>
      </form>
      <form method="post" action={`${base}/complete`} class="action">
        <FormToken csrf={props.csrf} />
        <p class="hint">Complete by hand, without running it: record a result in its place (JSON, optional); the jobs waiting for this one go on.</p>
        <label>Result <input type="text" name="result" maxlength={10000} /></label>
        {reason(true)}
        <button type="submit">Complete without running</button>
      </form>
      <form method="post" action={`${base}/fail`} class="action danger">
        <FormToken csrf={props.csrf} />
        <p class="hint">Fail for good: it will not run; the jobs waiting for this one follow their own policies.</p>
        {reason(true)}
        <button type="submit">Fail for good</button>
      </form>
    </div>
  );
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
            // Held because a dependency failed (policy 'hold'): no attempt was lost.
            if (j.dependency_failed_by !== null) {
              return (
                <tr>
                  <td><a href={`/dashboard/jobs/${j.id}`}>{String(j.id)}</a></td>
                  <td>{j.queue_name}</td>
                  <td>{fmtRelative(j.held_at!, props.now)}</td>
                  <td>—</td>
                  <td>—</td>
                  <td>dependency <a href={`/dashboard/jobs/${j.dependency_failed_by}`}>{String(j.dependency_failed_by)}</a> failed (policy 'hold'): retry it to let the flow go on</td>
                </tr>
              );
            }
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
