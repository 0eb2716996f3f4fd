/** The jobs list's where filter in the dashboard: kept in the form and the pager, escaped, and a bad clause a 400 that says why. */
import { afterEach, beforeEach, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';
import { dashboardBrowser } from '../support/dashboard-browser.ts';

const ADMIN = 'a'.repeat(24);
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

const page = async (query: string) => {
  const res = await t.app.request(`/dashboard/jobs?${query}`, { headers: { cookie } });
  return { status: res.status, html: await res.text() };
};
const listed = (html: string) => [...html.matchAll(/<a href="\/dashboard\/jobs\/(\d+)">/g)].map((m) => m[1]);

test('clauses one per line filter the list; the form and the pager keep them, escaped; no bulk action on a where filter', async () => {
  const admin = { authorization: `Bearer ${ADMIN}` };
  const ids: string[] = [];
  for (let i = 0; i < 55; i++) ids.push((await t.post('/api/v1/queues/shop/jobs', { payload: { customerId: i % 2 === 0 ? 42 : 7, tag: '<b>x</b>' } }, admin)).json.job.id);
  const where = 'payload.customerId = 42\r\n\r\npayload.tag = "<b>x</b>"';
  const first = await page(`queue=shop&status=pending&where=${encodeURIComponent(where)}`);
  expect(first.status).toBe(200);
  const evens = ids.filter((_, i) => i % 2 === 0).reverse();
  expect(listed(first.html)).toEqual(evens.slice(0, 28));
  // The textarea holds the clauses, one per line, escaped.
  expect(first.html).toContain('payload.customerId = 42\npayload.tag = &quot;&lt;b&gt;x&lt;/b&gt;&quot;</textarea>');
  expect(first.html).not.toContain('<b>x</b>');
  // Fewer than a page: no next page; more, and the pager carries each clause as its own where.
  expect(first.html).not.toContain('rel="next"');
  const paged = await page(`queue=shop&where=${encodeURIComponent('payload.customerId = 7')}&where=${encodeURIComponent('payload.tag exists')}`);
  expect(listed(paged.html)).toHaveLength(27);
  const twoPages = await page(`queue=shop&where=${encodeURIComponent('payload.tag exists')}`);
  const next = /href="\/dashboard\/jobs\?([^"]+)" rel="next"/.exec(twoPages.html)![1]!.replaceAll('&amp;', '&');
  expect(new URLSearchParams(next).getAll('where')).toEqual(['payload.tag exists']);
  expect(listed((await page(next)).html)).toEqual(ids.slice(0, 5).reverse());
  // A bulk action acts on queue and status, not on the where: not offered with one.
  expect((await page('queue=shop&status=pending')).html).toContain('action="/dashboard/bulk"');
  expect(first.html).not.toContain('action="/dashboard/bulk"');
});

test('a bad clause is a 400 page saying what is wrong, the live region too; nothing is listed and nothing is a 500', async () => {
  await t.enqueue('shop', { payload: { customerId: 42 } });
  for (const [where, says] of [
    ['payload.customerId ~ 42', /after the path, expected one of/],
    ["payload.x' = 1", /after the path|path/],
    ['meta.x = 1', /must start with payload or result/],
    ['payload.x = <script>alert(1)</script>', /is not JSON/],
  ] as const) {
    const res = await page(`where=${encodeURIComponent(where)}`);
    expect(res.status, where).toBe(400);
    expect(res.html, where).toMatch(says);
    expect(res.html).not.toContain('<script>alert(1)</script>');
    const live = await t.app.request(`/dashboard/live/jobs?where=${encodeURIComponent(where)}`, { headers: { cookie } });
    expect(live.status).toBe(400);
  }
  const six = Array.from({ length: 6 }, (_, i) => `payload.f${i} exists`).join('\n');
  const tooMany = await page(`where=${encodeURIComponent(six)}`);
  expect(tooMany.status).toBe(400);
  expect(tooMany.html).toContain('at most 5 clauses');
});
