/**
 * Dashboard page render times over a big table: `finished` completed jobs
 * (bulk-loaded without their enqueue events, as bench/reaper.ts does),
 * `pending` pending jobs, some running ones with expired leases, some workers.
 * Each page is requested through the real app (createApp + app.request) with
 * an admin session from POST /dashboard/login, `renders` times after a
 * warm-up; the median is compared with the target "well under 100 ms".
 */
import { createEngine } from '../src/engine/engine.ts';
import { createStore } from '../src/db/store/create-store.ts';
import { streamLogger } from '../src/runtime/log.ts';
import type { Client } from '@libsql/client';
import { createApp } from '../src/app.ts';
import { defaultConfig } from '../src/core/config.ts';
import { metricsSnapshot } from '../src/db/store/metrics.ts';
import { queuesHealth } from '../src/db/store/read.ts';
import { check, median, now, openTempDb, percentile, seedPending } from './lib.ts';

export interface DashboardSizes {
  finished: number;
  pending: number;
  zombies: number;
  workers: number;
  renders: number;
}

export interface PageTiming {
  page: string;
  path: string;
  medianMs: number;
  p90Ms: number;
  bytes: number;
}

const ADMIN = 'bench-admin-token-0123456789';
const HOUR = 3_600_000;


/** Fills a migrated database with the benchmark's table (see the file comment). */
export async function loadDashboardTable(c: Client, s: DashboardSizes): Promise<void> {
  const t = Date.now();
  for (const q of ['q0', 'q1', 'q2', 'q3']) {
    await c.execute({ sql: `INSERT INTO queues (name, created_at, updated_at) VALUES (?1, ?2, ?2)`, args: [q, t] });
  }
  // Bulk load: since drizzle/0015 a row inserted writes no enqueue event (only its counters).
  const CHUNK = 100_000;
  for (let done = 0; done < s.finished; done += CHUNK) {
    const n = Math.min(CHUNK, s.finished - done);
    await c.execute({
      sql: `INSERT INTO jobs (queue_name, payload, status, max_attempts, attempt_count, available_at, started_at,
              completed_at, finished_at, result, last_event, last_event_actor, created_at, updated_at)
            WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?2),
              r(i, at) AS (SELECT i, ?1 - 86400000 + (i * 7919) % 86400000 FROM s)
            SELECT 'q' || (i % 4), json_object('n', i, 'kind', 'bench'), 'completed', 5, 1, at, at, at + 5, at + 5,
              json_object('ok', 1), 'completed', 'bench', at, at + 5
            FROM r`,
      args: [t, n],
    });
    await c.execute('PRAGMA wal_checkpoint(TRUNCATE)');
  }
  // Pending jobs, in q1.
  await seedPending(c, 'q1', s.pending);
  // Running jobs whose lease expired an hour ago: zombie candidates.
  await c.execute({
    sql: `INSERT INTO jobs (queue_name, payload, status, max_attempts, attempt_count, lease_epoch, available_at, started_at,
            last_heartbeat_at, lease_ms, lease_expires_at, locked_by, lock_token, last_event, last_event_actor, created_at, updated_at)
          WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?2)
          SELECT 'q' || (i % 4), '{}', 'running', 5, 1, 1, ?1 - ${2 * HOUR}, ?1 - ${2 * HOUR}, ?1 - ${2 * HOUR}, 30000, ?1 - ${HOUR},
            'bench-worker-' || (i % ?3), lower(hex(randomblob(16))), 'claimed', 'bench', ?1 - ${2 * HOUR}, ?1
          FROM s`,
    args: [t, s.zombies, s.workers],
  });
  await c.execute({
    sql: `INSERT INTO workers (id, started_at, last_seen_at)
          WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < ?2 - 1)
          SELECT 'bench-worker-' || i, ?1 - ${HOUR}, ?1 - (i * 1000) FROM s`,
    args: [t, s.workers],
  });
  await c.execute('PRAGMA wal_checkpoint(TRUNCATE)');
  await c.execute('ANALYZE');
}

