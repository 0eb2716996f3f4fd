/**
 * The default rate limit is a sliding window: at most `max` claims start in
 * any window of `windowMs`, wherever it begins. Work that arrives mid-window
 * never gets 2 x max starts across a window's edge (as the fixed mode allows).
 */
import { afterEach, beforeEach, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';

const api = '/api/v1';
let t: TestBed;
beforeEach(async () => {
  t = await setup();
  // Mid-window: 450 ms into a second.
  t.clock.set(Date.UTC(2030, 0, 1, 12, 0, 0, 450));
});
afterEach(() => t.close());

const claim = (limit: number) => t.post(`${api}/queues/q/claim`, { workerId: 'w', limit });

test('at most max starts in any window of windowMs, across the edge of an aligned window', async () => {
  await t.post(`${api}/queues/q/jobs`, { jobs: Array.from({ length: 40 }, (_, i) => ({ payload: i })) });
  const set = await t.call('PATCH', `${api}/queues/q/settings`, { rateLimit: { max: 10, windowMs: 1_000 } });
  expect(set.json.queue.settings).toMatchObject({ rateLimit: { max: 10, windowMs: 1_000 }, rateLimitMode: 'sliding' });
  const starts: number[] = [];
  // A claim every 50 ms for 3 s: a fixed window would let 10 more start at 12:00:01.000.
  for (let i = 0; i < 60; i++) {
    const res = await claim(5);
    for (const _ of res.json.jobs) starts.push(t.clock.now() as number);
    if (res.json.jobs.length === 0 && starts.length >= 10) {
      // The wait names when the oldest start leaves the window.
      expect(res.json.retryAfterMs).toBeGreaterThan(0);
      expect(Date.parse(res.json.rateLimitedUntil)).toBeGreaterThan(t.clock.now() as number);
    }
    t.clock.advance(50);
  }
  for (const s of starts) expect(starts.filter((x) => x >= s && x < s + 1_000).length).toBeLessThanOrEqual(10);
  expect(starts.length).toBe(30);
  expect((await t.get(`${api}/queues/q`)).json.queue.rateUsed).toBeLessThanOrEqual(10);
});

test("rateLimitMode 'fixed' keeps the aligned windows", async () => {
  await t.post(`${api}/queues/q/jobs`, { jobs: Array.from({ length: 40 }, (_, i) => ({ payload: i })) });
  await t.call('PATCH', `${api}/queues/q/settings`, { rateLimit: { max: 10, windowMs: 1_000 }, rateLimitMode: 'fixed' });
  expect((await claim(10)).json.jobs).toHaveLength(10);
  t.clock.advance(600);
  // 12:00:01.050: a new aligned window, 20 starts within 0.6 s.
  expect((await claim(10)).json.jobs).toHaveLength(10);
  expect((await t.get(`${api}/queues/q`)).json.queue.overrides).toMatchObject({ rateLimitMode: 'fixed' });
});
