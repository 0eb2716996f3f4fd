/**
 * Groups: a job's `group` (a tenant); per queue, a claim fair across groups
 * (round-robin, least recently served first), at most groupMaxRunning running
 * per group whoever claims (two apps on one database file), a per-group
 * sliding rate limit, and a claim that stays flat with 10,000 groups.
 */
import { afterEach, beforeEach, expect, test } from 'vitest';
import { createApp } from '../../src/app.ts';
import { openLibsql } from '../../src/runtime/libsql.ts';
import { engineOn, setup, type TestBed } from '../support/helpers.ts';

const api = '/api/v1';
let t: TestBed;
beforeEach(async () => {
  t = await setup();
});
afterEach(() => t.close());

const patch = (queue: string, body: unknown) => t.call('PATCH', `${api}/queues/${queue}/settings`, body);
const enqueueMany = (queue: string, group: string, n: number) =>
  t.post(`${api}/queues/${queue}/jobs`, { jobs: Array.from({ length: n }, (_, i) => ({ payload: { group, i }, group })) });

test('tenant A with 1000 jobs does not starve tenant B with 10: B starts within the first 20 claims', async () => {
  await enqueueMany('q', 'A', 1000);
  await enqueueMany('q', 'B', 10);
  const order: string[] = [];
  for (let i = 0; i < 20; i++) order.push(...(await t.claim('q', 'w', { limit: 1 })).map((j) => (j.payload as { group: string }).group));
  expect(order.filter((g) => g === 'B')).toHaveLength(10);
  // And one claim of ten takes turns: B's jobs are not behind A's thousand.
  await enqueueMany('r', 'A', 1000);
  await enqueueMany('r', 'B', 3);
  const batch = (await t.claim('r', 'w', { limit: 10 })).map((j) => (j.payload as { group: string }).group);
  expect(batch.filter((g) => g === 'B')).toHaveLength(3);
  expect(batch).toHaveLength(10);
});

test('a bad group is a 400 naming the field and stores nothing', async () => {
  for (const group of ['', 'x'.repeat(129), 7]) {
    const res = await t.post(`${api}/queues/q/jobs`, { payload: 1, group });
    expect(res.status).toBe(400);
    expect(res.json.error.field ?? res.text).toMatch(/group/);
  }
  const bad = await patch('q', { groupMaxRunning: 0 });
  expect(bad.status).toBe(400);
  expect(bad.text).toMatch(/groupMaxRunning/);
  expect((await patch('q', { rateLimitMode: 'leaky' })).text).toMatch(/rateLimitMode/);
  expect((await t.get(`${api}/queues/q/jobs`)).json.jobs ?? []).toHaveLength(0);
});

test('groupMaxRunning holds across two servers on one database claiming at once', async () => {
  const other = await openLibsql(t.url);
  const app2 = createApp({ engine: engineOn(other.db, { config: t.config, clock: t.clock, log: t.log }) });
  try {
    expect((await patch('q', { groupMaxRunning: 2 })).json.queue.settings.groupMaxRunning).toBe(2);
    for (const g of ['a', 'b', 'c']) await enqueueMany('q', g, 30);
    const claimOn = async (app: typeof t.app, worker: string) => {
      const res = await app.request(`${api}/queues/q/claim`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ workerId: worker, limit: 3 }) });
      return ((await res.json()) as { jobs: { id: string; lockToken: string }[] }).jobs.map((j) => ({ ...j, worker }));
    };
    let claimed = 0;
    for (let round = 0; round < 15; round++) {
      const got = (await Promise.all([claimOn(t.app, 'w1'), claimOn(app2, 'w2'), claimOn(t.app, 'w3'), claimOn(app2, 'w4')])).flat();
      claimed += got.length;
      const running = await t.client.execute(`SELECT group_key, count(*) AS n FROM jobs WHERE status = 'running' GROUP BY group_key`);
      for (const row of running.rows) expect(Number(row.n)).toBeLessThanOrEqual(2);
      // Finish one job per round so slots come back.
      const done = (await t.client.execute(`SELECT id, lock_token, locked_by FROM jobs WHERE status = 'running' ORDER BY id LIMIT 2`)).rows;
      for (const r of done) expect((await t.post(`${api}/jobs/${r.id}/complete`, { workerId: String(r.locked_by), lockToken: String(r.lock_token) })).status).toBe(200);
    }
    expect(claimed).toBeGreaterThan(6);
    const counts = await t.client.execute(`SELECT group_key, pending, running FROM job_groups ORDER BY group_key`);
    const truth = await t.client.execute(`SELECT group_key, sum(status = 'pending') AS pending, sum(status = 'running') AS running FROM jobs GROUP BY group_key HAVING sum(status IN ('pending', 'running')) > 0 ORDER BY group_key`);
    expect(counts.rows.map((r) => [r.group_key, Number(r.pending), Number(r.running)])).toEqual(truth.rows.map((r) => [r.group_key, Number(r.pending), Number(r.running)]));
  } finally {
    other.close();
  }
});

test('groupRateLimit: at most max starts per group in any window', async () => {
  await patch('q', { groupRateLimit: { max: 2, windowMs: 10_000 } });
  await enqueueMany('q', 'a', 10);
  await enqueueMany('q', 'b', 10);
  const first = await t.claim('q', 'w', { limit: 10 });
  expect(first).toHaveLength(4);
  t.clock.advance(5_000);
  expect(await t.claim('q', 'w', { limit: 10 })).toHaveLength(0);
  t.clock.advance(5_001);
  expect(await t.claim('q', 'w', { limit: 10 })).toHaveLength(4);
});

test('with 10,000 groups a claim reads about as many rows as it takes', async () => {
  const now = t.clock.now() as number;
  await t.enqueue('q', { payload: 0, group: 'g0' });
  // 10,000 groups of 3 due jobs, written directly (the triggers keep job_groups).
  await t.client.execute({
    sql: `INSERT INTO jobs (queue_name, payload, status, max_attempts, available_at, group_key, created_at, updated_at)
      WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 30000)
      SELECT 'q', '{}', 'pending', 5, ?1, 'g' || (i % 10000), ?1, ?1 FROM s`,
    args: [now],
  });
  expect(Number((await t.client.execute(`SELECT count(*) AS n FROM job_groups WHERE queue_name = 'q'`)).rows[0]!.n)).toBe(10_000);
  const stepsFor = async (limit: number) => {
    const before = Number((await t.client.execute(`SELECT count(*) AS n FROM jobs WHERE status = 'running'`)).rows[0]!.n);
    const got = await t.claim('q', 'w', { limit });
    const after = Number((await t.client.execute(`SELECT count(*) AS n FROM jobs WHERE status = 'running'`)).rows[0]!.n);
    expect(after - before).toBe(got.length);
    return got;
  };
  const ten = await stepsFor(10);
  expect(new Set(ten.map((j) => j.id))).toHaveProperty('size', 10);
  // Ten different groups: one turn each.
  const groups = await t.client.execute(`SELECT count(DISTINCT group_key) AS n FROM jobs WHERE status = 'running'`);
  expect(Number(groups.rows[0]!.n)).toBe(10);
});
