/**
 * Rate limits in fixed mode (rateLimitMode 'fixed'; the sliding default is
 * in rate-limit-sliding.test.ts): at most `max` claims of a queue per fixed window of
 * `windowMs`, enforced by the claim statement (its tally, in the same
 * transaction, counts the claims it made), whoever claims. The wait shows in the claim
 * answer (retryAfterMs), the queue's API view and dashboard page, /metrics,
 * and the worker SDK sleeps until the next window instead of polling.
 */
import { afterEach, beforeEach, expect, test } from 'vitest';
import { dbTransport } from '../../src/embedded/db-transport.ts';
import { createWorker } from '../../src/worker/index.ts';
import { httpTransport } from '../../src/worker/http-transport.ts';
import { setup, type TestBed } from '../support/helpers.ts';

const api = '/api/v1';
let t: TestBed;
beforeEach(async () => {
  t = await setup();
  // The start of a minute: windows are aligned to multiples of windowMs.
  t.clock.set(Date.UTC(2030, 0, 1, 12, 0, 0));
});
afterEach(() => {
  expect(t.errors).toEqual([]);
  t.close();
});

const patch = (queue: string, body: unknown) => t.call('PATCH', `${api}/queues/${queue}/settings`, body);
const claim = (queue: string, limit: number, workerId = 'w') => t.post(`${api}/queues/${queue}/claim`, { workerId, limit });
async function scrape(name: string, queue: string) {
  const text = await (await t.app.request('/metrics')).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{queue="${queue}"}`));
  return line === undefined ? undefined : Number(line.split(' ').pop());
}

test('claims stop at max per window, the answer says when the next window opens, and the next window lets claims through', async () => {
  await t.post(`${api}/queues/q/jobs`, { jobs: Array.from({ length: 10 }, (_, i) => ({ payload: i })) });
  const set = await patch('q', { rateLimit: { max: 3, windowMs: 60_000 }, rateLimitMode: 'fixed' });
  expect(set.json.queue.settings.rateLimit).toEqual({ max: 3, windowMs: 60_000 });

  t.clock.advance(10_000);
  const first = await claim('q', 2);
  expect(first.json.jobs).toHaveLength(2);
  expect(first.json.retryAfterMs).toBeUndefined();
  // Completed jobs still count: the limit is on claims, not on running jobs.
  for (const j of first.json.jobs) await t.post(`${api}/jobs/${j.id}/complete`, { workerId: 'w', lockToken: j.lockToken });
  const second = await claim('q', 5, 'w2');
  expect(second.json.jobs).toHaveLength(1);
  expect(second.json).toMatchObject({ rateLimitedUntil: '2030-01-01T12:01:00.000Z', retryAfterMs: 50_000 });
  t.clock.advance(20_000);
  const held = await claim('q', 5);
  expect(held.json).toMatchObject({ jobs: [], rateLimitedUntil: '2030-01-01T12:01:00.000Z', retryAfterMs: 30_000 });

  // Visible: the queue's view, /metrics, the dashboard page.
  expect((await t.get(`${api}/queues/q`)).json.queue).toMatchObject({ rateUsed: 3, rateLimitedUntil: '2030-01-01T12:01:00.000Z' });
  expect(await scrape('leasehold_queue_rate_limited', 'q')).toBe(1);
  expect(await scrape('leasehold_queue_rate_limit_wait_seconds', 'q')).toBe(30);
  const page = await (await t.app.request('/dashboard/queues/q')).text();
  expect(page).toContain('3 of 3 claims used in this 1 m 0 s window: claims wait 30.0 s, until 2030-01-01 12:01:00Z');

  // The next window.
  t.clock.advance(30_000);
  expect((await claim('q', 5)).json.jobs).toHaveLength(3);
  expect(await scrape('leasehold_queue_rate_limited', 'q')).toBe(1);
  t.clock.advance(60_000);
  expect(await scrape('leasehold_queue_rate_limited', 'q')).toBe(0);
  expect(await scrape('leasehold_queue_rate_limit_wait_seconds', 'q')).toBe(0);
  const third = await claim('q', 2);
  expect(third.json.jobs).toHaveLength(2);
  expect(third.json.retryAfterMs).toBeUndefined();
  // Another queue is not limited; null lifts the limit.
  await t.post(`${api}/queues/free/jobs`, { jobs: [{ payload: 1 }, { payload: 2 }, { payload: 3 }, { payload: 4 }] });
  expect((await claim('free', 10)).json.jobs).toHaveLength(4);
  expect((await patch('q', { rateLimit: null })).json.queue.settings.rateLimit).toBe(null);
  expect((await claim('q', 10)).json.jobs).toHaveLength(2);
  expect(await scrape('leasehold_queue_rate_limited', 'free')).toBe(0);
});

test('a completion that claims the next jobs obeys the rate limit, and the limit combines with maxRunning', async () => {
  await t.post(`${api}/queues/q/jobs`, { jobs: Array.from({ length: 10 }, (_, i) => ({ payload: i })) });
  await patch('q', { rateLimit: { max: 4, windowMs: 60_000 }, maxRunning: 2 });
  const [a, b] = (await claim('q', 10)).json.jobs;
  expect(b).toBeDefined();
  // maxRunning holds it to 2 running; the rate limit to 4 claims this window.
  const done = await t.post(`${api}/completions`, { workerId: 'w', results: [a, b].map((j) => ({ id: j.id, lockToken: j.lockToken })), claim: { queue: 'q', limit: 5 } });
  expect(done.json.jobs).toHaveLength(2);
  const more = await t.post(`${api}/completions`, { workerId: 'w', results: done.json.jobs.map((j: any) => ({ id: j.id, lockToken: j.lockToken })), claim: { queue: 'q', limit: 5 } });
  expect(more.json.jobs).toHaveLength(0);
  const claims = await t.client.execute(`SELECT count(*) AS n FROM events WHERE type = 'claimed'`);
  expect(Number(claims.rows[0]!.n)).toBe(4);
});

test('bad rateLimit is a 400 naming the field, and changes nothing', async () => {
  await patch('q', { rateLimit: { max: 5, windowMs: 1_000 } });
  for (const [bad, field] of [
    [{ max: 0, windowMs: 60_000 }, 'rateLimit.max'],
    [{ max: 5 }, 'rateLimit.windowMs'],
    [{ max: 5, windowMs: 10 }, 'rateLimit.windowMs'],
    [{ max: 5, windowMs: 60_000, burst: 2 }, 'rateLimit.burst'],
    [100, 'rateLimit'],
  ] as const) {
    const res = await patch('q', { rateLimit: bad });
    expect(res.status, JSON.stringify(bad)).toBe(400);
    expect(res.json.error.field).toBe(field);
  }
  expect((await t.get(`${api}/queues/q`)).json.queue.settings.rateLimit).toEqual({ max: 5, windowMs: 1_000 });
});

test('the worker SDK waits for the next window instead of polling into a spent one', async () => {
  await t.post(`${api}/queues/q/jobs`, { jobs: Array.from({ length: 5 }, (_, i) => ({ payload: i })) });
  await patch('q', { rateLimit: { max: 1, windowMs: 60_000 }, rateLimitMode: 'fixed' });
  let claims = 0;
  const fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    const path = new URL(String(input)).pathname;
    if (path.endsWith('/claim')) claims++;
    return t.app.request(path, init);
  };
  const w = createWorker({
    transport: httpTransport({ url: 'http://leasehold.test', fetch: fetch as typeof globalThis.fetch }),
    queue: 'q',
    workerId: 'sdk',
    pollMs: 10,
    maxPollMs: 20,
    handleSignals: false,
    logger: { info() {}, warn() {}, error() {} },
    handler: async () => ({ ok: true }),
  });
  w.start();
  await new Promise((r) => setTimeout(r, 1_000));
  await w.close({ drainTimeoutMs: 0 });
  expect(w.stats.completed).toBe(1);
  // Polling every 10-20 ms would have made dozens of claims in a second; told
  // the window opens in 60 s (the manual clock does not move), it waits.
  expect(claims).toBeLessThanOrEqual(3);
});

test('the in-process transport answers the same wait as the HTTP route, so an embedded worker sleeps until the window opens too', async () => {
  const transport = dbTransport(t.engine);
  await t.post(`${api}/queues/q/jobs`, { jobs: Array.from({ length: 5 }, (_, i) => ({ payload: i })) });
  await patch('q', { rateLimit: { max: 2, windowMs: 60_000 }, rateLimitMode: 'fixed' });
  t.clock.advance(15_000);
  const first = await transport.claim({ queue: 'q', workerId: 'w', limit: 2 });
  expect(first.jobs).toHaveLength(2);
  expect(first.retryAfterMs).toBeUndefined();
  const held = await transport.claim({ queue: 'q', workerId: 'w', limit: 2 });
  expect(held.jobs).toHaveLength(0);
  expect(held.retryAfterMs).toBe(45_000);
});
