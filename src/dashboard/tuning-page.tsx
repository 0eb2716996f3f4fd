/**
 * /dashboard/tuning: per queue, its lease, heartbeat interval and grace
 * beside what src/core/tuning.ts recommends from the metrics snapshot (as
 * the API does), with its confidence and the rules broken, queues with a
 * broken rule first; a page of queues at a time, polled.
 */
import type { Hono } from 'hono';
import type { AppDeps } from '../api/deps.ts';
import { recommendTuning, type QueueTuning } from '../core/tuning.ts';
import { fmtDuration } from './format.ts';
import type { MetricsRead } from './metrics-read.ts';
import type { DashboardEnv } from './page.tsx';
import { perQueuePages, troubleOf } from './per-queue-page.tsx';
import { pageOfQueues, QueuePager } from './queue-pages.tsx';

export function registerTuningPage(app: Hono<DashboardEnv>, deps: Pick<AppDeps, 'config'>, metrics: MetricsRead) {
  const queuePage = perQueuePages(app, deps, metrics);
  queuePage('tuning', 'Tuning', 'tuning', (m, s) => {
    const trouble = troubleOf(m);
    // A broken rule counts as trouble too: those queues come first.
    const p = pageOfQueues(recommendTuning(m), s, (r) => r.queue, (r) => trouble(r.queue) + r.flags.filter((f) => f.severity === 'error').length);
    return (
      <>
        <QueuePager base="/dashboard/tuning" p={p} />
        <TuningFragment rows={p.items} />
      </>
    );
  });
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
          </section>
        );
      })}
    </>
  );
}
