/**
 * /dashboard/canary: canary requeues. The list of runs and, for an admin,
 * the form that starts one over a queue's running jobs (the first step
 * now, then steps `growth` times larger while each stays healthy for its
 * window); /dashboard/canary/:id shows a run's progress, each step's jobs,
 * every decision with its reason, and (while it runs) a cancel form. The
 * progress panel refreshes itself while the run watches. Starting and
 * cancelling are the engine's (src/engine/canary-start.ts) and the store's,
 * as for the API and `leasehold jobs requeue --canary`.
 */
import type { Context, Hono } from 'hono';
import type { AppDeps } from '../api/deps.ts';
import { CANARY_LIMITS } from '../core/canary.ts';
import { LeaseholdError } from '../core/errors.ts';
import { storableText } from '../core/text.ts';
import { hasToken } from '../core/tokens.ts';
import { canaryOptions, startCanary } from '../engine/canary-start.ts';
import type { CanaryEventRecord, CanaryRunRecord, CanaryStepRecord } from '../db/store/port.ts';
import { once, sessionActor } from './acting.ts';
import { ErrorPage } from './error-page.tsx';
import { fmtTime } from './format.ts';
import { alreadySubmitted, htmlDocument, layoutPage, readOnlyRefusal, type DashboardEnv } from './page.tsx';

type Run = CanaryRunRecord & { remaining: number };

/** A whole number from a form field within its bounds, or undefined when left empty; a message when it is not one. */
function formNumber(form: Record<string, unknown>, field: string, bounds: { min: number; max: number }, scale = 1): number | undefined | string {
  const raw = typeof form[field] === 'string' ? (form[field] as string).trim() : '';
  if (raw === '') return undefined;
  const n = /^[0-9]{1,9}$/.test(raw) ? Number(raw) * scale : NaN;
  if (!(n >= bounds.min && n <= bounds.max)) return `${field}: a whole number from ${bounds.min / scale} to ${bounds.max / scale}`;
  return n;
}

