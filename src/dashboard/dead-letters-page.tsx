/**
 * /dashboard/dead-letters: every dead-letter queue (named by a queue's
 * deadLetterQueue setting, or still listing jobs after the setting changed),
 * how many dead letters it lists and from which queues; and, for an admin,
 * their redrive with the caution of the bulk requeue (src/dashboard/bulk.tsx):
 *
 * 1. GET /dashboard/dead-letters/redrive?queue=DEAD[&from=Q][&batch=N] is
 *    the dry run: how many match, how many at most go back (the cap,
 *    LEASEHOLD_BULK_ACTION_CAP, or a smaller batch), and the first of them
 *    with how each died. Nothing changes.
 * 2. Its form POSTs the number shown, typed again, and a reason; at most
 *    that many go back to their own queues, pending now with fresh attempts,
 *    audited as jobs.bulk with the operator's name and the reason. A form
 *    sent twice moves nothing more (its one-time token).
 *
 * A page of its own rather than a section of the queue page: a dead-letter
 * queue holds no jobs of its own (its dead letters stay, failed, in the
 * queues they came from), so it often has no queue page, and the operator
 * looking for what died wants every dead-letter queue in one list. The plan
 * and the redrive are the engine's (src/engine/redrive.ts), as for the API
 * and `leasehold jobs redrive`.
 */
import type { Context, Hono } from 'hono';
import type { Child } from 'hono/jsx';
import type { AppDeps } from '../api/deps.ts';
import { QUEUE_PATTERN } from '../api/http.ts';
import { storableText } from '../core/text.ts';
import { hasToken } from '../core/tokens.ts';
import type { DeadLetterQueueRow, DeadLetterRow } from '../db/store/port.ts';
import { diedText, planRedrive, REDRIVE_COUNT_LIMIT, REDRIVE_NEEDS_REASON } from '../engine/redrive.ts';
import { once, sessionActor } from './acting.ts';
import { ErrorPage } from './error-page.tsx';
import { fmtRelative } from './format.ts';
import { alreadySubmitted, htmlDocument, layoutPage, readOnlyRefusal, type DashboardEnv } from './page.tsx';

type Env = DashboardEnv;

/** The dry run lists at most this many of the dead letters it will send back. */
const PREVIEW_ROWS = 50;
/** The list shows at most this many (dead-letter queue, queue) pairs. */
const LISTED_PAIRS = 500;

const letters = (n: number) => (n === 1 ? 'dead letter' : 'dead letters');

/** A queue name from a query or a form, checked as the API checks it: the name, undefined when left empty, or a message naming the field. */
function queueField(raw: unknown, field: string, required: boolean): string | undefined | { problem: string } {
  const name = typeof raw === 'string' ? raw.trim() : '';
  if (name === '') return required ? { problem: `${field}: the dead-letter queue whose jobs to send back` } : undefined;
  if (!QUEUE_PATTERN.test(name)) return { problem: `${field}: a queue name (letters, digits, and . _ : - ; at most 200 characters), got ${JSON.stringify(name.slice(0, 60))}` };
  return name;
}

const query = (p: { queue: string; from?: string | undefined; batch?: number | undefined }) =>
  `?${new URLSearchParams({ queue: p.queue, ...(p.from ? { from: p.from } : {}), ...(p.batch !== undefined ? { batch: String(p.batch) } : {}) })}`;

