/**
 * /dashboard/tuning: per queue, its lease, heartbeat interval and grace
 * beside what src/core/tuning.ts recommends from the metrics snapshot and
 * the last hour's what-if evidence (as the API does, one engine call), with
 * its confidence and the rules broken, queues with a broken rule first; a
 * page of queues at a time, polled. Each queue links to its what-if.
 *
 * /dashboard/tuning/what-if?queue=Q[&leaseMs&graceMs&heartbeatMs&windowMs]:
 * one queue's evidence replayed against today's settings and a candidate
 * (the engine's whatIfForQueue, as GET /api/v1/queues/:queue/tuning/what-if).
 * Without a candidate the recommendation is the candidate; a field sent
 * empty keeps today's value, as the API's left-out field does. A page of
 * its own, not part of the polled list: its form would be wiped by a poll,
 * and each replay reads the evidence of its window. Read-only: a GET form,
 * a bad field a 400 naming it.
 */
import type { Context, Hono } from 'hono';
import type { Child } from 'hono/jsx';
import type { AppDeps } from '../api/deps.ts';
import { QUEUE_PATTERN } from '../api/http.ts';
import { LeaseholdError } from '../core/errors.ts';
import { hasToken } from '../core/tokens.ts';
import type { QueueTuning } from '../core/tuning.ts';
import { WHAT_IF_DEFAULT_WINDOW_MS, WHAT_IF_MAX_WINDOW_MS, type Spread, type WhatIfOutcome, type WhatIfReport } from '../core/what-if.ts';
import { tuningWithEvidence, whatIfForQueue, whatIfQuery, type WhatIfQuery } from '../engine/what-if.ts';
import { fmtCount, fmtDuration, fmtOptionalDuration, fmtTime } from './format.ts';
import type { MetricsRead } from './metrics-read.ts';
import { layoutPage, type DashboardEnv } from './page.tsx';
import { perQueuePages, troubleOf } from './per-queue-page.tsx';
import { pageOfQueues, QueuePager } from './queue-pages.tsx';

const CANDIDATE_FIELDS = ['leaseMs', 'graceMs', 'heartbeatMs', 'windowMs'] as const;

export function registerTuningPage(app: Hono<DashboardEnv>, deps: Pick<AppDeps, 'config' | 'store' | 'clock'>, metrics: MetricsRead) {
  const { store, config, clock } = deps;
  const queuePage = perQueuePages(app, deps, metrics);
  queuePage('tuning', 'Tuning', 'tuning', async (m, s) => {
    const trouble = troubleOf(m);
    // A broken rule counts as trouble too: those queues come first.
    const p = pageOfQueues(await tuningWithEvidence(store, m), s, (r) => r.queue, (r) => trouble(r.queue) + r.flags.filter((f) => f.severity === 'error').length);
    return (
      <>
        <QueuePager base="/dashboard/tuning" p={p} />
        <TuningFragment rows={p.items} />
      </>
    );
  });

  const candidateCheck = whatIfQuery(config.maxLeaseMs);
  const page = (c: Context<DashboardEnv>, title: string, children: Child, status: 200 | 400 | 404 = 200) =>
    layoutPage(c, { title, nav: 'tuning', loggedIn: hasToken(config, 'admin') }, children, status);

  app.get('/dashboard/tuning/what-if', async (c) => {
    const queue = (c.req.query('queue') ?? '').trim();
    // What was typed, shown again in the form as typed (escaped by JSX).
    const entered = Object.fromEntries(CANDIDATE_FIELDS.map((k) => [k, c.req.query(k)?.trim() ?? ''])) as Record<(typeof CANDIDATE_FIELDS)[number], string>;
    const refused = (status: 400 | 404, message: string) =>
      page(
        c,
        `What-if: ${queue || 'no queue'}`,
        <>
          <p class="notice error">{message} Nothing was replayed.</p>
          {QUEUE_PATTERN.test(queue) ? <WhatIfForm queue={queue} values={entered} /> : <BackToTuning />}
        </>,
        status,
      );
    if (!QUEUE_PATTERN.test(queue)) return refused(400, `queue: a queue name (letters, digits, and . _ : - ; at most 200 characters), got ${JSON.stringify(queue.slice(0, 60))}.`);
    const m = await metrics.snapshot();
    const given = CANDIDATE_FIELDS.some((k) => c.req.query(k) !== undefined);
    let candidate: WhatIfQuery;
    try {
      // A field sent empty is left out: today's value (the window: the default).
      candidate = candidateCheck.parse(Object.fromEntries(CANDIDATE_FIELDS.filter((k) => entered[k] !== '').map((k) => [k, entered[k]])), '');
      if (!given) {
        // No candidate yet: the recommendation, as the tuning page shows it.
        const r = (await tuningWithEvidence(store, m)).find((x) => x.queue === queue);
        if (r) candidate = { leaseMs: r.recommended.leaseMs, graceMs: r.recommended.graceMs, heartbeatMs: r.recommended.heartbeatMs, windowMs: undefined };
      }
      const report = await whatIfForQueue(deps, { queue, candidate, windowMs: candidate.windowMs, now: clock.now(), snapshot: m });
      const shown = given ? entered : { leaseMs: String(report.candidate.settings.leaseMs), graceMs: String(report.candidate.settings.graceMs), heartbeatMs: String(report.candidate.settings.heartbeatMs), windowMs: '' };
      return page(
        c,
        `What-if: ${queue}`,
        <>
          <WhatIfForm queue={queue} values={shown} />
          <WhatIfView report={report} recommended={!given} />
        </>,
      );
    } catch (err) {
      if (err instanceof LeaseholdError && err.code === 'invalid_request') return refused(400, `${err.message}.`);
      if (err instanceof LeaseholdError && err.code === 'not_found') return refused(404, `${err.message}.`);
      throw err;
    }
  });
}

