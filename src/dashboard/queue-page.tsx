/**
 * /dashboard/queues/:queue: one queue's limits and how close it is to them
 * (running against maxRunning, this window's claims against the rate limit,
 * and how long claims wait for the next window), and (admin) a form to set them. The same
 * validation as PATCH /api/v1/queues/:queue/settings: a bad value is a 400
 * naming the field, and nothing is saved. An empty field means "no limit".
 * A save is in the audit trail (queue.settings, the operator's name), and a
 * form sent twice is refused the second time.
 *
 * For a queue with groups (a job's `group`), its busiest groups and the
 * rest summed, polled (queue-groups.tsx).
 *
 * Also (admin) the queue's delete, by the rule of src/engine/queue-delete.ts
 * (never while it holds pending or running jobs or a schedule; its finished
 * jobs only when the box is ticked), confirmed by typing the queue's name,
 * audited as queue.delete with the operator's name.
 */
import type { Context, Hono } from 'hono';
import type { Child } from 'hono/jsx';
import { maxRunningField, rateLimitField } from '../api/fields.ts';
import { QUEUE_PATTERN } from '../api/http.ts';
import type { AppDeps } from '../api/deps.ts';
import { LeaseholdError } from '../core/errors.ts';
import { hasToken } from '../core/tokens.ts';
import { fmtDuration, fmtTime } from './format.ts';
import { alongside, once } from './acting.ts';
import { deleteQueue } from '../engine/queue-delete.ts';
import { alreadySubmitted, layoutPage, type DashboardEnv } from './page.tsx';
import { GROUPS_SHOWN, GroupsFragment, hasGroupsSection } from './queue-groups.tsx';
import { Live } from './live-region.tsx';
import type { QueueHealth, QueueSettingsPatch } from '../db/store/port.ts';

type Env = DashboardEnv;
type Entered = { maxRunning: string; rateMax: string; rateWindowMs: string; onLost: string };

