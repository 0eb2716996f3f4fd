/** The dashboard's queue pages render a bounded page of queues, problems first, with totals over all of them. */
import { afterEach, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';

let t: TestBed;
afterEach(() => t?.close());

/** `count` queues made in place (through the API it would take minutes), named q0000, q0001, ... */
async function manyQueues(count: number) {
  await t.client.execute(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${count - 1})
    INSERT INTO queues (name, created_at, updated_at) SELECT printf('q%04d', i), 0, 0 FROM n`);
}

const rows = (html: string, cls: string) => html.match(new RegExp(`<(?:section|tr) class="${cls}`, 'g'))?.length ?? 0;

test('2,100 queues: the overview, alerts, metrics and tuning fragments each show one page of 50, with totals and page links', async () => {
  t = await setup();
  await manyQueues(2100);
  // Jobs in two queues far down the name order: totals count them.
  await t.enqueue('q2050', { payload: 1 });
  await t.enqueue('q2050', { payload: 2 });
  await t.enqueue('q0007', { payload: 3 });

  const overview = await t.get('/dashboard/live/overview');
  expect(overview.status).toBe(200);
  // Before: 4 MB for 2,000 queues, rendered on every 2 s poll.
  expect(overview.text.length).toBeLessThan(150_000);
  expect(overview.text.match(/<a href="\/dashboard\/jobs\?queue=q\d{4}">/g)).toHaveLength(50);
  expect(overview.text).toContain('All 2,100 queues: 3 pending');
  expect(overview.text).toContain('Queues 1–50 of 2,100');
  expect(overview.text).toContain('page 1 of 42');
  expect(overview.text).toContain('href="/dashboard?page=2"');
  expect(overview.text).toContain('href="/dashboard?page=42"');

  for (const [path, cls] of [['alerts', 'ok'], ['metrics', 'queue-metrics'], ['tuning', 'queue-tuning']] as const) {
    const res = await t.get(`/dashboard/live/${path}`);
    expect(res.status, path).toBe(200);
    expect(res.text.length, path).toBeLessThan(400_000);
    expect(res.text, path).toContain(`href="/dashboard/${path}?page=2"`);
    const shown = new Set(res.text.match(/q\d{4}/g));
    expect(shown.size, path).toBe(50);
    expect(rows(res.text, cls), path).toBeGreaterThanOrEqual(50);
  }

  // The last page, through the full page: its poll asks for the same page.
  const last = await t.get('/dashboard?page=42');
  expect(last.status).toBe(200);
  expect(last.text).toContain('hx-get="/dashboard/live/overview?page=42"');
  expect(last.text).toContain('Queues 2,051–2,100 of 2,100');
  expect(last.text).toContain('href="/dashboard/jobs?queue=q2099"');
  expect(last.text).not.toContain('href="/dashboard/jobs?queue=q0000"');
});

test('a name filter narrows every page, and its poll and page links keep it', async () => {
  t = await setup();
  await manyQueues(300);
  const res = await t.get('/dashboard/metrics?q=q012');
  expect(res.status).toBe(200);
  expect(res.text).toContain('hx-get="/dashboard/live/metrics?q=q012"');
  expect(res.text).toContain('value="q012"');
  expect([...new Set(res.text.match(/q\d{4}/g))].sort()).toEqual(Array.from({ length: 10 }, (_, i) => `q012${i}`));
  expect(res.text).toContain('10 matching “q012” (of 300)');

  const paged = await t.get('/dashboard/live/overview?q=q01&page=2');
  expect(paged.text).toContain('Queues 51–100 of 100 matching “q01” (of 300)');
  expect(paged.text).toContain('href="/dashboard?q=q01"');

  const none = await t.get('/dashboard/live/alerts?q=nope');
  expect(none.text).toContain('No queue name contains “nope”');
});

test('queues in trouble come first: an expired lease puts its queue on page 1', async () => {
  t = await setup();
  await manyQueues(200);
  await t.enqueue('q0190', { payload: 1 });
  await t.claim('q0190', 'w1', { leaseMs: 1000 });
  t.clock.advance(60_000);
  const res = await t.get('/dashboard/live/overview');
  const first = res.text.match(/href="\/dashboard\/jobs\?queue=(q\d{4})"/)?.[1];
  expect(first).toBe('q0190');
  expect(res.text).toContain('1 expired lease');
});

test('a bad page or filter is a 400 naming it', async () => {
  t = await setup();
  for (const path of ['/dashboard?page=0', '/dashboard/live/overview?page=x', '/dashboard/alerts?page=-1', `/dashboard/live/tuning?q=${'a'.repeat(201)}`]) {
    const res = await t.get(path);
    expect(res.status, path).toBe(400);
    expect(res.text, path).toMatch(/page: a whole number|q: at most 200/);
  }
});
