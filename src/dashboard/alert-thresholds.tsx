/**
 * /dashboard/alerts/thresholds/:queue: one queue's alert thresholds beside the
 * server's, and (admin) a form to set them. The same validation as
 * PUT /api/v1/queues/:queue/alerts: a value outside its limits is a 400 naming
 * the field, and nothing is saved. An empty field means "the server's".
 */
import type { Context, Hono } from 'hono';
import type { Child } from 'hono/jsx';
import { alertThresholdsBody } from '../api/fields.ts';
import { QUEUE_PATTERN } from '../api/http.ts';
import type { AppDeps } from '../api/deps.ts';
import { ALERT_THRESHOLD_LIMITS, DEFAULT_ALERT_THRESHOLDS, type AlertThresholds } from '../core/alerts.ts';
import { LeaseholdError } from '../core/errors.ts';
import { hasToken } from '../core/tokens.ts';
import { alreadySubmitted, layoutPage, type DashboardEnv } from './page.tsx';
import { alongside, once } from './acting.ts';

type Env = DashboardEnv;
type Key = keyof AlertThresholds;
const KEYS = Object.keys(ALERT_THRESHOLD_LIMITS) as Key[];

export function registerAlertThresholdRoutes(app: Hono<Env>, deps: AppDeps) {
  const { store, config, clock } = deps;
  const path = '/dashboard/alerts/thresholds/:queue';
  const shell = (c: Context<Env>, title: string, children: Child, status: 200 | 400 | 404 = 200) =>
    layoutPage(c, { title, nav: 'alerts', loggedIn: hasToken(config, 'admin') }, children, status);

  /** The queue, if the name is valid and the queue exists. */
  const queueOf = async (c: Context<Env>) => {
    const name = c.req.param('queue') ?? '';
    if (!QUEUE_PATTERN.test(name)) return undefined;
    return store.queueAlertThresholds({ queue: name });
  };
  const notFound = (c: Context<Env>) => shell(c, 'No such queue', <p class="notice error">No queue has that name.</p>, 404);

  app.get(path, async (c) => {
    const q = await queueOf(c);
    if (!q) return notFound(c);
    const saved = c.req.query('notice') === 'saved';
    return shell(
      c,
      `Alert thresholds: ${q.name}`,
      <>
        {saved ? <p class="notice" role="status" id="notice">Saved: the next evaluation uses these thresholds.</p> : null}
        <ThresholdsForm queue={q.name} values={stringsOf(q.alertOverrides)} csrf={c.get('session').role === 'admin' ? c.get('csrf') : undefined} />
      </>,
    );
  });

  app.post(path, async (c) => {
    const q = await queueOf(c);
    if (!q) return notFound(c);
    const form = await c.req.parseBody();
    const entered: Partial<Record<Key, string>> = {};
    const body: Record<string, unknown> = {};
    for (const key of KEYS) {
      const raw = typeof form[key] === 'string' ? (form[key] as string).trim() : '';
      if (raw === '') continue;
      entered[key] = raw;
      // Not a number: the validator names the field and says what it got.
      body[key] = Number.isFinite(Number(raw)) ? Number(raw) : raw;
    }
    let thresholds: Partial<AlertThresholds>;
    try {
      thresholds = alertThresholdsBody.parse(body, '') as Partial<AlertThresholds>;
    } catch (err) {
      if (!(err instanceof LeaseholdError)) throw err;
      return shell(
        c,
        `Alert thresholds: ${q.name}`,
        <>
          <p class="notice error" role="alert" id="notice">
            {err.message}. Nothing was saved.
          </p>
          <ThresholdsForm queue={q.name} values={entered} csrf={c.get('csrf')} />
        </>,
        400,
      );
    }
    const also = alongside(c, { action: 'queue.alert_thresholds', queue: q.name, target: `queue ${q.name}`, now: clock.now() }, config);
    if (!(await once(store, () => store.queueSetAlertThresholds({ queue: q.name, thresholds, now: clock.now(), also })))) return alreadySubmitted(c);
    return c.redirect(`/dashboard/alerts/thresholds/${encodeURIComponent(q.name)}?notice=saved`, 303);
  });
}

const stringsOf = (o: Partial<AlertThresholds>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, String(v)])) as Partial<Record<Key, string>>;

/** Each threshold: what it does, the server's value, this queue's (an input for an admin; text for read-only). */
function ThresholdsForm(props: { queue: string; values: Partial<Record<Key, string>>; csrf: string | undefined }) {
  const rows = (
    <table class="thresholds">
      <thead>
        <tr>
          <th>Threshold</th>
          <th>Server's</th>
          <th>This queue's</th>
          <th>What it does</th>
        </tr>
      </thead>
      <tbody>
        {KEYS.map((key) => {
          const l = ALERT_THRESHOLD_LIMITS[key];
          return (
            <tr id={`threshold-${key}`}>
              <td>
                <label for={`t-${key}`}>{key}</label>
              </td>
              <td>{DEFAULT_ALERT_THRESHOLDS[key]}</td>
              <td>
                {props.csrf ? (
                  <input
                    id={`t-${key}`}
                    name={key}
                    type="number"
                    step={l.integer ? '1' : 'any'}
                    min={String(l.min)}
                    max={String(l.max)}
                    value={props.values[key] ?? ''}
                    placeholder="server's"
                  />
                ) : (
                  (props.values[key] ?? "server's")
                )}
              </td>
              <td class="hint">
                {l.help} ({l.min} to {l.max}
                {l.integer ? ', whole' : ''})
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
  if (!props.csrf) return <>{rows}<p class="empty">Read-only login: thresholds can be seen, not set.</p></>;
  return (
    <form method="post" action={`/dashboard/alerts/thresholds/${encodeURIComponent(props.queue)}`} class="thresholds">
      <input type="hidden" name="_csrf" value={props.csrf} />
      {rows}
      <p class="hint">Leave a field empty to use the server's value. Saving replaces every override of this queue.</p>
      <button type="submit">Save thresholds for {props.queue}</button>
    </form>
  );
}
