/**
 * /dashboard/workers: every worker seen in the last 24 hours, alive or not,
 * what it holds, its restarts and what its last beat reported (event-loop
 * blocks, heartbeat failures, leases lost), polled (/dashboard/live/workers).
 */
import type { Hono } from 'hono';
import type { AppDeps } from '../api/deps.ts';
import type { Config } from '../core/config.ts';
import { hasToken } from '../core/tokens.ts';
import { fmtDuration, fmtRelative, fmtTime } from './format.ts';
import { Live } from './live-region.tsx';
import { layoutPage, type DashboardEnv } from './page.tsx';
import type { PageReads } from './page-reads.ts';
import { PlaybookHint } from './playbook-hint.tsx';
import type { WorkerRecord } from '../db/store/port.ts';

const DAY = 24 * 3600 * 1000;

export function registerWorkersPage(app: Hono<DashboardEnv>, deps: AppDeps, reads: PageReads) {
  const { store, config } = deps;
  const { now } = reads;
  const workers = async () => {
    const t = await now();
    return <WorkersFragment workers={await store.workersList({ sinceMs: t - DAY, limit: 500 })} now={t} config={config} />;
  };
  app.get('/dashboard/workers', async (c) =>
    layoutPage(
      c,
      { title: 'Workers', nav: 'workers', loggedIn: hasToken(config, 'admin') },
      <>
        <PlaybookHint step="step 1 (is the worker dead, hung, or is storage slow)" />
        <Live src="/dashboard/live/workers">{await workers()}</Live>
      </>,
    ),
  );
  app.get('/dashboard/live/workers', async (c) => c.html(await workers()));
}

/** What the worker's last beat reported; — for an SDK that does not report them. */
function WorkerCounterCells(props: { w: WorkerRecord }) {
  const { w } = props;
  const count = (n: number | null) => <td class={n !== null && n > 0 ? 'warn' : undefined}>{n ?? '—'}</td>;
  return (
    <>
      <td class={w.event_loop_blocks ? 'warn loop-blocks' : 'loop-blocks'}>
        {w.event_loop_blocks ?? '—'}
        {w.event_loop_blocks && w.longest_event_loop_block_ms !== null ? ` (longest ${fmtDuration(w.longest_event_loop_block_ms)})` : ''}
      </td>
      {count(w.heartbeat_failures)}
      {count(w.leases_lost)}
    </>
  );
}

function WorkersFragment(props: { workers: WorkerRecord[]; now: number; config: Config }) {
  if (props.workers.length === 0) return <p class="empty">No worker seen in the last 24 hours.</p>;
  return (
    <div class="table-scroll">
    <table class="workers">
      <thead>
        <tr>
          <th>Id</th>
          <th>Alive</th>
          <th>Last seen</th>
          <th title="jobs this worker holds a lease on: running, claimed ahead and waiting for a free slot, or with their result on its way">Holding</th>
          <th title="times a new process took over this worker id (a crash loop shows here)">Restarts</th>
          <th title="times its heartbeat timer fired late because the event loop was blocked, and the longest block, since the process started: a worker alive with blocks is hung on CPU-bound work, not dead">
            Event-loop blocks
          </th>
          <th title="heartbeat rounds that failed (network or server), since the process started">Heartbeat failures</th>
          <th title="jobs whose lease this process lost (refused, or expired before it could renew), since it started">Leases lost</th>
          <th>Queues</th>
          <th>Host</th>
          <th>Pid</th>
          <th>Version</th>
          <th>Started</th>
        </tr>
      </thead>
      <tbody>
        {props.workers.map((w) => {
          const alive = w.last_seen_at >= props.now - props.config.workerAliveMs;
          return (
            <tr>
              <td>{w.id}</td>
              <td class={alive ? 'good' : 'bad'}>{alive ? 'alive' : 'not seen'}</td>
              <td>{fmtRelative(w.last_seen_at, props.now)}</td>
              <td>{w.running_count}</td>
              <td class={w.restarts > 0 ? 'warn' : undefined}>{w.restarts}</td>
              <WorkerCounterCells w={w} />
              <td>{w.queues ?? '—'}</td>
              <td>{w.host ?? '—'}</td>
              <td>{w.pid ?? '—'}</td>
              <td>{w.version ?? '—'}</td>
              <td>{fmtTime(w.started_at)}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
    </div>
  );
}