const whatIfLink = (queue: string) => `/dashboard/tuning/what-if?${new URLSearchParams({ queue })}`;

function BackToTuning() {
  return (
    <p>
      <a href="/dashboard/tuning">Back to tuning</a>
    </p>
  );
}

/** The candidate: a GET form, each field prefilled with what the replay used (or what was typed). */
function WhatIfForm(props: { queue: string; values: Record<(typeof CANDIDATE_FIELDS)[number], string> }) {
  const field = (name: (typeof CANDIDATE_FIELDS)[number], label: string) => (
    <label>
      {label}
      <input type="text" name={name} value={props.values[name]} inputmode="numeric" size={10} />
    </label>
  );
  return (
    <>
      <form method="get" action="/dashboard/tuning/what-if" class="filters what-if">
        <input type="hidden" name="queue" value={props.queue} />
        {field('leaseMs', 'Lease, ms')}
        {field('graceMs', 'Grace, ms')}
        {field('heartbeatMs', 'Heartbeat interval, ms')}
        {field('windowMs', `Window, ms (${fmtDuration(60_000)} to ${fmtDuration(WHAT_IF_MAX_WINDOW_MS)})`)}
        <button type="submit">Replay</button>
      </form>
      <p class="hint">
        A field left empty keeps the queue's value today (the window: the last {fmtDuration(WHAT_IF_DEFAULT_WINDOW_MS)}). The heartbeat interval must be under the
        lease. Nothing is changed: change the settings on <a href={`/dashboard/queues/${encodeURIComponent(props.queue)}`}>the queue's page</a>.
      </p>
    </>
  );
}

const spreadText = (s: Spread | null, signed = false) => {
  if (s === null) return '—';
  const one = (ms: number) => (signed ? `${ms > 0 ? '+' : ms < 0 ? '−' : ''}${fmtDuration(ms)}` : fmtDuration(ms));
  return `${one(s.medianMs)} median, ${one(s.maxMs)} most`;
};

/** The jobs behind the false reaps, linked; those replayed from silences (or past the first 100) are counted, not named. */
function TakenJobs(props: { o: WhatIfOutcome }) {
  const { o } = props;
  const more = o.falseReaps - o.falseReapJobs.length;
  if (o.falseReaps === 0) return <>—</>;
  return (
    <>
      {o.falseReapJobs.map((j, i) => (
        <>
          {i > 0 ? ', ' : ''}
          <a href={`/dashboard/jobs/${encodeURIComponent(j.id)}`}>{`${j.id} (attempt ${j.attempt})`}</a>
        </>
      ))}
      {more > 0 ? `${o.falseReapJobs.length > 0 ? ' and ' : ''}${fmtCount(more)} not named (replayed from silences, which keep no job${o.falseReapJobs.length > 0 ? `, or past the first ${o.falseReapJobs.length}` : ''})` : ''}
    </>
  );
}

