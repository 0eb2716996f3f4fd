/**
 * Dashboard bulk actions over the jobs list filter (queue + status), admin only:
 *
 * 1. GET /dashboard/bulk?queue=&status=[&batch=] is the dry run: how many
 *    jobs match, how many at most will be acted on (the hard cap,
 *    LEASEHOLD_BULK_ACTION_CAP, or a smaller batch the operator chose), and
 *    the first of the jobs it will touch, each with why (for a requeue, the
 *    reaper's own decision). Nothing changes.
 * 2. Its confirmation form POSTs /dashboard/bulk (CSRF-checked by the
 *    dashboard guard) with the number shown, typed again, and a reason. The
 *    action then changes at most that number of jobs, never more than the cap,
 *    in one guarded statement (src/db/store/operator.ts), each recorded in
 *    the audit trail with who and why.
 *
 * retry: failed or cancelled jobs; cancel: pending ones; requeue: running jobs
 * the reaper itself would take back now only (src/db/store/requeue.ts): a live
 * lease, a lease inside its grace, a live owner's job or a lease held after a
 * server's restart or pause is never taken in bulk; and each is done what the
 * reaper would do, so a job whose attempts are spent is failed for good (the
 * dry run counts those before the operator confirms).
 */
import type { Context, Hono } from 'hono';
import type { Child } from 'hono/jsx';
import type { AppDeps } from '../api/deps.ts';
import { bulkKindFor, type BulkKind } from '../core/bulk-kind.ts';
import { ErrorPage } from './error-page.tsx';
import { isJobStatus, jobsQuery } from './jobs-filter.ts';
import { reaperView } from './reaper-view.ts';
import { fmtRelative } from './format.ts';
import { alreadySubmitted, htmlDocument, layoutPage, readOnlyRefusal, type DashboardEnv } from './page.tsx';
import { alongside, once } from './acting.ts';
import { storableText } from '../core/text.ts';
import { hasToken } from '../core/tokens.ts';
import { requeueText, requeueVerdict } from '../engine/operator-actions.ts';
import type { BulkPreviewRow, RunningJobView } from '../db/store/port.ts';

type Env = DashboardEnv;

/** Matching jobs are counted up to this many (a dry run stays cheap on a huge table). */
const BULK_COUNT_LIMIT = 100_000;

/** The dry run lists at most this many of the jobs it will touch. */
const PREVIEW_ROWS = 50;
/** ... and, for a requeue, at most this many expired leases it leaves alone, with the reaper's why. */
const LEFT_ALONE_ROWS = 20;

/** "job" for one, "jobs" otherwise: "1 matching running job". */
const jobs = (n: number) => (n === 1 ? 'job' : 'jobs');

const VERB: Record<BulkKind, { button: string; done: string; what: (status: string, n: number) => string }> = {
  retry: { button: 'Retry', done: 'retried (back to pending with a fresh attempt budget)', what: (s, n) => `${s} ${jobs(n)}` },
  cancel: { button: 'Cancel', done: 'cancelled', what: (_s, n) => `pending ${jobs(n)}` },
  requeue: { button: 'Requeue', done: 'requeued (their expired leases are void)', what: (_s, n) => `running ${jobs(n)} the reaper would take back now` },
};

const doc = htmlDocument;