export function registerCanaryPage(app: Hono<DashboardEnv>, deps: AppDeps) {
  const { store, config, clock } = deps;
  const loggedIn = hasToken(config, 'admin');
  const page = (c: Context<DashboardEnv>, title: string, body: Parameters<typeof layoutPage>[2], status: 200 | 400 | 404 | 409 = 200) =>
    layoutPage(c, { title, nav: 'jobs', loggedIn }, body, status);
  const bad = (c: Context<DashboardEnv>, message: string) => htmlDocument(c, <ErrorPage title="Canary requeue: nothing started" message={message} />, 400);

  app.get('/dashboard/canary', async (c) => {
    const runs = await store.canaryRunsList({ limit: 50 });
    const admin = c.get('session').role === 'admin';
    return page(
      c,
      'Canary requeues',
      <>
        {admin ? <StartForm csrf={c.get('csrf')} queue={c.req.query('queue') ?? ''} /> : null}
        <RunsTable runs={runs} />
      </>,
    );
  });

  app.post('/dashboard/canary', async (c) => {
    const form = await c.req.parseBody();
    const queue = typeof form.queue === 'string' ? form.queue.trim() : '';
    if (queue === '' || queue.length > 200) return bad(c, 'queue: the name of the queue whose running jobs to requeue (at most 200 characters)');
    const numbers = {
      first: formNumber(form, 'first', CANARY_LIMITS.first),
      growth: formNumber(form, 'growth', CANARY_LIMITS.growth),
      windowMs: formNumber(form, 'windowSeconds', CANARY_LIMITS.windowMs, 1000),
      maxFailures: formNumber(form, 'maxFailures', CANARY_LIMITS.maxFailures),
    };
    for (const v of Object.values(numbers)) if (typeof v === 'string') return bad(c, v);
    if (numbers.first === undefined) return bad(c, 'first: how many jobs the first step requeues');
    const reason = typeof form.reason === 'string' ? storableText(form.reason.trim(), 500) : '';
    if (reason === '') return bad(c, 'reason: a canary requeue needs a reason (kept in the audit trail)');
    const given = Object.fromEntries(Object.entries(numbers).filter(([, v]) => v !== undefined)) as { first: number };
    const now = clock.now();
    const by = sessionActor(c, c.get('session'), config);
    let ran: { value: Awaited<ReturnType<typeof startCanary>> } | undefined;
    try {
      ran = await once(store, () =>
        startCanary(
          { store, config, jobsBecameClaimable: deps.engine.jobsBecameClaimable },
          { queue, force: form.force === 'on', options: canaryOptions(config, given), by, reason, now, also: { formNonce: c.get('formNonce') } },
        ),
      );
    } catch (err) {
      if (err instanceof LeaseholdError && err.code === 'conflict') return htmlDocument(c, <ErrorPage title="Canary requeue: nothing started" message={err.message} />, 409);
      throw err;
    }
    if (!ran) return alreadySubmitted(c);
    return c.redirect(`/dashboard/canary/${ran.value.run.id}`, 303);
  });

  app.get('/dashboard/canary/:id', async (c) => {
    const id = Number(c.req.param('id'));
    const found = Number.isSafeInteger(id) ? await store.canaryRunRead({ id }) : null;
    if (!found) return htmlDocument(c, <ErrorPage title="Not found" message={`No canary run has id ${c.req.param('id')}.`} />, 404);
    const panel = <RunPanel {...found} csrf={c.get('csrf')} admin={c.get('session').role === 'admin'} />;
    // htmx refreshes the panel alone while the run watches.
    if (c.req.header('hx-request') === 'true') return htmlDocument(c, panel);
    return page(c, `Canary run ${found.run.id}`, panel);
  });

  app.post('/dashboard/canary/:id/cancel', async (c) => {
    if (c.get('session').role !== 'admin') return readOnlyRefusal(c);
    const id = Number(c.req.param('id'));
    const form = await c.req.parseBody();
    const reason = typeof form.reason === 'string' ? storableText(form.reason.trim(), 500) : '';
    if (reason === '') return htmlDocument(c, <ErrorPage title="Nothing cancelled" message="reason: a cancel needs a reason (kept in the audit trail)" />, 400);
    const by = sessionActor(c, c.get('session'), config);
    const ran = await once(store, () => store.canaryRunCancel({ runId: Number.isSafeInteger(id) ? id : 0, by, reason, now: clock.now(), also: { formNonce: c.get('formNonce') } }));
    if (!ran) return alreadySubmitted(c);
    if (!ran.value.ok && ran.value.reason === 'not_found') return htmlDocument(c, <ErrorPage title="Not found" message={`No canary run has id ${id}.`} />, 404);
    if (!ran.value.ok) return htmlDocument(c, <ErrorPage title="Nothing cancelled" message={`Canary run ${id} is ${ran.value.state}: only a run still watching can be cancelled.`} />, 409);
    return c.redirect(`/dashboard/canary/${id}`, 303);
  });
}

function StartForm(props: { csrf: string; queue: string }) {
  return (
    <form method="post" action="/dashboard/canary" class="action danger canary-start">
      <input type="hidden" name="_csrf" value={props.csrf} />
      <p class="hint">
        Requeues a queue's running jobs in steps: the first step now, each next one (growth times larger) only after the one before stayed healthy for the
        window: none of its new attempts failed, no stale write from an earlier owner was refused, no duplicate was reported, no heartbeat fell behind. Otherwise
        the run stops by itself and says why. Without force it takes only what the reaper itself would take now.
      </p>
      <label>
        Queue <input type="text" name="queue" value={props.queue} maxlength={200} required />
      </label>
      <label>
        First step (jobs) <input type="number" name="first" min={CANARY_LIMITS.first.min} max={CANARY_LIMITS.first.max} value="5" required />
      </label>
      <label>
        Growth <input type="number" name="growth" min={CANARY_LIMITS.growth.min} max={CANARY_LIMITS.growth.max} value="2" />
      </label>
      <label>
        Window (seconds) <input type="number" name="windowSeconds" min={1} max={86_400} value="60" />
      </label>
      <label>
        Failures allowed per step <input type="number" name="maxFailures" min={0} max={CANARY_LIMITS.maxFailures.max} value="0" />
      </label>
      <label>
        <input type="checkbox" name="force" /> Force: also take live leases (their jobs may run twice)
      </label>
      <label>
        Reason <input type="text" name="reason" maxlength={500} required />
      </label>
      <button type="submit">Start the canary requeue</button>
    </form>
  );
}