export function registerDeadLettersPage(app: Hono<Env>, deps: AppDeps) {
  const { store, config, clock } = deps;
  const loggedIn = hasToken(config, 'admin');
  const cap = () => config.bulkActionCap ?? 100;
  const shell = (c: Context<Env>, title: string, children: Child) => layoutPage(c, { title, nav: 'dead-letters', loggedIn }, children);
  const bad = (c: Context<Env>, message: string) => htmlDocument(c, <ErrorPage title="Redrive: nothing changed" message={message} />, 400);
  const nowMs = async () => {
    const n = clock.now();
    return typeof n === 'number' ? n : store.readNow();
  };

  app.get('/dashboard/dead-letters', async (c) => {
    const rows = await store.deadLetterQueuesList({ limit: LISTED_PAIRS });
    return shell(c, 'Dead letters', <DeadLetterQueues rows={rows} admin={c.get('session').role === 'admin'} />);
  });

  app.get('/dashboard/dead-letters/redrive', async (c) => {
    // The dry run is a GET, so the guard's refusal of read-only POSTs does not cover it.
    if (c.get('session').role !== 'admin') return readOnlyRefusal(c);
    const queue = queueField(c.req.query('queue'), 'queue', true);
    if (typeof queue !== 'string') return bad(c, queue!.problem);
    const from = queueField(c.req.query('from'), 'from', false);
    if (typeof from === 'object') return bad(c, from.problem);
    const batchText = c.req.query('batch')?.trim() || undefined;
    const batch = batchText === undefined ? cap() : /^[0-9]{1,9}$/.test(batchText) ? Number(batchText) : 0;
    if (batch < 1 || batch > cap()) return bad(c, `batch: a whole number from 1 to the cap (${cap()}), got ${JSON.stringify(batchText)}`);
    const plan = await planRedrive(store, { deadLetterQueue: queue, fromQueue: from, limit: batch });
    const limit = Math.min(plan.matching, batch);
    const where = `${queue}${from ? ` from queue ${from}` : ''}`;
    return shell(
      c,
      `Redrive ${queue}: dry run`,
      <>
        <p id="redrive-count" class="notice" role="status">
          {plan.matching >= REDRIVE_COUNT_LIMIT ? `At least ${plan.matching}` : plan.matching} {letters(plan.matching)} in {where}; at most {cap()} go back at
          once{plan.matching > 0 ? `, this time ${limit}` : ''}. Nothing has changed yet.
          {limit > 0 ? ` ${limit <= PREVIEW_ROWS ? (limit === 1 ? 'It is' : `All ${limit} are`) : `The first ${PREVIEW_ROWS} are`} listed below.` : ''}
        </p>
        {limit > 0 || batchText !== undefined ? (
          <form method="get" action="/dashboard/dead-letters/redrive" class="filters bulk-batch">
            <input type="hidden" name="queue" value={queue} />
            {from ? <input type="hidden" name="from" value={from} /> : null}
            <label>
              Batch size (1 to {String(cap())})
              <input type="number" name="batch" min={1} max={cap()} step={1} value={String(batch)} required inputmode="numeric" />
            </label>
            <button type="submit">Dry run this batch</button>
          </form>
        ) : null}
        <p class="hint">
          Each goes back to the queue it came from, pending now with a fresh attempt budget (its earlier attempts stay in its events), lowest id first. A job
          whose idempotency key another pending or running job of its queue holds stays dead.
        </p>
        {limit === 0 ? (
          <p class="empty">Nothing to send back.</p>
        ) : (
          <form method="post" action="/dashboard/dead-letters/redrive" class="action danger">
            <input type="hidden" name="_csrf" value={c.get('csrf')} />
            <input type="hidden" name="queue" value={queue} />
            {from ? <input type="hidden" name="from" value={from} /> : null}
            <input type="hidden" name="expected" value={String(limit)} />
            <label>
              Type {String(limit)} to confirm <input type="text" name="confirm" required autocomplete="off" inputmode="numeric" />
            </label>
            <label>
              Reason <input type="text" name="reason" maxlength={500} required />
            </label>
            <button type="submit">
              Send {String(limit)} {letters(limit)} back to their queues
            </button>
          </form>
        )}
        {plan.jobs.length > 0 ? <PreviewTable rows={plan.jobs.slice(0, PREVIEW_ROWS)} now={await nowMs()} /> : null}
        <p>
          <a href="/dashboard/dead-letters">Back to the dead letters</a>
        </p>
      </>,
    );
  });

  app.post('/dashboard/dead-letters/redrive', async (c) => {
    const form = await c.req.parseBody();
    const queue = queueField(form.queue, 'queue', true);
    if (typeof queue !== 'string') return bad(c, queue!.problem);
    const from = queueField(form.from, 'from', false);
    if (typeof from === 'object') return bad(c, from.problem);
    const expectedText = typeof form.expected === 'string' ? form.expected.trim() : '';
    const expected = /^[0-9]{1,9}$/.test(expectedText) ? Number(expectedText) : 0;
    if (expected <= 0 || expected > cap()) return bad(c, `expected: the count must be between 1 and the cap (${cap()}); run the dry run again`);
    if (typeof form.confirm !== 'string' || form.confirm.trim() !== String(expected)) return bad(c, `confirm: type the number shown (${expected}) exactly`);
    const reason = typeof form.reason === 'string' ? storableText(form.reason.trim(), 500) : '';
    if (reason === '') return bad(c, `reason: ${REDRIVE_NEEDS_REASON}`);
    const by = sessionActor(c, c.get('session'), config);
    const ran = await once(store, () =>
      deps.engine.redrive({ deadLetterQueue: queue, fromQueue: from, limit: expected, by, reason, now: clock.now(), also: { formNonce: c.get('formNonce') } }),
    );
    if (!ran) return alreadySubmitted(c);
    const { moved, movedTo } = ran.value;
    return shell(
      c,
      `Redrive ${queue}: done`,
      <>
        <p id="redrive-done" class="notice" role="status">
          {moved.length} {letters(moved.length)} sent back{movedTo.length > 0 ? ` (${movedTo.map((m) => `${m.jobs} to ${m.queue}`).join(', ')})` : ''}, pending now with
          fresh attempts{moved.length < expected ? ` (${expected} confirmed; the others had moved on, or another active job holds their idempotency key)` : ''}.
        </p>
        {moved.length > 0 ? (
          <ul class="bulk-ids">
            {moved.map((j) => (
              <li>
                <a href={`/dashboard/jobs/${j.id}`}>{j.id}</a> ({j.queue})
              </li>
            ))}
          </ul>
        ) : null}
        <p>
          <a href={`/dashboard/dead-letters/redrive${query({ queue, from })}`}>Dry run again</a> · <a href="/dashboard/dead-letters">Back to the dead letters</a>
        </p>
      </>,
    );
  });
}