export function registerBulkRoutes(app: Hono<Env>, deps: AppDeps) {
  const { store, config, clock } = deps;
  const open = !hasToken(config, 'admin');
  const cap = () => config.bulkActionCap ?? 100;

  const shell = (c: Context<Env>, title: string, children: Child, status: 200 | 400 = 200) =>
    layoutPage(c, { title, nav: 'jobs', loggedIn: !open }, children, status);
  const bad = (c: Context<Env>, message: string, back: string) =>
    shell(
      c,
      'Bulk action: nothing changed',
      <>
        <p class="notice error">{message}</p>
        <p>
          <a href={back}>Back to the dry run</a>
        </p>
      </>,
      400,
    );

  /** queue + status from a query or a form: the filter, or a message. */
  const parse = (queueRaw: unknown, statusRaw: unknown) => {
    const queue = typeof queueRaw === 'string' && queueRaw !== '' ? queueRaw : undefined;
    if (queue !== undefined && queue.length > 200) return 'queue: at most 200 characters';
    const status = isJobStatus(statusRaw) ? statusRaw : undefined;
    const kind = status && bulkKindFor(status);
    if (!status || !kind) return 'status: a bulk action takes failed or cancelled (retry), pending (cancel) or running (requeue expired leases) jobs';
    return { queue, status, kind };
  };

  app.get('/dashboard/bulk', async (c) => {
    // The dry run is a GET, so the guard's refusal of read-only POSTs does not cover it.
    if (c.get('session').role !== 'admin') return readOnlyRefusal(c);
    const f = parse(c.req.query('queue'), c.req.query('status'));
    if (typeof f === 'string') return doc(c, <ErrorPage title="Bad filter" message={f} />, 400);
    const batchText = c.req.query('batch')?.trim() || undefined;
    const batch = batchText === undefined ? cap() : /^[0-9]{1,9}$/.test(batchText) ? Number(batchText) : 0;
    if (batch < 1 || batch > cap()) {
      return doc(c, <ErrorPage title="Bad batch size" message={`batch: a whole number from 1 to the cap (${cap()}), got ${JSON.stringify(batchText)}. Nothing changed.`} />, 400);
    }
    // One instant for the count, the list and the reaper's reasons.
    const clocked = clock.now();
    const t = typeof clocked === 'number' ? clocked : await store.readNow();
    const matching = await store.jobsBulkMatching({ ...f, now: t, max: BULK_COUNT_LIMIT, rules: config });
    const limit = Math.min(matching, batch);
    // A requeue's whole batch is planned (at most the cap), so the confirmation can say how many fail for good.
    const planned = await store.jobsBulkPreview({ ...f, now: t, limit: f.kind === 'requeue' ? limit : Math.min(limit, PREVIEW_ROWS), rules: config });
    const preview = planned.slice(0, PREVIEW_ROWS);
    const failing = planned.filter((r) => r.requeue?.action === 'fail').length;
    const views = f.kind === 'requeue' ? await store.jobsRunningFlagged({ ids: preview.map((r) => r.id), now: t, defaults: config }) : [];
    const leftAlone =
      f.kind === 'requeue'
        ? (await store.jobsListZombieCandidates({ now: t, defaults: config, limit: 500 }))
            .filter((j) => (f.queue === undefined || j.queue_name === f.queue) && j.lease_expires_at !== null && j.lease_expires_at < t && !reaperTakes(j, t, config))
            .slice(0, LEFT_ALONE_ROWS)
        : [];
    const list = `/dashboard/jobs${jobsQuery({ queue: f.queue, status: f.status })}`;
    const where = f.queue ? `queue ${f.queue}` : 'every queue';
    const verb = VERB[f.kind];
    return shell(
      c,
      `Bulk ${f.kind}: dry run`,
      <>
        <p id="bulk-count" class="notice" role="status">
          {matching >= BULK_COUNT_LIMIT ? `At least ${matching}` : matching} matching {verb.what(f.status, matching)} in {where}; at most {cap()} will be acted on
          {matching > 0 ? `, this time ${limit}` : ''}. Nothing has changed yet.
          {limit > 0 ? ` ${preview.length === limit ? (limit === 1 ? 'It is' : `All ${limit} are`) : `The first ${preview.length} are`} listed below.` : ''}
        </p>
        {limit > 0 || batchText !== undefined ? (
          <form method="get" action="/dashboard/bulk" class="filters bulk-batch">
            {f.queue ? <input type="hidden" name="queue" value={f.queue} /> : null}
            <input type="hidden" name="status" value={f.status} />
            <label>
              Batch size (1 to {String(cap())})
              <input type="number" name="batch" min={1} max={cap()} step={1} value={String(batch)} required inputmode="numeric" />
            </label>
            <button type="submit">Dry run this batch</button>
          </form>
        ) : null}
        {f.kind === 'requeue' ? (
          <p class="hint">
            Only running jobs the reaper itself would take back now are requeued: lease plus grace passed and the owner no longer looks alive (or the reaper has
            waited its limit for it), or the deadline passed. A job that heartbeats or beats before the action is left alone. Many at once after an
            incident? <a href={`/dashboard/canary${f.queue ? `?queue=${encodeURIComponent(f.queue)}` : ''}`}>Requeue them as a canary</a>: a few first,
            the rest in steps while those stay healthy.
          </p>
        ) : null}
        {limit === 0 ? (
          <p class="empty">Nothing to do.</p>
        ) : (
          <form method="post" action="/dashboard/bulk" class="action danger">
            <input type="hidden" name="_csrf" value={c.get('csrf')} />
            {f.queue ? <input type="hidden" name="queue" value={f.queue} /> : null}
            <input type="hidden" name="status" value={f.status} />
            <input type="hidden" name="expected" value={String(limit)} />
            {failing > 0 ? (
              <p id="bulk-verdict" class="notice error">
                {failing} of the {limit} will be failed for good, as the reaper would: their attempts (or lost-attempt budget) are spent. The other{' '}
                {limit - failing} go back to pending.
              </p>
            ) : null}
            <label>
              Type {String(limit)} to confirm <input type="text" name="confirm" required autocomplete="off" inputmode="numeric" />
            </label>
            <label>
              Reason <input type="text" name="reason" maxlength={500} required />
            </label>
            <button type="submit">
              {verb.button} {String(limit)} {verb.what(f.status, limit)}
            </button>
          </form>
        )}
        {preview.length > 0 ? <PreviewTable rows={preview} kind={f.kind} views={views} now={t} config={config} /> : null}
        {leftAlone.length > 0 ? (
          <>
            <h2>Expired leases left alone</h2>
            <p class="hint">Running jobs whose lease expired that the reaper would not take back now, so neither does this action:</p>
            <div class="table-scroll">
              <table class="bulk-left-alone">
                <thead>
                  <tr>
                    <th>Id</th>
                    <th>Queue</th>
                    <th>Owner</th>
                    <th>Why the reaper waits</th>
                  </tr>
                </thead>
                <tbody>
                  {leftAlone.map((j) => (
                    <tr id={`left-alone-${j.id}`}>
                      <td>
                        <a href={`/dashboard/jobs/${j.id}`}>{j.id}</a>
                      </td>
                      <td>{j.queue_name}</td>
                      <td>{j.locked_by ?? '—'}</td>
                      <td class="why">{reaperView(j, t, config)?.why ?? '—'}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </>
        ) : null}
        <p>
          <a href={list}>Back to the jobs list</a>
        </p>
      </>,
    );
  });

  app.post('/dashboard/bulk', async (c) => {
    const session = c.get('session');
    const form = await c.req.parseBody();
    const f = parse(form.queue, form.status);
    if (typeof f === 'string') return doc(c, <ErrorPage title="Bad filter" message={f} />, 400);
    const back = `/dashboard/bulk${jobsQuery({ queue: f.queue, status: f.status })}`;
    const expectedText = typeof form.expected === 'string' ? form.expected.trim() : '';
    const expected = /^[0-9]{1,9}$/.test(expectedText) ? Number(expectedText) : 0;
    if (expected <= 0 || expected > cap()) return bad(c, `Nothing changed: the count must be between 1 and the cap (${cap()}). Run the dry run again.`, back);
    if (typeof form.confirm !== 'string' || form.confirm.trim() !== String(expected)) {
      return bad(c, `Nothing changed: to confirm, type the number shown (${expected}) exactly.`, back);
    }
    const reasonText = typeof form.reason === 'string' ? storableText(form.reason.trim(), 500) : '';
    if (reasonText === '') return bad(c, 'Nothing changed: a bulk action needs a reason.', back);
    const actor = session.name;
    const limit = Math.min(expected, cap());
    const filter = JSON.stringify({ queue: f.queue ?? null, status: f.status, action: f.kind, limit });
    const also = alongside(c, { action: 'jobs.bulk', queue: f.queue ?? null, target: `${f.kind} ${f.status} jobs in ${f.queue ? `queue ${f.queue}` : 'every queue'}`, before: null, after: filter, reason: reasonText, now: clock.now() }, config);
    const now = clock.now();
    // What the reaper's rule gives each job (requeue, or fail for good), to say which the action did.
    const plan = f.kind === 'requeue' ? new Map((await store.jobsBulkPreview({ ...f, now, limit, rules: config })).map((r) => [r.id, r.requeue?.action])) : new Map();
    const ran = await once(store, () => deps.engine.bulkAct({ ...f, actor, reason: reasonText, now, limit, rules: config, also }));
    if (!ran) return alreadySubmitted(c);
    const ids = ran.value;
    const failed = ids.filter((id) => plan.get(id) === 'fail').length;
    const list = `/dashboard/jobs${jobsQuery({ queue: f.queue, status: f.status })}`;
    return shell(
      c,
      `Bulk ${f.kind}: done`,
      <>
        <p id="bulk-done" class="notice" role="status">
          {ids.length} {ids.length === 1 ? 'job' : 'jobs'}{' '}
          {failed > 0 ? `taken back as the reaper would: ${ids.length - failed} requeued, ${failed} failed for good (their attempts were spent)` : VERB[f.kind].done}
          {ids.length < expected ? ` (${expected} confirmed; the others had moved on)` : ''}.
        </p>
        {ids.length > 0 ? (
          <ul class="bulk-ids">
            {ids.map((id) => (
              <li>
                <a href={`/dashboard/jobs/${id}`}>{id}</a>
              </li>
            ))}
          </ul>
        ) : null}
        <p>
          <a href={list}>Back to the jobs list</a>
        </p>
      </>,
    );
  });
}

/** Whether the reaper (decideReap, through reaperView) would take this running job back now. */
function reaperTakes(j: RunningJobView, now: number, config: Parameters<typeof reaperView>[2]): boolean {
  const d = reaperView(j, now, config);
  return d !== null && (d.action === 'requeue' || d.action === 'fail');
}

/** Why this job is in the batch, in the words of the rule that picked it. */
function whyText(r: BulkPreviewRow, kind: BulkKind, view: RunningJobView | undefined, now: number, config: Parameters<typeof reaperView>[2]): string {
  if (kind === 'requeue') {
    // The plan the action follows, in the words every requeue uses.
    if (r.requeue) return requeueText(r.requeue);
    const d = view ? reaperView(view, now, config) : null;
    return d ? requeueVerdict(d) : 'the reaper would take it back now';
  }
  if (kind === 'cancel') return 'pending: not claimed yet';
  return r.last_error ? `${r.status} after ${r.attempt_count} of ${r.max_attempts} attempts: ${r.last_error}` : `${r.status} after ${r.attempt_count} of ${r.max_attempts} attempts`;
}

/** The first jobs the action will touch: id, queue, status, owner and why. */
function PreviewTable(props: { rows: BulkPreviewRow[]; kind: BulkKind; views: RunningJobView[]; now: number; config: Parameters<typeof reaperView>[2] }) {
  const views = new Map(props.views.map((v) => [v.id, v]));
  return (
    <div class="table-scroll">
      <table class="bulk-preview" id="bulk-preview">
        <thead>
          <tr>
            <th>Id</th>
            <th>Queue</th>
            <th>Status</th>
            <th>Owner</th>
            <th>Updated</th>
            <th>Why it is taken</th>
          </tr>
        </thead>
        <tbody>
          {props.rows.map((r) => (
            <tr id={`bulk-job-${r.id}`}>
              <td>
                <a href={`/dashboard/jobs/${r.id}`}>{r.id}</a>
              </td>
              <td>{r.queue_name}</td>
              <td>
                <span class={`status ${r.status}`}>{r.status}</span>
              </td>
              <td>{r.locked_by ?? '—'}</td>
              <td>{fmtRelative(r.updated_at, props.now)}</td>
              <td class="why">{whyText(r, props.kind, views.get(r.id), props.now, props.config)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
