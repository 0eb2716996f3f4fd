/**
 * /dashboard/audit: who changed what, newest first, 50 a page, filtered by
 * actor, action or queue (the same entries as GET /api/v1/audit). Visible to
 * read-only logins too: reviewing an incident needs no power to act.
 */
import type { Context, Hono } from 'hono';
import type { AppDeps } from '../api/deps.ts';
import { QUEUE_PATTERN } from '../api/http.ts';
import { hasToken } from '../core/tokens.ts';
import { AUDIT_ACTIONS, type AuditAction } from '../core/audit-actions.ts';
import { fmtTime } from './format.ts';
import { htmlDocument, layoutPage, type DashboardEnv } from './page.tsx';
import { ErrorPage } from './error-page.tsx';
import type { AuditRecord } from '../db/store/port.ts';

type Env = DashboardEnv;
const PAGE_SIZE = 50;

interface AuditFilterForm {
  actor?: string | undefined;
  action?: AuditAction | undefined;
  queue?: string | undefined;
  before?: number | undefined;
}

const isAction = (v: unknown): v is AuditAction => typeof v === 'string' && (AUDIT_ACTIONS as readonly string[]).includes(v);

function parse(c: Context): AuditFilterForm | string {
  const actor = c.req.query('actor')?.trim() || undefined;
  const action = c.req.query('action') || undefined;
  const queue = c.req.query('queue')?.trim() || undefined;
  const before = c.req.query('before') || undefined;
  if (actor !== undefined && actor.length > 200) return 'actor: at most 200 characters';
  if (action !== undefined && !isAction(action)) return `action: one of ${AUDIT_ACTIONS.join(', ')}`;
  if (queue !== undefined && !QUEUE_PATTERN.test(queue)) return 'queue: a queue name (letters, digits, _ . : -)';
  if (before !== undefined && !/^[0-9]{1,15}$/.test(before)) return 'before: an entry id';
  return { actor, action: action as AuditAction | undefined, queue, before: before === undefined ? undefined : Number(before) };
}

const query = (f: AuditFilterForm) => {
  const p = new URLSearchParams();
  if (f.actor) p.set('actor', f.actor);
  if (f.action) p.set('action', f.action);
  if (f.queue) p.set('queue', f.queue);
  if (f.before !== undefined) p.set('before', String(f.before));
  const s = p.toString();
  return s ? `?${s}` : '';
};

/** A changed value as one short line of JSON. */
const shown = (text: string | null) => (text === null ? '' : text.length > 300 ? `${text.slice(0, 300)}…` : text);

export function registerAuditPage(app: Hono<Env>, deps: AppDeps) {
  const { store, config } = deps;
  app.get('/dashboard/audit', async (c) => {
    const f = parse(c);
    if (typeof f === 'string') return htmlDocument(c, <ErrorPage title="Bad filter" message={f} />, 400);
    const { entries, next } = await store.auditList({ ...f, limit: PAGE_SIZE });
    return layoutPage(
      c,
      { title: 'Audit', nav: 'audit', loggedIn: hasToken(config, 'admin') },
      <>
        <p class="hint">
          Who changed what, newest first: queue settings, pause and resume, alert thresholds, bulk actions, job retry, cancel and requeue, logins and logouts.
          The same entries as <code>GET /api/v1/audit</code> and <code>leasehold audit</code>; kept {Math.round(config.auditRetentionMs / 86_400_000)} days.
        </p>
        <form method="get" action="/dashboard/audit" class="filters">
          <label>
            Actor <input type="text" name="actor" value={f.actor ?? ''} maxlength={200} />
          </label>
          <label>
            Action{' '}
            <select name="action">
              <option value="">any</option>
              {AUDIT_ACTIONS.map((a) => (
                <option value={a} selected={f.action === a}>
                  {a}
                </option>
              ))}
            </select>
          </label>
          <label>
            Queue <input type="text" name="queue" value={f.queue ?? ''} maxlength={200} />
          </label>
          <button type="submit">Filter</button>
        </form>
        {entries.length === 0 ? (
          <p class="empty">No entries{f.actor || f.action || f.queue ? ' match this filter' : ''}.</p>
        ) : (
          <table class="audit" id="audit">
            <thead>
              <tr>
                <th>When</th>
                <th>Who</th>
                <th>Action</th>
                <th>Target</th>
                <th>Before → after</th>
                <th>Reason</th>
                <th>From</th>
              </tr>
            </thead>
            <tbody>
              {entries.map((e) => (
                <AuditRow e={e} />
              ))}
            </tbody>
          </table>
        )}
        {next !== null ? (
          <p>
            <a id="audit-older" href={`/dashboard/audit${query({ ...f, before: next })}`}>
              Older entries
            </a>
          </p>
        ) : null}
      </>,
    );
  });
}

function AuditRow(props: { e: AuditRecord }) {
  const e = props.e;
  const target = e.job_id !== null ? <a href={`/dashboard/jobs/${e.job_id}`}>{e.target}</a> : e.target;
  return (
    <tr id={`audit-${e.id}`}>
      <td>{fmtTime(e.at)}</td>
      <td>
        <strong class="actor">{e.actor}</strong>
        <span class="hint">
          {' '}
          {e.role}
          {e.credential ? `, token ${e.credential}` : ''}, {e.source}
        </span>
      </td>
      <td>{e.action}</td>
      <td>{target}</td>
      <td class="change">
        {e.before !== null ? <code>{shown(e.before)}</code> : null}
        {e.before !== null && e.after !== null ? ' → ' : null}
        {e.after !== null ? <code>{shown(e.after)}</code> : null}
      </td>
      <td>{e.reason ?? ''}</td>
      <td>{e.client ?? ''}</td>
    </tr>
  );
}
