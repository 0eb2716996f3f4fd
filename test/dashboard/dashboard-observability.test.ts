/**
 * The dashboard's observability pages (/dashboard/metrics, /alerts, /tuning)
 * and the overview's alert count and per-minute SVG charts, at the
 * app.request level with the manual clock; data made through the API.
 */
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';
import { dashboardBrowser } from '../support/dashboard-browser.ts';

const ADMIN = 'a'.repeat(24);
const api = '/api/v1';
/** Past lease + grace, and long enough that the owner no longer counts as alive (defaults). */
const PAST_LEASE_OWNER_DEAD = 30_000 + 10_000 + 15_000 + 1;

let t: TestBed;
let cookie: string;
beforeEach(async () => {
  t = await setup({ adminToken: ADMIN });
  cookie = await dashboardBrowser(() => t.app).login(ADMIN);
});
afterEach(() => {
  expect(t.errors).toEqual([]);
  t.close();
});

const admin = { authorization: `Bearer ${ADMIN}` };
async function page(path: string): Promise<string> {
  const res = await t.app.request(path, { headers: { cookie }, redirect: 'manual' });
  expect(res.status, path).toBe(200);
  return res.text();
}
/** The inner HTML of the element with this id, up to its first closing `tag` (so: no nesting of the same tag). */
function element(html: string, id: string, tag: string): string {
  const start = html.indexOf(`id="${id}"`);
  expect(start, id).toBeGreaterThan(-1);
  const open = html.indexOf('>', start) + 1;
  return html.slice(open, html.indexOf(`</${tag}>`, open));
}
const text = (fragment: string) => fragment.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ');

async function runJob(q: string, ms: number, worker = 'W') {
  const e = await t.enqueue(q);
  const [c] = await t.claim(q, worker);
  t.clock.advance(ms);
  const done = await t.post(`${api}/jobs/${e.id}/complete`, { workerId: worker, lockToken: c!.lockToken }, admin);
  expect(done.status).toBe(200);
  return { id: e.id, lockToken: c!.lockToken };
}
async function failJob(q: string, error: string, worker = 'W') {
  const e = await t.enqueue(q);
  const [c] = await t.claim(q, worker);
  const res = await t.post(`${api}/jobs/${e.id}/fail`, { workerId: worker, lockToken: c!.lockToken, error, retryable: false }, admin);
  expect(res.status).toBe(200);
  expect(res.json.job.status).toBe('failed');
  return e.id;
}

