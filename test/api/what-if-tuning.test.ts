/**
 * What-if tuning from evidence: a 4.5 s event-loop block that lost a 2 s
 * lease teaches the recommendation a lease above 4.5 s, and the what-if
 * replay counts that take as a false reap under today's settings, avoided
 * under a longer lease. Bad candidates are refused naming the field.
 */
import { afterEach, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';
import { blockLosesTheLease } from '../support/tuning-evidence.ts';

let t: TestBed;
afterEach(() => t?.close());
const api = '/api/v1';

test('a queue where a 4.5 s block lost a 2 s lease is told a lease above 4.5 s', async () => {
  t = await setup();
  await blockLosesTheLease(t);
  const q = ((await t.get(`${api}/tuning`)).json.queues as any[]).find((x) => x.queue === 'q');
  expect(q.recommended.leaseMs).toBeGreaterThan(4_500);
  expect(q.observed.longestBlockMs).toBe(4_500);
});

test('the what-if replay: a false reap today, avoided by a longer lease; bad input names its field', async () => {
  t = await setup();
  const lost = await blockLosesTheLease(t);
  const res = await t.get(`${api}/queues/q/tuning/what-if?leaseMs=8000&graceMs=2000`);
  expect(res.status, res.text).toBe(200);
  expect(res.json.evidence).toMatchObject({ reaped: 1, falseReapsSeen: 1, longestBlockMs: 4_500 });
  expect(res.json.current).toMatchObject({ falseReaps: 1, falseReapsAvoided: 0, falseReapJobs: [{ id: lost, attempt: 1 }] });
  expect(res.json.candidate).toMatchObject({ falseReaps: 0, falseReapsAvoided: 1, falseReapJobs: [], settings: { leaseMs: 8_000, graceMs: 2_000, heartbeatMs: 500 } });
  for (const [query, field] of [['leaseMs=-1', 'leaseMs'], ['graceMs=-5', 'graceMs'], ['windowMs=999999999', 'windowMs'], ['leaseMs=1000&heartbeatMs=1000', 'heartbeatMs']] as const) {
    const bad = await t.get(`${api}/queues/q/tuning/what-if?${query}`);
    expect(bad.status, query).toBe(400);
    expect(bad.text).toContain(field);
  }
  expect((await t.get(`${api}/queues/nope/tuning/what-if`)).status).toBe(404);
});