export function registerQueuePageRoutes(app: Hono<Env>, deps: AppDeps) {
  const { store, config, clock } = deps;
  const path = '/dashboard/queues/:queue';
  const shell = (c: Context<Env>, title: string, children: Child, status: 200 | 400 | 404 | 409 = 200) =>
    layoutPage(c, { title, nav: 'overview', loggedIn: hasToken(config, 'admin') }, children, status);

  /** The queue, if the name is valid and the queue exists. */
  const queueOf = async (c: Context<Env>) => {
    const name = c.req.param('queue') ?? '';
    if (!QUEUE_PATTERN.test(name)) return undefined;
    const [q] = await store.queuesHealth({ now: clock.now(), defaults: config, queue: name });
    return q;
  };
  const notFound = (c: Context<Env>) => shell(c, 'No such queue', <p class="notice error">No queue has that name.</p>, 404);
  const now = async () => {
    const n = clock.now();
    return typeof n === 'number' ? n : store.readNow();
  };
  const csrfOf = (c: Context<Env>) => (c.get('session').role === 'admin' ? c.get('csrf') : undefined);

  const groupsOf = async (queue: string) => (await store.queuesGroupCounts({ queue, limit: GROUPS_SHOWN }))[0];
  const groupsLive = (queue: string) => `/dashboard/live/queues/${encodeURIComponent(queue)}/groups`;

  app.get(path, async (c) => {
    const q = await queueOf(c);
    if (!q) return notFound(c);
    const groups = await groupsOf(q.name);
    return shell(
      c,
      `Queue ${q.name}`,
      <>
        {c.req.query('notice') === 'saved' ? <p class="notice" role="status" id="notice">Saved: the next claim uses these limits.</p> : null}
        <QueueLimits q={q} now={await now()} />
        {hasGroupsSection(q, groups) ? (
          <section id="groups">
            <h2>Groups</h2>
            <Live src={groupsLive(q.name)} id="live-groups">
              <GroupsFragment q={q} counts={groups} />
            </Live>
          </section>
        ) : null}
        <LimitsForm queue={q.name} values={enteredOf(q)} csrf={csrfOf(c)} />
        <DeleteForm queue={q.name} csrf={csrfOf(c)} />
      </>,
    );
  });

  app.get('/dashboard/live/queues/:queue/groups', async (c) => {
    const q = await queueOf(c);
    if (!q) return c.html(<p class="notice error">No queue has that name.</p>, 404);
    return c.html(<GroupsFragment q={q} counts={await groupsOf(q.name)} />);
  });

  app.post(`${path}/delete`, async (c) => {
    const q = await queueOf(c);
    if (!q) return notFound(c);
    const form = await c.req.parseBody();
    const refused = async (message: string, status: 400 | 409) =>
      shell(
        c,
        `Queue ${q.name}`,
        <>
          <p class="notice error" role="alert" id="notice">
            {message}
          </p>
          <QueueLimits q={q} now={await now()} />
          <DeleteForm queue={q.name} csrf={c.get('csrf')} />
        </>,
        status,
      );
    if (form.confirm !== q.name) return refused(`Type the queue's name (${q.name}) to delete it. Nothing was deleted.`, 400);
    const audit = alongside(c, { action: 'queue.delete', queue: q.name, target: `queue ${q.name}`, now: clock.now() }, config).audit!;
    const done = await once(store, () =>
      deleteQueue(store, { queue: q.name, purge: form.purge === 'on', audit: { by: audit.by, now: audit.now }, formNonce: c.get('formNonce') }),
    );
    if (!done) return alreadySubmitted(c);
    if (!done.value.deleted) return refused(`${done.value.message}.`, 409);
    const purged = done.value.purgedFinishedJobs;
    return shell(
      c,
      `Queue ${q.name} deleted`,
      <p class="notice" role="status" id="notice">
        Queue {q.name} was deleted{purged > 0 ? ` with ${purged} finished jobs` : ''}. <a href="/dashboard">Back to the overview</a>
      </p>,
    );
  });

  app.post(path, async (c) => {
    const q = await queueOf(c);
    if (!q) return notFound(c);
    const form = await c.req.parseBody();
    const text = (key: string) => (typeof form[key] === 'string' ? (form[key] as string).trim() : '');
    const entered: Entered = { maxRunning: text('maxRunning'), rateMax: text('rateMax'), rateWindowMs: text('rateWindowMs'), onLost: text('onLost') || 'retry' };
    // Not a number: the validator names the field and says what it got.
    const numberOrText = (raw: string) => (raw === '' ? null : Number.isFinite(Number(raw)) ? Number(raw) : raw);
    let patch: QueueSettingsPatch;
    try {
      // Both rate fields empty: no rate limit; one of them alone is the validator's 400.
      const rate = entered.rateMax === '' && entered.rateWindowMs === '' ? null : { max: numberOrText(entered.rateMax) ?? undefined, windowMs: numberOrText(entered.rateWindowMs) ?? undefined };
      patch = {
        maxRunning: maxRunningField.parse(numberOrText(entered.maxRunning), 'maxRunning') ?? null,
        rateLimit: rateLimitField.parse(rate, 'rateLimit') ?? null,
        // 'retry' is the default: stored as no setting, as the API's null.
        onLost: onLostOf(entered.onLost),
      };
    } catch (err) {
      if (!(err instanceof LeaseholdError)) throw err;
      return shell(
        c,
        `Queue ${q.name}`,
        <>
          <p class="notice error" role="alert" id="notice">
            {err.message}. Nothing was saved.
          </p>
          <QueueLimits q={q} now={await now()} />
          <LimitsForm queue={q.name} values={entered} csrf={c.get('csrf')} />
        </>,
        400,
      );
    }
    // Audited like the API's PATCH, with the form's one-time token claimed in the same batch.
    const also = alongside(c, { action: 'queue.settings', queue: q.name, target: `queue ${q.name}`, now: clock.now() }, config);
    if (!(await once(store, () => store.queueUpsertSettings({ queue: q.name, patch, now: clock.now(), also })))) return alreadySubmitted(c);
    return c.redirect(`/dashboard/queues/${encodeURIComponent(q.name)}?notice=saved`, 303);
  });
}

const enteredOf = (q: QueueHealth): Entered => ({
  maxRunning: q.maxRunning === null ? '' : String(q.maxRunning),
  rateMax: q.rateLimit === null ? '' : String(q.rateLimit.max),
  rateWindowMs: q.rateLimit === null ? '' : String(q.rateLimit.windowMs),
  onLost: q.onLost ?? 'retry',
});

function onLostOf(entered: string): 'hold' | null {
  if (entered === 'hold') return 'hold';
  if (entered === 'retry') return null;
  throw new LeaseholdError('invalid_request', `onLost must be 'retry' or 'hold', got ${JSON.stringify(entered.slice(0, 40))}`, 'onLost');
}