export async function benchDashboard(s: DashboardSizes, log: (line: string) => void) {
  const db = await openTempDb('dashboard');
  try {
    const c = db.client;
    const l0 = now();
    await loadDashboardTable(c, s);
    const loadSeconds = (now() - l0) / 1000;
    const [counts] = (await c.execute(`SELECT count(*) AS n, sum(status = 'pending') AS p FROM jobs`)).rows;
    check(Number(counts?.n) === s.finished + s.pending + s.zombies && Number(counts?.p) === s.pending, 'dashboard table load');
    log(`  dashboard: loaded ${s.finished.toLocaleString('en-US')} finished + ${s.pending.toLocaleString('en-US')} pending jobs in ${loadSeconds.toFixed(1)} s`);

    const config = defaultConfig({ databaseUrl: db.tmp.url, adminToken: ADMIN });
    // The JavaScript clock, not databaseClock: on the database clock the
    // dashboard shares one metrics read per second among polls
    // (src/dashboard/shared-read.ts), and this measures a render that reads.
    const app = createApp({ engine: createEngine({ store: createStore(db.db), config, clock: { now: () => Date.now() }, log: streamLogger({ level: 'error' }) }) });
    const login = await app.request('/dashboard/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ name: 'bench', token: ADMIN, next: '/dashboard' }).toString(),
      redirect: 'manual',
    });
    const cookie = /leasehold_session=[^;]*/.exec(login.headers.get('set-cookie') ?? '')?.[0];
    check(login.status === 303 && cookie, 'dashboard login');

    const [pendingJob] = (await c.execute(`SELECT max(id) AS id FROM jobs WHERE status = 'pending'`)).rows;
    const [finishedJob] = (await c.execute(`SELECT id FROM jobs WHERE status = 'completed' ORDER BY id LIMIT 1 OFFSET ${Math.floor(s.finished / 2)}`)).rows;
    const pages: [string, string][] = [
      ['overview', '/dashboard'],
      ['overview (live fragment)', '/dashboard/live/overview'],
      ['jobs list', '/dashboard/jobs'],
      ['jobs list, queue q1 + pending', '/dashboard/jobs?queue=q1&status=pending'],
      ['jobs list, queue q2 + completed', '/dashboard/jobs?queue=q2&status=completed'],
      ['jobs list, queue q2 + failed (none)', '/dashboard/jobs?queue=q2&status=failed'],
      ['job detail (pending)', `/dashboard/jobs/${Number(pendingJob?.id)}`],
      ['job detail (completed)', `/dashboard/jobs/${Number(finishedJob?.id)}`],
      ['zombies', '/dashboard/zombies'],
      ['workers', '/dashboard/workers'],
      ['metrics', '/dashboard/metrics'],
      ['alerts', '/dashboard/alerts'],
      ['tuning', '/dashboard/tuning'],
      ['bulk dry run, q1 pending', '/dashboard/bulk?queue=q1&status=pending'],
    ];
    const timings: PageTiming[] = [];
    for (const [page, path] of pages) {
      const render = async () => {
        const res = await app.request(path, { headers: { cookie }, redirect: 'manual' });
        const body = await res.text();
        check(res.status === 200, `${path} answered ${res.status}`);
        return body.length;
      };
      const bytes = await render(); // warm-up
      const ms: number[] = [];
      for (let i = 0; i < s.renders; i++) {
        const r0 = now();
        await render();
        ms.push(now() - r0);
      }
      timings.push({ page, path, medianMs: median(ms), p90Ms: percentile(ms, 90), bytes });
      log(`  dashboard ${page}: median ${median(ms).toFixed(2)} ms`);
    }
    // The overview's two reads on their own, to tell which one costs the time.
    const queries: { query: string; medianMs: number }[] = [];
    for (const [query, run] of [
      ['queuesHealth (overview table)', () => queuesHealth(db.db, { now: Date.now(), defaults: config })],
      ['metricsSnapshot (overview extras)', () => metricsSnapshot(db.db, { now: Date.now(), config })],
    ] as const) {
      await run();
      const ms: number[] = [];
      for (let i = 0; i < Math.min(5, s.renders); i++) {
        const q0 = now();
        await run();
        ms.push(now() - q0);
      }
      queries.push({ query, medianMs: median(ms) });
      log(`  dashboard query ${query}: median ${median(ms).toFixed(2)} ms`);
    }
    return { loadSeconds, pages: timings, queries };
  } finally {
    db.done();
  }
}