/** Each dead-letter queue, its count, and the queues it lists jobs from (the admin's link to the dry run per queue and for all). */
function DeadLetterQueues(props: { rows: DeadLetterQueueRow[]; admin: boolean }) {
  if (props.rows.length === 0) {
    return (
      <p class="empty">
        No dead-letter queue: name one with PATCH /api/v1/queues/Q/settings {'{"deadLetterQueue": "Q-dead"}'} (its jobs that fail for good are listed there).
      </p>
    );
  }
  const byQueue = new Map<string, DeadLetterQueueRow[]>();
  for (const r of props.rows) byQueue.set(r.deadLetterQueue, [...(byQueue.get(r.deadLetterQueue) ?? []), r]);
  return (
    <div class="table-scroll">
      <table class="dead-letter-queues">
        <thead>
          <tr>
            <th>Dead-letter queue</th>
            <th>Dead letters</th>
            <th>From</th>
            {props.admin ? <th>Redrive</th> : null}
          </tr>
        </thead>
        <tbody>
          {[...byQueue].map(([dead, rows]) => {
            const total = rows.reduce((n, r) => n + r.jobs, 0);
            return (
              <tr id={`dead-letters-${dead}`}>
                <td>{dead}</td>
                <td>{total}</td>
                <td>
                  <ul>
                    {rows.map((r) => (
                      <li>
                        <a href={`/dashboard/jobs?queue=${encodeURIComponent(r.fromQueue)}&status=failed`}>{r.fromQueue}</a>: {r.jobs}
                        {r.named ? '' : ' (its setting no longer names this queue)'}
                        {props.admin && r.jobs > 0 && rows.length > 1 ? (
                          <>
                            {' '}
                            <a href={`/dashboard/dead-letters/redrive${query({ queue: dead, from: r.fromQueue })}`}>dry run these</a>
                          </>
                        ) : null}
                      </li>
                    ))}
                  </ul>
                </td>
                {props.admin ? <td>{total > 0 ? <a href={`/dashboard/dead-letters/redrive${query({ queue: dead })}`}>Dry run the redrive</a> : '—'}</td> : null}
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

/** The first dead letters the redrive will send back: id, its queue, attempts, how it died, when, its last error. */
function PreviewTable(props: { rows: DeadLetterRow[]; now: number }) {
  return (
    <div class="table-scroll">
      <table class="bulk-preview" id="redrive-preview">
        <thead>
          <tr>
            <th>Id</th>
            <th>Back to queue</th>
            <th>Attempts</th>
            <th>How it died</th>
            <th>Dead-lettered</th>
            <th>Last error</th>
          </tr>
        </thead>
        <tbody>
          {props.rows.map((j) => (
            <tr id={`redrive-job-${j.id}`}>
              <td>
                <a href={`/dashboard/jobs/${j.id}`}>{j.id}</a>
              </td>
              <td>{j.queue_name}</td>
              <td>
                {j.attempt_count} of {j.max_attempts}
              </td>
              <td>{diedText(j)}</td>
              <td>{fmtRelative(j.dead_lettered_at, props.now)}</td>
              <td class="why">{j.last_error ?? '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