function RunsTable(props: { runs: Run[] }) {
  if (props.runs.length === 0) return <p class="empty">No canary requeues yet.</p>;
  return (
    <table class="canary-runs">
      <thead>
        <tr>
          <th>Run</th>
          <th>Queue</th>
          <th>State</th>
          <th>Step</th>
          <th>Requeued</th>
          <th>Left</th>
          <th>Why it ended</th>
        </tr>
      </thead>
      <tbody>
        {props.runs.map((r) => (
          <tr id={`canary-${r.id}`}>
            <td>
              <a href={`/dashboard/canary/${r.id}`}>#{r.id}</a>
            </td>
            <td>{r.queue}</td>
            <td>{r.state}</td>
            <td>{r.step}</td>
            <td>
              {r.requeued} of {r.selected}
            </td>
            <td>{r.remaining}</td>
            <td>{r.stopWhy ?? '—'}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function RunPanel(props: { run: Run; steps: CanaryStepRecord[]; events: CanaryEventRecord[]; csrf: string; admin: boolean }) {
  const { run } = props;
  const watching = run.state === 'watching';
  const refresh = watching ? { 'hx-get': `/dashboard/canary/${run.id}`, 'hx-trigger': 'every 3s', 'hx-swap': 'outerHTML' } : {};
  return (
    <section id="canary-run" {...refresh}>
      <p id="canary-status" class={run.state === 'stopped' ? 'notice error' : 'notice'} role="status">
        {run.state === 'watching'
          ? `Step ${run.step} is watched until ${fmtTime(run.stepStartedAt === null ? null : run.stepStartedAt + run.windowMs)}.`
          : run.state === 'done'
            ? `Done after step ${run.step}.`
            : run.state === 'cancelled'
              ? `Cancelled after step ${run.step}: ${run.stopWhy}.`
              : `Stopped by itself after step ${run.step} (${run.stopReason}): ${run.stopWhy}.`}{' '}
        {run.requeued} of {run.selected} requeued{run.failedForGood ? `, ${run.failedForGood} failed for good as the reaper would` : ''}
        {run.skipped ? `, ${run.skipped} skipped` : ''}, {run.remaining} left.
      </p>
      <p class="hint">
        Queue {run.queue}; first step {run.first}, each next {run.growth}x, watched {run.windowMs / 1000} s; stops at more than {run.maxFailures} failures,{' '}
        {run.maxStaleWrites} stale writes, {run.maxDuplicates} duplicates, or a heartbeat {run.maxHeartbeatLagMs / 1000} s late{run.force ? '; by force' : ''}.
        Started by {run.actor}: {run.reason}.
      </p>
      <table class="canary-steps">
        <thead>
          <tr>
            <th>Step</th>
            <th>Jobs</th>
            <th>Requeued</th>
            <th>Skipped, and why</th>
          </tr>
        </thead>
        <tbody>
          {props.steps.map((s) => (
            <tr id={`canary-step-${s.step}`}>
              <td>{s.step}</td>
              <td>
                {s.jobIds.map((j) => (
                  <>
                    <a href={`/dashboard/jobs/${j}`}>#{j}</a>{' '}
                  </>
                ))}
              </td>
              <td>{s.requeued + s.failed}</td>
              <td>{s.skipped.length === 0 ? '—' : s.skipped.map((k) => `#${k.id}: ${k.why}`).join('; ')}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Decisions</h2>
      <ol class="canary-events">
        {props.events.map((e) => (
          <li>
            {fmtTime(e.at)} {e.type}
            {e.step ? ` (step ${e.step})` : ''}: {e.message ?? e.reason ?? ''}
          </li>
        ))}
      </ol>
      {watching && props.admin ? (
        <form method="post" action={`/dashboard/canary/${run.id}/cancel`} class="action">
          <input type="hidden" name="_csrf" value={props.csrf} />
          <label>
            Reason <input type="text" name="reason" maxlength={500} required />
          </label>
          <button type="submit">Cancel the run (nothing more is requeued)</button>
        </form>
      ) : null}
      <p>
        <a href="/dashboard/canary">All canary requeues</a>
      </p>
    </section>
  );
}
