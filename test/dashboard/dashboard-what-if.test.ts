/**
 * The tuning page's what-if (/dashboard/tuning/what-if), on evidence made
 * through the API (test/support/tuning-evidence.ts: a 4.5 s block that lost
 * a 2 s lease): today's false reap beside the recommendation's none, the
 * job behind it linked; a typed candidate replays with its own numbers, a
 * field left empty keeps today's value; a bad field is a 400 naming it that
 * changes nothing; what was typed comes back escaped.
 */
import { afterEach, beforeEach, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';
import { blockLosesTheLease } from '../support/tuning-evidence.ts';

let t: TestBed;
let lost: string;
beforeEach(async () => {
  t = await setup();
  lost = await blockLosesTheLease(t);
});
afterEach(() => {
  expect(t.errors).toEqual([]);
  t.close();
});

async function page(path: string) {
  const res = await t.app.request(path);
  return { status: res.status, html: await res.text() };
}
const text = (fragment: string) => fragment.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim();
/** The today and candidate cells of the what-if row with this label, as text and as HTML. */
function row(html: string, label: string) {
  const at = html.indexOf(`<td>${label}</td>`);
  expect(at, label).toBeGreaterThan(-1);
  const m = /<td class="today">(.*?)<\/td><td class="candidate">(.*?)<\/td>/.exec(html.slice(at))!;
  return { today: text(m[1]!), candidate: text(m[2]!), todayHtml: m[1]!, candidateHtml: m[2]! };
}
const FALSE_REAPS = 'False reaps (healthy jobs taken back, each a duplicate run)';
const settingsOfQ = async () => (await t.get('/api/v1/queues/q')).json.queue.settings;

test('the tuning page links each queue to its what-if, recommending what the API recommends', async () => {
  const recommended = ((await t.get('/api/v1/tuning')).json.queues as any[]).find((x) => x.queue === 'q').recommended;
  expect(recommended.leaseMs).toBeGreaterThan(4_500);
  const { status, html } = await page('/dashboard/tuning');
  expect(status).toBe(200);
  expect(html).toContain(`${recommended.leaseMs} ms (`);
  expect(html).toContain('href="/dashboard/tuning/what-if?queue=q"');
});

test('the default candidate is the recommendation: a false reap today, none recommended; the job behind it linked; the evidence counted', async () => {
  const recommended = ((await t.get('/api/v1/tuning')).json.queues as any[]).find((x) => x.queue === 'q').recommended;
  const { status, html } = await page('/dashboard/tuning/what-if?queue=q');
  expect(status, html).toBe(200);
  expect(html).toContain('<th>Recommended</th>');
  expect(row(html, FALSE_REAPS)).toMatchObject({ today: '1', candidate: '0' });
  const jobs = row(html, 'Jobs taken back');
  expect(jobs.todayHtml).toContain(`href="/dashboard/jobs/${lost}"`);
  expect(jobs.candidate).toBe('—');
  expect(row(html, 'False reaps that happened, avoided')).toMatchObject({ today: '0', candidate: '1' });
  // The form starts from the recommendation.
  expect(html).toContain(`name="leaseMs" value="${recommended.leaseMs}"`);
  expect(html).toContain(`name="heartbeatMs" value="${recommended.heartbeatMs}"`);
  const evidence = text(html.slice(html.indexOf('what-if-evidence')));
  expect(evidence).toContain('Attempts the reaper took 1: 1 with their owner alive');
  expect(evidence).toContain('Worker blocks reported 1; longest 4.5 s');
});

test('a typed candidate replays with its own numbers; an empty field keeps today’s value', async () => {
  const longer = await page('/dashboard/tuning/what-if?queue=q&leaseMs=8000&graceMs=2000&heartbeatMs=500&windowMs=');
  expect(longer.status).toBe(200);
  expect(longer.html).toContain('<th>Candidate</th>');
  expect(row(longer.html, FALSE_REAPS)).toMatchObject({ today: '1', candidate: '0' });
  expect(row(longer.html, 'Settings').candidate).toBe('8.0 s lease, 2.0 s grace, heartbeat every 500 ms');

  // A lease + grace the 4.5 s pause outlasts takes the job back as today's does.
  const short = await page('/dashboard/tuning/what-if?queue=q&leaseMs=3000&graceMs=&heartbeatMs=&windowMs=7200000');
  expect(short.status).toBe(200);
  expect(row(short.html, 'Settings').candidate).toBe('3.0 s lease, 1.0 s grace, heartbeat every 500 ms');
  expect(row(short.html, FALSE_REAPS)).toMatchObject({ today: '1', candidate: '1' });
  expect(row(short.html, 'Jobs taken back').candidateHtml).toContain(`href="/dashboard/jobs/${lost}"`);
  expect(short.html).toContain('name="leaseMs" value="3000"');
  expect(short.html).toContain('(2 h 0 m)');
});

test('a bad candidate is a 400 naming the field, replays nothing and changes nothing; what was typed comes back escaped', async () => {
  const before = await settingsOfQ();
  for (const [query, field] of [
    ['leaseMs=abc', 'leaseMs'],
    ['leaseMs=1.5', 'leaseMs'],
    ['graceMs=-5', 'graceMs'],
    ['heartbeatMs=0', 'heartbeatMs'],
    ['windowMs=999999999', 'windowMs'],
    ['windowMs=1000', 'windowMs'],
    ['leaseMs=1000&heartbeatMs=1000', 'heartbeatMs'],
    ['leaseMs=400', 'heartbeatMs'],
  ] as const) {
    const { status, html } = await page(`/dashboard/tuning/what-if?queue=q&${query}`);
    expect(status, query).toBe(400);
    const notice = text(/<p class="notice error">(.*?)<\/p>/.exec(html)![1]!);
    expect(notice, query).toContain(field);
    expect(notice).toContain('Nothing was replayed.');
    expect(html).not.toContain('what-if-outcomes');
  }
  const typed = await page(`/dashboard/tuning/what-if?queue=q&leaseMs=${encodeURIComponent('"><script>alert(1)</script>')}`);
  expect(typed.status).toBe(400);
  expect(typed.html).not.toContain('<script>alert(1)');
  expect(typed.html).toContain('&lt;script&gt;');

  for (const path of ['/dashboard/tuning/what-if', `/dashboard/tuning/what-if?queue=${encodeURIComponent('<b>no</b> such')}`]) {
    const { status, html } = await page(path);
    expect(status, path).toBe(400);
    expect(html).toContain('queue: a queue name');
    expect(html).not.toContain('<b>no</b>');
  }
  const unknown = await page('/dashboard/tuning/what-if?queue=nope&leaseMs=8000');
  expect(unknown.status).toBe(404);
  expect(unknown.html).toContain('no queue is named nope');
  expect(await settingsOfQ()).toEqual(before);
});