describe('dashboard observability pages', () => {
  test('pages need a login and are in the nav', async () => {
    for (const path of ['/dashboard/metrics', '/dashboard/alerts', '/dashboard/tuning']) {
      const res = await t.app.request(path, { redirect: 'manual' });
      expect(res.status, path).toBe(303);
      expect((await t.app.request(path.replace('/dashboard/', '/dashboard/live/'))).status).toBe(401);
    }
    const html = await page('/dashboard/metrics');
    expect(html).toContain('href="/dashboard/metrics" class="active" aria-current="page"');
    expect(html).toContain('href="/dashboard/alerts"');
    expect(html).toContain('href="/dashboard/tuning"');
    expect(html).toContain('hx-get="/dashboard/live/metrics"');
    expect(html).toContain('No queues yet');
  });

  test('/dashboard/metrics: depth vs workers, lag and its histogram, reaps, stale writes, dedup, attempts, runtimes', async () => {
    for (const ms of [1000, 2000, 3000, 4000]) await runJob('q', ms);
    const first = await runJob('q', 10);
    // Two stale writes: another result from the finished claim (the same completion again would be a repeat).
    for (let i = 0; i < 2; i++) {
      expect((await t.post(`${api}/jobs/${first.id}/complete`, { workerId: 'W', lockToken: first.lockToken, result: 'again' }, admin)).status).toBe(409);
    }
    await t.enqueue('q', { payload: {}, idempotencyKey: 'k' });
    expect((await t.post(`${api}/queues/q/jobs`, { payload: {}, idempotencyKey: 'k' })).json.deduplicated).toBe(true);
    // A job reaped (lost attempt) and then completed, in queue "slow.v2:x-1".
    const slow = await t.enqueue('slow.v2:x-1');
    await t.claim('slow.v2:x-1', 'A');
    t.clock.advance(PAST_LEASE_OWNER_DEAD);
    expect((await t.post(`${api}/reaper/run`, {}, admin)).json.requeued).toEqual([{ id: slow.id, reason: 'reaped_due_to_expired_lease' }]);
    t.clock.advance(60_000); // past the retry backoff
    const [again] = await t.claim('slow.v2:x-1', 'B');
    expect((await t.post(`${api}/jobs/${slow.id}/complete`, { workerId: 'B', lockToken: again!.lockToken }, admin)).status).toBe(200);
    // q: the idempotent job is claimed and then left 7 s without a heartbeat.
    await t.claim('q', 'B');
    t.clock.advance(7000);

    for (const path of ['/dashboard/metrics', '/dashboard/live/metrics']) {
      const html = await page(path);
      const q = element(html, 'metrics-q', 'section');
      expect(text(element(html, 'metrics-q', 'dl'))).toContain('0 ready · 0 pending · 1 running on 1 workers (');
      expect(text(q)).toContain('Heartbeat lag max 7.0 s (interval 5.0 s)');
      expect(text(q)).toContain('p50 2.0 s · p95 4.0 s · p99 4.0 s · max 4.0 s (5 jobs)');
      expect(text(element(q, 'stale-q', 'tr'))).toBe(' stale writes rejected 2 2 2 ');
      expect(text(element(q, 'dedup-q', 'tr'))).toBe(' enqueues deduplicated 1 1 1 ');
      expect(text(element(q, 'reaped-q-reaped_due_to_expired_lease', 'tr'))).toBe(' reaped: reaped_due_to_expired_lease 0 0 0 ');
      expect(text(element(q, 'duplicates-q', 'tr'))).toBe(' duplicate executions 0 0 0 ');
      // Histogram: the 7 s lag is in the <= 15 s bucket and above.
      expect(text(element(html, 'metrics-q', 'table'))).toContain('1.0 s 0 5.0 s 0 15.0 s 1 30.0 s 1 1 m 0 s 1 ∞ 1');
      const s = element(html, 'metrics-slow.v2:x-1', 'section');
      expect(text(element(s, 'reaped-slow.v2:x-1-reaped_due_to_expired_lease', 'tr'))).toBe(' reaped: reaped_due_to_expired_lease 1 1 1 ');
      expect(text(s)).toContain('1 jobs · 1 attempts lost (1 jobs) vs 0 errored (0 jobs)');
      // B's claim after the reap may have run the job twice.
      expect(text(element(s, 'duplicates-slow.v2:x-1', 'tr'))).toBe(' duplicate executions 1 1 1 ');
      expect(text(s)).toContain('1 enqueued · 2 claims · 1 completed · 0 failed for good');
    }
  });

  test('/dashboard/alerts: firing first with value vs threshold; the overview shows the count and links to it', async () => {
    await runJob('calm', 100);
    await t.enqueue('q');
    await t.claim('q', 'A');
    t.clock.advance(15_000);
    await t.post(`${api}/workers/beat`, { workerId: 'A' }, admin); // A lives: its late job pages
    expect(text(element(await page('/dashboard'), 'overview-alerts', 'p'))).toContain('0 alerts firing');
    t.clock.advance(1);

    const html = await page('/dashboard/alerts');
    expect(text(element(html, 'alerts-firing', 'p'))).toContain('1 firing');
    const row = element(html, 'alert-q-heartbeat_lag', 'tr');
    expect(html.slice(html.lastIndexOf('<tr', html.indexOf('id="alert-q-heartbeat_lag"')), html.indexOf('id="alert-q-heartbeat_lag"'))).toContain('class="firing"');
    expect(text(row)).toContain('firing heartbeat_lag q 1 2 1 of 1 running jobs of live workers (100%) have not heartbeated for over 15000 ms');
    // Firing rows come before every ok row, whatever the queue order.
    const rows = [...html.matchAll(/<tr class="(firing|ok)" id="alert-([^"]+)"/g)].map((m) => `${m[1]} ${m[2]}`);
    expect(rows[0]).toBe('firing q-heartbeat_lag');
    expect(rows.slice(1).every((r) => r.startsWith('ok '))).toBe(true);
    expect(rows).toContain('ok calm-heartbeat_lag');
    expect(rows).toHaveLength(16); // 8 alerts x 2 queues

    for (const path of ['/dashboard', '/dashboard/live/overview']) {
      const overview = element(await page(path), 'overview-alerts', 'p');
      expect(overview).toContain('href="/dashboard/alerts"');
      expect(text(overview)).toContain('1 alert firing');
    }
  });

  test('/dashboard/alerts: how long each alert has held its state, as the reaper pass recorded it', async () => {
    await t.enqueue('q');
    await t.claim('q', 'A');
    t.clock.advance(16_000); // heartbeat lag 16 s: firing
    await t.post(`${api}/workers/beat`, { workerId: 'A' }, admin); // A lives: its late job pages
    expect((await t.post(`${api}/reaper/run`, {}, admin)).json.alerts).toMatchObject({ evaluated: true, started: 1 });
    t.clock.advance(10_000);
    const html = await page('/dashboard/alerts');
    const row = element(html, 'alert-q-heartbeat_lag', 'tr');
    expect(row).toMatch(/<td class="since" title="[^"]+">10\.0 s <span class="hint">since 2030-01-01 00:00:16Z<\/span><\/td>/);
    // An alert that changed since the last pass has no duration yet.
    const e = await t.enqueue('q');
    void e;
    t.clock.advance(61_000);
    // pending_backlog fires: the job waited 61 s and nobody consumes q.
    expect(element(await page('/dashboard/alerts'), 'alert-q-pending_backlog', 'tr')).toContain('<td class="since">—</td>');
    // Without a webhook URL there is no webhook column.
    expect(html).not.toContain('<th>Webhook</th>');
  });

  test('/dashboard/tuning: current vs recommended, confidence, flagged rule breaks, notes', async () => {
    await t.enqueue('idle');
    await t.enqueue('busy');
    await t.claim('busy', 'A');
    t.clock.advance(20_000); // lag 20 s: the 30 s lease is under twice that
    await t.post(`${api}/workers/beat`, { workerId: 'A' }, admin); // A lives: a healthy job, learned from
    const html = await page('/dashboard/tuning');
    const idle = element(html, 'tuning-idle', 'section');
    expect(idle).toContain('confidence: none');
    expect(idle).toContain('No rule is broken.');
    expect(text(idle)).toContain('Lease 30000 ms (30.0 s) 30000 ms (30.0 s)');
    expect(text(html)).toContain('nothing observed yet');

    const busy = html.slice(html.indexOf('id="tuning-busy"'));
    expect(busy).toContain('confidence: low');
    expect(busy).toMatch(/<tr class="flagged warning"><td>Lease<\/td><td>30000 ms \(30.0 s\)<\/td><td class="changed">60000 ms \(1 m 0 s\)<\/td>/);
    expect(busy).toContain('<li class="flag warning"><strong>warning</strong>: leaseMs is under twice the observed heartbeat delay (20000 ms)');
    expect(busy).toContain('raise the lease to 60000 ms');
    expect(await page('/dashboard/live/tuning')).toContain('id="tuning-busy"');
  });

  test('overview charts: one bar per minute with data, per series, with titles', async () => {
    // The chart ends at T = 3_779_001 (the last advance below).
    await runJob('q', 1000); // completed at 1_000: over an hour before T, outside the chart
    t.clock.advance(60 * 60_000);
    await runJob('q', 1000); // 3_602_000: 2 min 57 s before T
    await runJob('q', 1000); // 3_603_000: the same minute
    t.clock.advance(2 * 60_000);
    await runJob('q', 1000); // 3_724_000: 55 s before T
    await failJob('q', 'boom'); // the same minute
    await t.enqueue('q');
    await t.claim('q', 'A');
    t.clock.advance(PAST_LEASE_OWNER_DEAD);
    expect((await t.post(`${api}/reaper/run`, {}, admin)).json.requeued).toHaveLength(1); // reaped at T
    await t.enqueue('quiet');

    const html = await page('/dashboard');
    const row = element(html, 'chart-q', 'tr');
    const svg = (series: string) => row.slice(row.indexOf(`<svg class="chart ${series}"`), row.indexOf('</svg>', row.indexOf(`<svg class="chart ${series}"`)));
    const bars = (series: string) => [...svg(series).matchAll(/<rect class="bar"[^>]*data-minute="(\d+)"[^>]*><title>([^<]*)<\/title>/g)].map((m) => [Number(m[1]), m[2]]);
    // 2 in one minute, 1 in another: two bars, the fuller one full height.
    expect(bars('completed')).toEqual([
      [2, '2 completed, 2 min ago'],
      [0, '1 completed, in the last minute'],
    ]);
    expect(svg('completed')).toContain('<title>q: 3 completed in the last hour, at most 2 a minute</title>');
    expect(svg('completed')).toMatch(/height="38" data-minute="2"/);
    expect(svg('completed')).toMatch(/height="19" data-minute="0"/);
    expect(bars('failed')).toEqual([[0, '1 failed, in the last minute']]);
    expect(bars('reaped')).toEqual([[0, '1 reaped, in the last minute']]);
    expect(svg('reaped')).not.toContain('style=');
    // The queue with no activity: empty charts, no bars.
    const quiet = element(html, 'chart-quiet', 'tr');
    expect(quiet).toContain('<title>quiet: 0 completed in the last hour</title>');
    expect(quiet).not.toContain('<rect');
    expect(html).not.toMatch(/style="/);
    // The max heartbeat lag now: nothing running.
    expect(text(row)).toContain('— (interval 5.0 s)');
  });

  test('overview table: workers busy, throughput over the last 5 full minutes, firing alerts per queue', async () => {
    // The manual clock starts on a minute boundary: these 10 jobs finish in its first minute.
    for (let i = 0; i < 10; i++) await runJob('q', 1_000);
    await t.enqueue('q');
    await t.claim('q', 'A');
    await t.enqueue('idle');
    t.clock.advance(5 * 60_000); // now in minute 5: minutes 0-4 are the last 5 full ones
    const html = await page('/dashboard');
    const row = (name: string) => {
      const start = html.indexOf(`<a href="/dashboard/jobs?queue=${name}">${name}</a>`);
      return html.slice(start, html.indexOf('</tr>', start));
    };
    expect(row('q')).toContain('<td class="busy">1</td>');
    expect(text(row('q'))).toContain('2.0/min (10 in 1 h)');
    // long_running: the claimed job has run 5 minutes. Not heartbeat_lag: A looks dead, its job is the reaper's business.
    expect(row('q')).toContain('<td class="bad alerts"><a href="/dashboard/alerts">1 firing</a></td>');
    expect(row('idle')).toContain('<td class="busy">0</td>');
    expect(text(row('idle'))).toContain('0/min (0 in 1 h)');
    // pending_backlog: its job has waited 5 minutes and nobody consumes idle.
    expect(row('idle')).toContain('<td class="bad alerts"><a href="/dashboard/alerts">1 firing</a></td>');
    expect(text(element(html, 'overview-workers', 'a'))).toContain('0 workers alive');
  });

  test('overview counts have thousands separators', async () => {
    await t.post(`${api}/queues/big/jobs`, { jobs: Array.from({ length: 1_200 }, (_, i) => ({ payload: i })) });
    const html = await page('/dashboard');
    expect(html).toContain('<a href="/dashboard/jobs?queue=big&amp;status=pending">1,200</a>');
    expect(html).toContain('<td>1,200</td>'); // ready
  });

  test('the heartbeat lag chart: the worst lag each reaper pass saw, per minute, late minutes marked', async () => {
    // T starts at 0; heartbeat interval 5 s, so "late" is over 10 s.
    const e = await t.enqueue('q');
    const [c] = await t.claim('q', 'A');
    t.clock.advance(3_000);
    await t.post(`${api}/reaper/run`, {}, admin); // minute 0: lag 3 s
    t.clock.advance(47_000);
    const beat = await t.post(`${api}/jobs/${e.id}/heartbeat`, { workerId: 'A', lockToken: c!.lockToken }, admin);
    expect(beat.status).toBe(200); // at 50 s: the lease now runs to 80 s
    t.clock.advance(15_000);
    await t.post(`${api}/reaper/run`, {}, admin); // minute 1: lag 15 s
    t.clock.advance(1_000);
    await t.post(`${api}/reaper/run`, {}, admin); // minute 1: lag 16 s, the worse one kept
    const html = await page('/dashboard');
    const row = element(html, 'chart-q', 'tr');
    const svg = row.slice(row.indexOf('<svg class="chart lag"'), row.indexOf('</svg>', row.indexOf('<svg class="chart lag"')));
    const bars = [...svg.matchAll(/<rect class="(bar(?: late)?)"[^>]*data-minute="(\d+)"[^>]*><title>([^<]*)<\/title>/g)].map((m) => [m[1], Number(m[2]), m[3]]);
    expect(bars).toEqual([
      ['bar', 1, 'worst heartbeat lag 3.0 s, 1 min ago'],
      ['bar late', 0, 'worst heartbeat lag 16.0 s, this minute'],
    ]);
    expect(svg).toContain('<title>q: worst heartbeat lag 16.0 s in the last hour</title>');
  });

  test('the overview reads counters, not a million rows: finished_counts and queue_minutes stay exact', async () => {
    // Every kind of change a job goes through, then the counters are compared
    // with a full count of the jobs table.
    const done = await runJob('q', 100);
    await failJob('q', 'boom');
    await failJob('r', 'boom');
    const failed = await failJob('r', 'again');
    expect((await t.post(`${api}/jobs/${failed}/retry`, { reason: 'operator' }, admin)).status).toBe(200);
    const cancelled = await t.enqueue('r');
    expect((await t.post(`${api}/jobs/${cancelled.id}/cancel`, {}, admin)).status).toBe(200);
    await t.enqueue('q');
    await t.claim('q', 'A');
    t.clock.advance(PAST_LEASE_OWNER_DEAD);
    expect((await t.post(`${api}/reaper/run`, {}, admin)).json.requeued).toHaveLength(1);
    await t.enqueue('r', { payload: {}, idempotencyKey: 'k' });
    await t.enqueue('r', { payload: {}, idempotencyKey: 'k' }); // a dedup hit: no new job
    void done;
    // What the API (and the overview) report, against a full count of the table.
    const counts = async () => {
      const queues = (await t.get(`${api}/queues`, admin)).json.queues as { name: string; counts: Record<string, number> }[];
      return queues.flatMap((q) => Object.entries(q.counts).filter(([, n]) => n > 0).map(([status, n]) => `${q.name}:${status}=${n}`)).sort();
    };
    const truth = async () =>
      (await t.client.execute(`SELECT queue_name || ':' || status AS k, count(*) AS jobs FROM jobs GROUP BY 1 ORDER BY 1`)).rows.map((r) => `${r.k}=${r.jobs}`);
    expect(await counts()).toEqual(await truth());
    expect(await counts()).toEqual(['q:completed=1', 'q:failed=1', 'q:pending=1', 'r:cancelled=1', 'r:failed=1', 'r:pending=2']);
    // Retention pruning deletes finished jobs: the counts follow.
    t.clock.advance(8 * 24 * 3_600_000);
    await t.post(`${api}/reaper/run`, {}, admin);
    expect(await counts()).toEqual(await truth());
    expect(await counts()).toEqual(['q:pending=1', 'r:pending=2']);
    // The per-minute activity was pruned with them (kept a day).
    expect(Number((await t.client.execute('SELECT count(*) AS n FROM queue_minutes WHERE completed + failed + reaped > 0')).rows[0]!.n)).toBe(0);
  });

  test('user text (job errors, payloads) never reaches these pages unescaped', async () => {
    await failJob('q', '<script>alert(1)</script><img src=x onerror=alert(2)>');
    const e = await t.enqueue('q', { payload: { html: '<script>alert(3)</script>' } });
    await t.claim('q', '<img src=x onerror=alert(4)>');
    void e;
    t.clock.advance(20_000);
    for (const path of ['/dashboard', '/dashboard/metrics', '/dashboard/alerts', '/dashboard/tuning', '/dashboard/live/overview']) {
      const html = await page(path);
      expect(html, path).not.toContain('<script>alert');
      expect(html, path).not.toMatch(/<img/i);
      expect(html, path).not.toMatch(/style="/);
    }
  });
});
