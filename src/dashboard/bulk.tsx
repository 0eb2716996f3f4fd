/**
 * Dashboard bulk actions over the jobs list filter (queue + status), admin only:
 *
 * 1. GET /dashboard/bulk?queue=&status= is the dry run: how many jobs match,
 *    and how many at most will be acted on (the hard cap,
 *    LEASEHOLD_BULK_ACTION_CAP). Nothing changes.
 * 2. Its confirmation form POSTs /dashboard/bulk (CSRF-checked by the
 *    dashboard guard) with the number shown, typed again, and a reason. The
 *    action then changes at most that number of jobs, never more than the cap,
 *    in one guarded statement (src/db/store/operator.ts), each recorded in
 *    the audit trail with who and why.
 *
 * retry: failed or cancelled jobs; cancel: pending ones; requeue: running jobs
 * the reaper itself would take back now only (src/db/store/requeue.ts): a live
 * lease, a lease inside its grace or a live owner's job is never taken in bulk.
 */
import type { Context, Hono } from 'hono';
import type { Child } from 'hono/jsx';
import type { AppDeps } from '../api/router.ts';
import { bulkKindFor, jobsBulkAct, jobsBulkMatching, type BulkKind } from '../db/store/operator.ts';
import { ErrorPage, isJobStatus, jobsQuery } from './views.tsx';
import { alreadySubmitted, htmlDocument, layoutPage, readOnlyRefusal, type DashboardEnv } from './page.tsx';
import { alongside, once } from './acting.ts';
import { storableText } from '../core/text.ts';
import { hasToken } from '../core/tokens.ts';

type Env = DashboardEnv;

/** Matching jobs are counted up to this many (a dry run stays cheap on a huge table). */
const BULK_COUNT_LIMIT = 100_000;

/** "job" for one, "jobs" otherwise: "1 matching running job". */
const jobs = (n: number) => (n === 1 ? 'job' : 'jobs');

const VERB: Record<BulkKind, { button: string; done: string; what: (status: string, n: number) => string }> = {
  retry: { button: 'Retry', done: 'retried (back to pending with a fresh attempt budget)', what: (s, n) => `${s} ${jobs(n)}` },
  cancel: { button: 'Cancel', done: 'cancelled', what: (_s, n) => `pending ${jobs(n)}` },
  requeue: { button: 'Requeue', done: 'requeued (their expired leases are void)', what: (_s, n) => `running ${jobs(n)} the reaper would take back now` },
};

const doc = htmlDocument;

export function registerBulkRoutes(app: Hono<Env>, deps: AppDeps) {
  const { db, config, clock } = deps;
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
    // The store takes the database clock itself: no separate read of "now".
    const matching = await jobsBulkMatching(db, { ...f, now: clock.now(), max: BULK_COUNT_LIMIT, rules: config });
    const limit = Math.min(matching, cap());
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
        </p>
        {f.kind === 'requeue' ? (
          <p class="hint">
            Only running jobs the reaper itself would take back now are requeued: lease plus grace passed and the owner no longer looks alive (or the reaper has
            waited its limit for it), or the deadline passed. A job that heartbeats or beats before the action is left alone.
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
    const also = alongside(c, db, { action: 'jobs.bulk', queue: f.queue ?? null, target: `${f.kind} ${f.status} jobs in ${f.queue ? `queue ${f.queue}` : 'every queue'}`, before: null, after: filter, reason: reasonText, now: clock.now() }, config.trustProxy === 'true');
    const ran = await once(() => jobsBulkAct(db, { ...f, actor, reason: reasonText, now: clock.now(), limit, rules: config, also }));
    if (!ran) return alreadySubmitted(c);
    const ids = ran.value;
    const list = `/dashboard/jobs${jobsQuery({ queue: f.queue, status: f.status })}`;
    return shell(
      c,
      `Bulk ${f.kind}: done`,
      <>
        <p id="bulk-done" class="notice" role="status">
          {ids.length} {ids.length === 1 ? 'job' : 'jobs'} {VERB[f.kind].done}
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