/** Today's settings beside the candidate's: what each would have done over the window. */
function WhatIfView(props: { report: WhatIfReport; recommended: boolean }) {
  const { report: r } = props;
  const settings = (o: WhatIfOutcome) => `${fmtDuration(o.settings.leaseMs)} lease, ${fmtDuration(o.settings.graceMs)} grace, heartbeat every ${fmtDuration(o.settings.heartbeatMs)}`;
  const rows: [string, (o: WhatIfOutcome) => Child][] = [
    ['Settings', settings],
    ['False reaps (healthy jobs taken back, each a duplicate run)', (o) => fmtCount(o.falseReaps)],
    ['Jobs taken back', (o) => <TakenJobs o={o} />],
    ['False reaps that happened, avoided', (o) => fmtCount(o.falseReapsAvoided)],
    ['Zombies (owner gone)', (o) => fmtCount(o.zombies)],
    ['Zombie recovered, after its last renewal', (o) => spreadText(o.recovery)],
    ['Zombie recovered, later than it was', (o) => spreadText(o.extraRecovery, true)],
  ];
  const e = r.evidence;
  return (
    <section class="queue-tuning what-if" id={`what-if-${r.queue}`}>
      <h2>
        {r.queue}: today vs {props.recommended ? 'the recommendation' : 'the candidate'}
      </h2>
      <table class="tuning what-if-outcomes">
        <thead>
          <tr>
            <th></th>
            <th>Today</th>
            <th>{props.recommended ? 'Recommended' : 'Candidate'}</th>
          </tr>
        </thead>
        <tbody>
          {rows.map(([label, show]) => (
            <tr>
              <td>{label}</td>
              <td class="today">{show(r.current)}</td>
              <td class="candidate">{show(r.candidate)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h3>Evidence replayed</h3>
      <dl class="facts what-if-evidence">
        <dt>Window</dt>
        <dd>{`${fmtTime(r.window.sinceMs)} to ${fmtTime(r.window.untilMs - 1)} (${fmtDuration(r.window.untilMs - r.window.sinceMs - 1)})`}</dd>
        <dt>Attempts their owners ended</dt>
        <dd>{`${fmtCount(e.healthyAttempts)}; longest silence ${fmtOptionalDuration(e.longestHealthySilenceMs)}`}</dd>
        <dt>Attempts the reaper took</dt>
        <dd>{`${fmtCount(e.reaped)}: ${fmtCount(e.falseReapsSeen)} with their owner alive (${fmtCount(e.falseReapsUnknownPause)} of unknown pause; longest known ${fmtOptionalDuration(e.longestFalseReapPauseMs)}), ${fmtCount(e.zombiesSeen)} zombies`}</dd>
        <dt>Taken at their deadline (left out)</dt>
        <dd>{fmtCount(e.deadlineTakes)}</dd>
        <dt>Worker blocks reported</dt>
        <dd>{`${fmtCount(e.blocks)}; longest ${fmtOptionalDuration(e.longestBlockMs)}`}</dd>
      </dl>
      {r.notes.length > 0 ? (
        <ul class="notes">
          {r.notes.map((n) => (
            <li>{n}</li>
          ))}
        </ul>
      ) : null}
      <BackToTuning />
    </section>
  );
}

const SETTINGS = [
  ['leaseMs', 'Lease'],
  ['heartbeatMs', 'Heartbeat interval'],
  ['graceMs', 'Grace'],
] as const;

function TuningFragment(props: { rows: QueueTuning[] }) {
  if (props.rows.length === 0) return <p class="empty">No queues yet: nothing to tune.</p>;
  return (
    <>
      {props.rows.map((r) => {
        const flagged = (setting: string) => r.flags.find((f) => f.setting === setting && f.severity === 'error') ?? r.flags.find((f) => f.setting === setting);
        return (
          <section class="queue-tuning" id={`tuning-${r.queue}`}>
            <h2>
              {r.queue} <span class={`confidence ${r.confidence}`}>confidence: {r.confidence}</span>
            </h2>
            <table class="tuning">
              <thead>
                <tr>
                  <th>Setting</th>
                  <th>Current</th>
                  <th>Recommended</th>
                </tr>
              </thead>
              <tbody>
                {SETTINGS.map(([key, label]) => {
                  const f = flagged(key);
                  const changed = r.recommended[key] !== r.current[key];
                  return (
                    <tr class={f ? `flagged ${f.severity}` : undefined}>
                      <td>{label}</td>
                      <td>{`${r.current[key]} ms (${fmtDuration(r.current[key])})`}</td>
                      <td class={changed ? 'changed' : undefined}>{`${r.recommended[key]} ms (${fmtDuration(r.recommended[key])})`}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
            {r.flags.length === 0 ? (
              <p class="empty">No rule is broken.</p>
            ) : (
              <ul class="flags">
                {r.flags.map((f) => (
                  <li class={`flag ${f.severity}`}>
                    <strong>{f.severity}</strong>: {f.setting} {f.rule}
                  </li>
                ))}
              </ul>
            )}
            <ul class="notes">
              {r.notes.map((n) => (
                <li>{n}</li>
              ))}
            </ul>
            <p>
              <a href={whatIfLink(r.queue)}>What if: the last hour replayed against {r.confidence === 'none' ? 'other settings' : 'the recommendation'}</a>
            </p>
          </section>
        );
      })}
    </>
  );
}
