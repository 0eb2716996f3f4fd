/**
 * What GET /api/v1/jobs?where=... costs on a big table: 1,000,000 jobs in one
 * queue (and 10,000 in another), each payload {customerId, name, amount};
 * customer 42 has 20 jobs spread over the whole table. Through the real app
 * (createApp + app.request, no socket), timed in one run on one file:
 *
 * - one page of a rare `=` without an index (its window of 10,000 jobs), and
 *   every page it takes to reach all 20 matches;
 * - one page of a prefix and of a range (common matches);
 * - building the queue's indexed field (PUT /queues/orders/indexed-fields);
 * - the same `=` with the index: one page holds all 20;
 * - for scale, the statement a filter without a window would run (a walk of
 *   every job until 51 matches), once.
 *
 *   npx tsx bench/job-search.ts [jobs]     default 1000000; SEARCH_READS (7) reads each
 */
import { loadavg } from 'node:os';
import { createApp } from '../src/app.ts';
import { databaseClock } from '../src/core/clock.ts';
import { defaultConfig } from '../src/core/config.ts';
import { silentLogger } from '../src/core/log.ts';
import { createEngine } from '../src/engine/engine.ts';
import { createStore } from '../src/db/store/create-store.ts';
import { median, now, openTempDb } from './lib.ts';

const total = Number(process.argv[2] ?? 1_000_000);
const reads = Number(process.env.SEARCH_READS ?? 7);
const CUSTOMERS = total / 20;

const db = await openTempDb('job-search');
try {
  const NOW = `CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)`;
  const seeded = now();
  for (const [queue, n] of [['orders', total], ['other', 10_000]] as const) {
    await db.client.execute({ sql: `INSERT INTO queues (name, created_at, updated_at) VALUES (?1, ${NOW}, ${NOW}) ON CONFLICT (name) DO NOTHING`, args: [queue] });
    for (let done = 0; done < n; done += 50_000) {
      await db.client.execute({
        sql: `INSERT INTO jobs (queue_name, payload, max_attempts, available_at, last_event_actor, created_at, updated_at)
              WITH RECURSIVE s(i) AS (SELECT ?3 UNION ALL SELECT i + 1 FROM s WHERE i < ?3 + ?2 - 1), t(now) AS (SELECT ${NOW})
              SELECT ?1, json_object('customerId', i % ?4, 'name', 'cust-' || (i % ?4), 'amount', i % 1000), 5, t.now, 'bench', t.now, t.now FROM s, t ORDER BY i`,
        args: [queue, Math.min(50_000, n - done), done, CUSTOMERS],
      });
    }
  }
  const seedS = (now() - seeded) / 1000;
  const app = createApp({ engine: createEngine({ store: createStore(db.db), config: defaultConfig({ databaseUrl: db.tmp.url }), clock: databaseClock, log: silentLogger }) });
  const get = async (path: string) => {
    const res = await app.request(path);
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
    return (await res.json()) as { jobs: { id: string }[]; next: string | null };
  };
  const time = async (run: () => Promise<unknown>) => {
    await run(); // warm: compiled code, prepared statements, the pages in the cache
    const xs: number[] = [];
    for (let i = 0; i < reads; i++) {
      const t0 = now();
      await run();
      xs.push(now() - t0);
    }
    return median(xs);
  };
  const where = (...clauses: string[]) => clauses.map((c) => `where=${encodeURIComponent(c)}`).join('&');
  const eq42 = `/api/v1/jobs?queue=orders&${where('payload.customerId = 42')}`;
  /** Every page of a filter, following next: the matches found and the pages it took. */
  const walk = async (path: string) => {
    let found = 0;
    let pages = 0;
    let after = '';
    for (;;) {
      const page = await get(`${path}${after}`);
      pages++;
      found += page.jobs.length;
      if (page.next === null) return { found, pages };
      after = `&after=${page.next}`;
    }
  };

  const loadBefore = loadavg()[0]!;
  const results: [string, string][] = [];
  const onePage = await time(() => get(eq42));
  results.push(['one page, payload.customerId = 42, no index (window of 10,000)', `${onePage.toFixed(1)} ms`]);
  const walkStart = now();
  const walked = await walk(eq42);
  results.push([`every page to reach all matches, no index`, `${((now() - walkStart) / 1000).toFixed(2)} s, ${walked.pages} pages, ${walked.found} jobs`]);
  results.push(['one page, payload.name ^= "cust-4" (common)', `${(await time(() => get(`/api/v1/jobs?queue=orders&${where('payload.name ^= "cust-4"')}`))).toFixed(1)} ms`]);
  results.push(['one page, payload.amount >= 990 and payload.amount < 995', `${(await time(() => get(`/api/v1/jobs?queue=orders&${where('payload.amount >= 990', 'payload.amount < 995')}`))).toFixed(1)} ms`]);
  results.push(['one page, payload.customerId = 42 over every queue (no queue filter)', `${(await time(() => get(`/api/v1/jobs?${where('payload.customerId = 42')}`))).toFixed(1)} ms`]);
  const unbounded = now();
  await db.client.execute({ sql: `SELECT id FROM jobs WHERE queue_name = 'orders' AND json_extract(payload, '$.customerId') = 42 ORDER BY id DESC LIMIT 51` });
  results.push(['for scale: the same filter without a window (walks every job)', `${(now() - unbounded).toFixed(0)} ms`]);

  const built = now();
  const put = await app.request('/api/v1/queues/orders/indexed-fields', { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ fields: ['payload.customerId'] }) });
  if (put.status !== 200) throw new Error(`indexed-fields answered ${put.status}: ${await put.text()}`);
  results.push([`PUT indexed-fields payload.customerId (builds the index over ${total.toLocaleString('en-US')} jobs)`, `${((now() - built) / 1000).toFixed(2)} s`]);
  const indexedPage = await time(() => get(eq42));
  const indexedWalk = await walk(eq42);
  results.push(['one page, payload.customerId = 42, indexed', `${indexedPage.toFixed(2)} ms, ${indexedWalk.pages} page(s), ${indexedWalk.found} jobs`]);
  results.push(['one page, indexed field and status=pending and a prefix on name', `${(await time(() => get(`/api/v1/jobs?queue=orders&status=pending&${where('payload.customerId = 42', 'payload.name ^= "cust-42"')}`))).toFixed(2)} ms`]);

  console.log(`${total.toLocaleString('en-US')} jobs + 10,000 in another queue, seeded in ${seedS.toFixed(0)} s; medians of ${reads} reads after one warm-up; load average ${loadBefore.toFixed(1)} before, ${loadavg()[0]!.toFixed(1)} after`);
  for (const [what, value] of results) console.log(`| ${what} | ${value} |`);
} finally {
  db.done();
}