function QueueLimits(props: { q: QueueHealth; now: number }) {
  const { q } = props;
  const full = q.maxRunning !== null && q.counts.running >= q.maxRunning;
  return (
    <dl class="facts">
      <dt>Jobs</dt>
      <dd id="queue-counts">
        {q.counts.pending} pending ({q.ready} ready) · {q.counts.running} running · <a href={`/dashboard/jobs?queue=${encodeURIComponent(q.name)}`}>list</a>
        {q.paused ? ' · paused' : ''}
      </dd>
      <dt>Running at once</dt>
      <dd id="queue-max-running" class={full ? 'bad' : undefined}>
        {q.maxRunning === null
          ? `${q.counts.running} running, no limit`
          : `${q.counts.running} of at most ${q.maxRunning}${full ? ': full, claims wait for a job to finish' : ''}`}
      </dd>
      <dt>A lost attempt</dt>
      <dd id="queue-on-lost">
        {q.onLost === 'hold' ? 'is held for a person (onLost hold)' : 'runs again (onLost retry)'}
        {q.held > 0 ? (
          <>
            {' '}· <a href="/dashboard/zombies">{q.held} held</a>
          </>
        ) : null}
      </dd>
      <dt>Rate limit</dt>
      <dd id="queue-rate-limit" class={q.rateLimitedUntil !== null ? 'bad' : undefined}>
        {q.rateLimit === null
          ? 'no limit'
          : `${q.rateUsed} of ${q.rateLimit.max} claims used in this ${fmtDuration(q.rateLimit.windowMs)} window` +
            (q.rateLimitedUntil !== null ? `: claims wait ${fmtDuration(Math.max(0, q.rateLimitedUntil - props.now))}, until ${fmtTime(q.rateLimitedUntil)}` : '')}
      </dd>
      <dt>Dead letters</dt>
      <dd id="queue-dead-letters">{q.deadLetterQueue === null ? 'jobs that fail for good stay failed here (no dead-letter queue)' : `jobs that fail for good are listed in ${q.deadLetterQueue}`}</dd>
      <dt>Indexed fields</dt>
      <dd id="queue-indexed-fields">
        {q.indexedFields.length === 0 ? 'none (set them with leasehold queues indexed-fields or PUT /api/v1/queues/:queue/indexed-fields)' : q.indexedFields.join(', ')}
      </dd>
    </dl>
  );
}

function LimitsForm(props: { queue: string; values: Entered; csrf: string | undefined }) {
  if (!props.csrf) return <p class="empty">Read-only login: limits can be seen, not set.</p>;
  return (
    <form method="post" action={`/dashboard/queues/${encodeURIComponent(props.queue)}`} class="queue-limits">
      <input type="hidden" name="_csrf" value={props.csrf} />
      <label for="l-maxRunning">
        maxRunning <span class="hint">(at most this many of the queue's jobs run at once, across all workers and servers)</span>
      </label>
      <input id="l-maxRunning" name="maxRunning" type="number" step="1" min="1" value={props.values.maxRunning} placeholder="no limit" />
      <p class="hint">Leave a field empty for no limit. Lowering a limit takes no running job back; it holds claims until enough finish.</p>
      <label for="l-rateMax">
        Rate limit <span class="hint">(at most this many claims per window, across all workers and servers)</span>
      </label>
      <input id="l-rateMax" name="rateMax" type="number" step="1" min="1" value={props.values.rateMax} placeholder="no limit" /> claims per{' '}
      <input id="l-rateWindowMs" name="rateWindowMs" type="number" step="1" min="1000" value={props.values.rateWindowMs} placeholder="window ms" /> ms
      <label for="l-onLost">
        A lost attempt <span class="hint">(a worker died, a lease was reaped, a deadline passed; a job's own onLost wins)</span>
      </label>
      <select id="l-onLost" name="onLost">
        <option value="retry" selected={props.values.onLost !== 'hold'}>
          runs again: retry (idempotent jobs, fast recovery)
        </option>
        <option value="hold" selected={props.values.onLost === 'hold'}>
          waits for a person: hold (side effects you cannot fence)
        </option>
      </select>
      <button type="submit">Save limits for {props.queue}</button>
    </form>
  );
}

function DeleteForm(props: { queue: string; csrf: string | undefined }) {
  if (!props.csrf) return null;
  return (
    <form method="post" action={`/dashboard/queues/${encodeURIComponent(props.queue)}/delete`} class="action danger">
      <input type="hidden" name="_csrf" value={props.csrf} />
      <p>
        Deleting a queue removes its settings, limits and counts. It is refused while the queue holds pending or running jobs, or a schedule enqueues to it.
      </p>
      <label>
        <input type="checkbox" name="purge" /> also delete its finished jobs (completed, failed, cancelled)
      </label>
      <label for="d-confirm">Type the queue's name to confirm</label>
      <input id="d-confirm" name="confirm" autocomplete="off" required />
      <button type="submit">
        Delete queue {props.queue}
      </button>
    </form>
  );
}
