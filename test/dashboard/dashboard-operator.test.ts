/**
 * What a new operator tripped over in the dashboard, at the
 * app.request level with the manual clock; data made through the API:
 * zombies and stalled jobs marked in the jobs list, the job's own lease and
 * heartbeat interval on its page, the page leading with status, lease, owner
 * and the reaper, and the alerts naming their jobs and how long they fire.
 */
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';
import { dashboardBrowser } from '../support/dashboard-browser.ts';

const ADMIN = 'a'.repeat(24);
const api = '/api/v1';
const admin = { authorization: `Bearer ${ADMIN}` };
/** Defaults: lease 30 s, grace 10 s, worker alive 15 s. Past lease + grace with the owner dead. */
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

async function page(path: string): Promise<string> {
  const res = await t.app.request(path, { headers: { cookie }, redirect: 'manual' });
  expect(res.status, path).toBe(200);
  return res.text();
}
/** The inner HTML of the element with this id, up to its first closing `tag`. */
function element(html: string, id: string, tag: string): string {
  const start = html.indexOf(`id="${id}"`);
  expect(start, id).toBeGreaterThan(-1);
  const open = html.indexOf('>', start) + 1;
  return html.slice(open, html.indexOf(`</${tag}>`, open));
}
const text = (fragment: string) => fragment.replace(/<[^>]*>/g, ' ').replace(/&#39;/g, "'").replace(/\s+/g, ' ').trim();

/** The jobs list's status cell for job `id` (its row's third cell), as text. */
function statusCell(html: string, id: string): string {
  const row = new RegExp(`<tr><td><a href="/dashboard/jobs/${id}">${id}</a></td><td>[^<]*</td>(<td[^>]*>.*?</td>)`).exec(html);
  expect(row, `row of job ${id}`).not.toBeNull();
  return row![1]!;
}

describe('the jobs list marks what the zombies page lists', () => {
  test('an expired lease is a zombie with the reaper\'s verdict, as on the zombies page', async () => {
    const zombie = await t.enqueue('zq');
    await t.claim('zq', 'gone');
    t.clock.advance(31_000);

    // Inside the grace the reaper waits, and says when it takes the job.
    let html = await page('/dashboard/jobs?queue=zq&status=running');
    let cell = statusCell(html, zombie.id);
    expect(cell).toContain('class="job-status flagged zombie"');
    expect(text(cell)).toMatch(/^running · zombie zombie: lease expired 1\.0 s ago · reaper takes it in \d+(\.\d)? s if nothing arrives$/);
    expect(cell).toMatch(/title="lease expired 1\.0 s ago, inside the 10 s grace"/);

    // Past the grace with its owner dead: the reaper's next pass takes it.
    t.clock.advance(PAST_LEASE_OWNER_DEAD - 31_000);
    html = await page('/dashboard/live/jobs?queue=zq&status=running');
    cell = statusCell(html, zombie.id);
    expect(text(cell)).toContain('reaper takes it at its next pass');
    expect(cell).toContain('owner gone was last seen');

    // The same job is on the zombies page.
    expect(await page('/dashboard/zombies')).toContain(`id="zombie-${zombie.id}"`);
  });

  test('a stalled job (heartbeating, no progress past stallMs) is marked stalled; a fresh claim is not marked', async () => {
    expect((await t.call('PATCH', `${api}/queues/sq/settings`, { stallMs: 5_000 }, admin)).status).toBe(200);
    const stuck = await t.enqueue('sq');
    const [c] = await t.claim('sq', 'W');
    t.clock.advance(4_000);
    expect((await t.post(`${api}/jobs/${stuck.id}/heartbeat`, { workerId: 'W', lockToken: c!.lockToken }, admin)).status).toBe(200);
    const fresh = await t.enqueue('sq');
    await t.claim('sq', 'W');
    t.clock.advance(2_000);
    expect((await t.post(`${api}/jobs/${stuck.id}/heartbeat`, { workerId: 'W', lockToken: c!.lockToken }, admin)).status).toBe(200);

    const html = await page('/dashboard/jobs?queue=sq');
    const cell = statusCell(html, stuck.id);
    expect(cell).toContain('flagged stalled');
    // A stalled job is suspect too: the reaper leaves it until its deadline (an hour by default).
    expect(text(cell)).toBe('running · stalled stalled: no progress for 6.0 s · suspect · deadline in 59 m 54 s');
    const plain = statusCell(html, fresh.id);
    expect(plain).toBe('<td class="job-status"><span class="status running">running</span></td>');
  });

  test('a heartbeat over two of the job\'s own intervals late (lease still live) is marked late', async () => {
    const late = await t.enqueue('lq');
    await t.claim('lq', 'W', { leaseMs: 60_000 });
    t.clock.advance(10_001); // interval min(5 s, 60 s / 3) = 5 s: late past 10 s
    const cell = statusCell(await page('/dashboard/jobs?queue=lq'), late.id);
    expect(cell).toContain('flagged late');
    expect(text(cell)).toContain('heartbeat late: 10.0 s (interval 5.0 s)');
  });
});

describe('the job page', () => {
  test('shows the lease and heartbeat interval its claim set, not the queue default', async () => {
    const e = await t.enqueue('short');
    const [c] = await t.claim('short', 'W', { leaseMs: 1_000 });
    expect(c!.heartbeatIntervalMs).toBe(333);
    t.clock.advance(200);
    const html = await page(`/dashboard/jobs/${e.id}`);
    expect(text(element(html, 'job-lease', 'dd'))).toBe('1.0 s lease (this claim\'s) · expires in 800 ms (2030-01-01 00:00:01Z)');
    expect(text(element(html, 'job-heartbeat', 'dd'))).toBe("last 200 ms ago · interval 333 ms (a third of this lease; the queue's is 5.0 s)");
    expect(html).not.toContain('interval 5.0 s');

    // A queue's own lease and interval, asked for by nobody: the queue's.
    expect((await t.call('PATCH', `${api}/queues/long/settings`, { leaseMs: 120_000, heartbeatMs: 20_000, graceMs: 30_000 }, admin)).status).toBe(200);
    const l = await t.enqueue('long');
    await t.claim('long', 'W');
    const long = await page(`/dashboard/jobs/${l.id}`);
    expect(text(element(long, 'job-lease', 'dd'))).toMatch(/^2 m 0 s lease \(this claim's\) · expires in 2 m 0 s/);
    expect(text(element(long, 'job-heartbeat', 'dd'))).toBe('last 0 ms ago · interval 20.0 s');
  });

  test('leads with status, lease, owner liveness and the reaper; then the actions; then payload, result and the trail', async () => {
    const e = await t.enqueue('q', { payload: { to: 'x@example.com' } });
    await t.claim('q', 'W');
    t.clock.advance(32_000); // lease expired 2 s ago, inside the grace; W last seen 32 s ago
    const html = await page(`/dashboard/jobs/${e.id}`);
    const order = ['id="job-summary"', '<h2>Actions</h2>', 'id="job-payload"', '<h2>Result</h2>', '<table class="events">'].map((s) => html.indexOf(s));
    expect(order.every((i) => i > 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);

    const summary = element(html, 'job-summary', 'dl');
    expect(text(summary)).toContain('Status running in q · attempt 1 of');
    expect(text(element(html, 'job-lease', 'dd'))).toMatch(/expired 2\.0 s ago/);
    expect(text(element(html, 'job-owner', 'dd'))).toBe('W (not seen, last seen 32.0 s ago)');
    // decideReap's why and takesAt: the lease + grace runs out at 40 s.
    expect(text(element(html, 'job-reaper', 'dd'))).toBe(
      'waits: lease expired 2.0 s ago, inside the 10 s grace; takes it back in 8.0 s if no heartbeat or beat arrives (at 2030-01-01 00:00:40Z)',
    );
    // Each part polls on its own; the actions between them do not.
    expect(html).toContain(`hx-get="/dashboard/live/jobs/${e.id}?shown=running&amp;part=summary"`);
    expect(html).toContain(`hx-get="/dashboard/live/jobs/${e.id}?shown=running&amp;part=details"`);
    const summaryPart = await page(`/dashboard/live/jobs/${e.id}?shown=running&part=summary`);
    expect(summaryPart).toContain('id="job-summary"');
    expect(summaryPart).not.toContain('id="job-payload"');
    const details = await page(`/dashboard/live/jobs/${e.id}?shown=running&part=details`);
    expect(details).toContain('id="job-payload"');
    expect(details).not.toContain('id="job-summary"');
  });
});

describe('the alerts page', () => {
  test('the heartbeat alert links to its late jobs, and says since when it fires', async () => {
    const jobs = [await t.enqueue('q'), await t.enqueue('q')];
    await t.claim('q', 'A', { limit: 2 });
    t.clock.advance(16_000); // over 3 intervals without a heartbeat
    await t.post(`${api}/workers/beat`, { workerId: 'A' }, admin); // A lives: its late jobs page
    expect((await t.post(`${api}/reaper/run`, {}, admin)).json.alerts).toMatchObject({ evaluated: true, started: 1 });
    t.clock.advance(65_000);
    await t.post(`${api}/workers/beat`, { workerId: 'A' }, admin);
    const row = element(await page('/dashboard/alerts'), 'alert-q-heartbeat_lag', 'tr');
    expect(row).toContain('<span class="alert-state firing">firing</span>');
    for (const j of jobs) expect(row).toContain(`<a href="/dashboard/jobs/${j.id}">${j.id}</a>`);
    expect(text(row)).toMatch(/1 m 5 s since 2030-01-01 00:00:16Z$/);
  });
});

describe('the bulk dry run', () => {
  async function failed(queue: string, n: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const e = await t.enqueue(queue, { payload: { i }, maxAttempts: 1 });
      const [c] = await t.claim(queue, 'W');
      expect((await t.post(`${api}/jobs/${e.id}/fail`, { workerId: 'W', lockToken: c!.lockToken, error: `boom ${i}`, retryable: false }, admin)).status).toBe(200);
      ids.push(e.id);
    }
    return ids;
  }
  const rowsOf = (html: string) => [...html.matchAll(/<tr id="bulk-job-(\d+)">(.*?)<\/tr>/g)].map((m) => ({ id: m[1]!, text: text(m[2]!) }));
  const statuses = async (ids: string[]) => Promise.all(ids.map(async (id) => (await t.get(`${api}/jobs/${id}`, admin)).json.job.status as string));

  test('lists the jobs it will touch with why; a smaller batch is shown, confirmed and applied', async () => {
    const ids = await failed('q', 4);
    const all = await page('/dashboard/bulk?queue=q&status=failed');
    expect(text(element(all, 'bulk-count', 'p'))).toBe('4 matching failed jobs in queue q; at most 100 will be acted on, this time 4. Nothing has changed yet. All 4 are listed below.');
    expect(rowsOf(all)).toEqual(ids.map((id, i) => ({ id, text: expect.stringMatching(new RegExp(`^${id} q failed — .* failed after 1 of 1 attempts: boom ${i}$`)) })));
    expect(all).toContain('name="batch" min="1" max="100" step="1" value="100"');

    const two = await page('/dashboard/bulk?queue=q&status=failed&batch=2');
    expect(text(element(two, 'bulk-count', 'p'))).toContain('4 matching failed jobs in queue q; at most 100 will be acted on, this time 2.');
    expect(rowsOf(two).map((r) => r.id)).toEqual(ids.slice(0, 2));
    expect(two).toContain('name="batch" min="1" max="100" step="1" value="2"');
    expect(two).toContain('<input type="hidden" name="expected" value="2"/>');
    expect(two).toContain('Type 2 to confirm');

    const csrf = /name="_csrf" value="([^"]+)"/.exec(two)![1]!;
    const res = await t.app.request('/dashboard/bulk', {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: csrf, queue: 'q', status: 'failed', expected: '2', confirm: '2', reason: 'small batch first' }).toString(),
    });
    expect(res.status).toBe(200);
    expect(text(element(await res.text(), 'bulk-done', 'p'))).toBe('2 jobs retried (back to pending with a fresh attempt budget).');
    expect(await statuses(ids)).toEqual(['pending', 'pending', 'failed', 'failed']);
  });

  test('a batch size that is not a whole number from 1 to the cap is a 400 naming it', async () => {
    const ids = await failed('q', 1);
    for (const batch of ['0', '101', 'abc', '1.5', '-1', '9999999999']) {
      const res = await t.app.request(`/dashboard/bulk?queue=q&status=failed&batch=${encodeURIComponent(batch)}`, { headers: { cookie } });
      expect(res.status, batch).toBe(400);
      expect(await res.text(), batch).toContain('batch: a whole number from 1 to the cap (100)');
    }
    expect(await statuses(ids)).toEqual(['failed']);
  });

  test('a requeue lists the job the reaper would take with its why, and the expired lease it leaves alone ("1 matching running job")', async () => {
    const taken = await t.enqueue('rq');
    await t.claim('rq', 'dead-worker');
    t.clock.advance(PAST_LEASE_OWNER_DEAD - 35_000);
    const waiting = await t.enqueue('rq');
    await t.claim('rq', 'dead-worker');
    t.clock.advance(35_000); // taken: 25 s past its lease, owner not seen for 35 s; waiting: 5 s past its lease, inside the grace
    const html = await page('/dashboard/bulk?queue=rq&status=running');
    expect(text(element(html, 'bulk-count', 'p'))).toMatch(/^1 matching running job the reaper would take back now in queue rq; at most 100 will be acted on, this time 1\./);
    const rows = rowsOf(html);
    expect(rows.map((r) => r.id)).toEqual([taken.id]);
    expect(rows[0]!.text).toMatch(/running dead-worker .* the reaper would take it back now: lease expired 25\.0 s ago \(grace 10 s\) and owner dead-worker was last seen 35\.0 s ago$/);
    const alone = element(html, `left-alone-${waiting.id}`, 'tr');
    expect(text(alone)).toBe(`${waiting.id} rq dead-worker lease expired 5.0 s ago, inside the 10 s grace`);
  });
});
