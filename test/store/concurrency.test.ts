/**
 * Two claimers can never take the same job (docs/guarantees.md: the claim is one
 * UPDATE ... WHERE id IN (SELECT ... LIMIT n) RETURNING), whether the claims
 * race through one app or through two clients on the same database file.
 */
import { afterEach, beforeEach, expect, test } from 'vitest';
import { jobsClaimPending } from '../../src/db/store/claim.ts';
import { jobsCompleteIfOwned } from '../../src/db/store/finish.ts';
import { openLibsql, type OpenedDb } from '../../src/runtime/libsql.ts';
import { setup, type TestBed, appOn } from '../support/helpers.ts';

let t: TestBed;
const extra: OpenedDb[] = [];
beforeEach(async () => {
  t = await setup();
});
afterEach(() => {
  for (const o of extra.splice(0)) o.close();
  t.close();
});

const api = '/api/v1';

test('50 parallel claims over 20 jobs: each job claimed exactly once, 30 empty answers', async () => {
  const res = await t.post(`${api}/queues/q/jobs`, { jobs: Array.from({ length: 20 }, (_, i) => ({ payload: i })) });
  expect(res.status).toBe(201);
  const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => t.post(`${api}/queues/q/claim`, { workerId: `w${i}`, limit: 1 })));
  expect(answers.map((a) => a.status)).toEqual(Array(50).fill(200));
  const claimed = answers.flatMap((a, i) => (a.json.jobs as { id: string; lockToken: string }[]).map((j) => ({ ...j, lockedBy: `w${i}` })));
  expect(claimed).toHaveLength(20);
  expect(new Set(claimed.map((c) => c.id)).size).toBe(20);
  expect(new Set(claimed.map((c) => c.lockToken)).size).toBe(20);
  expect(answers.filter((a) => a.json.jobs.length === 0)).toHaveLength(30);

  // The database agrees: 20 running jobs, one claimed event each, owned by the worker that was told so.
  const rows = await t.client.execute(`select id, locked_by, attempt_count from jobs order by id`);
  expect(rows.rows.every((r) => Number(r.attempt_count) === 1)).toBe(true);
  for (const c of claimed) expect(rows.rows.find((r) => String(r.id) === c.id)!.locked_by).toBe(c.lockedBy);
  const events = await t.client.execute(`select job_id, count(*) as n from events where type = 'claimed' group by job_id`);
  expect(events.rows).toHaveLength(20);
  expect(events.rows.every((r) => Number(r.n) === 1)).toBe(true);
  expect(t.errors).toEqual([]);
});

test('parallel batch claims and completions through one app never overlap', async () => {
  await t.post(`${api}/queues/q/jobs`, { jobs: Array.from({ length: 100 }, (_, i) => ({ payload: i })) });
  const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => t.post(`${api}/queues/q/claim`, { workerId: `w${i}`, limit: 10 })));
  const claimed = answers.flatMap((a, i) => (a.json.jobs as { id: string; lockToken: string }[]).map((j) => ({ ...j, workerId: `w${i}` })));
  expect(claimed).toHaveLength(100);
  expect(new Set(claimed.map((c) => c.id)).size).toBe(100);
  // Every worker that got jobs completes them in one batch, all at once.
  const done = await Promise.all(
    answers
      .map((a, i) => [a, i] as const)
      .filter(([a]) => a.json.jobs.length > 0)
      .map(([a, i]) =>
      t.post(`${api}/completions`, {
        workerId: `w${i}`,
        results: (a.json.jobs as { id: string; lockToken: string }[]).map((j) => ({ id: j.id, lockToken: j.lockToken })),
      }),
    ),
  );
  expect(done.flatMap((d) => d.json.results).every((r: any) => r.ok)).toBe(true);
  const status = await t.client.execute(`select status, count(*) as n from jobs group by status`);
  expect(status.rows.map((r) => [r.status, Number(r.n)])).toEqual([['completed', 100]]);
  expect(t.errors).toEqual([]);
});

test('two libSQL clients on the same file claiming in parallel batches: no job claimed twice', async () => {
  const second = await openLibsql(t.url);
  extra.push(second);
  const N = 300;
  const bulk = await t.post(`${api}/queues/q/jobs`, { jobs: Array.from({ length: N }, (_, i) => ({ payload: i })) });
  expect(bulk.status).toBe(201);

  const now = t.clock.now();
  const claimLoop = async (db: typeof t.db, name: string) => {
    const mine: { id: number; lock_token: string | null }[] = [];
    for (;;) {
      const batch = await jobsClaimPending(db, { queue: 'q', workerId: name, limit: 7, now, defaults: t.config });
      if (batch.length === 0) return mine;
      mine.push(...batch);
    }
  };
  const [a, b, c, d] = await Promise.all([
    claimLoop(t.db, 'client1-a'),
    claimLoop(second.db, 'client2-a'),
    claimLoop(t.db, 'client1-b'),
    claimLoop(second.db, 'client2-b'),
  ]);
  const all = [...a, ...b, ...c, ...d];
  expect(all).toHaveLength(N);
  expect(new Set(all.map((j) => j.id)).size).toBe(N);
  // Both clients took part.
  expect(a.length + c.length).toBeGreaterThan(0);
  expect(b.length + d.length).toBeGreaterThan(0);

  const rows = await t.client.execute(`select count(*) as n, max(attempt_count) as maxAttempt from jobs where status = 'running'`);
  expect(Number(rows.rows[0]!.n)).toBe(N);
  expect(Number(rows.rows[0]!.maxAttempt)).toBe(1);
  const claimedEvents = await t.client.execute(`select count(*) as n from events where type = 'claimed'`);
  expect(Number(claimedEvents.rows[0]!.n)).toBe(N);

  // Completions from both clients at once: each job completes once, by its owner.
  const complete = (db: typeof t.db, name: string, jobs: typeof a) =>
    jobs.length === 0 ? Promise.resolve([]) : jobsCompleteIfOwned(db, { workerId: name, results: jobs.map((j) => ({ id: j.id, lockToken: j.lock_token! })), now });
  const outcomes = (await Promise.all([complete(t.db, 'client1-a', a), complete(second.db, 'client2-a', b), complete(t.db, 'client1-b', c), complete(second.db, 'client2-b', d)])).flat();
  expect(outcomes.every((o) => o.ok)).toBe(true);
  const completed = await t.client.execute(`select count(*) as n from jobs where status = 'completed'`);
  expect(Number(completed.rows[0]!.n)).toBe(N);
});

test('two apps on two clients racing for the same jobs over HTTP', async () => {
  const second = await openLibsql(t.url);
  extra.push(second);
  const app2 = appOn({ db: second.db, config: t.config, clock: t.clock, log: t.log });
  await t.post(`${api}/queues/q/jobs`, { jobs: Array.from({ length: 40 }, (_, i) => ({ payload: i })) });
  const claimVia = async (app: typeof t.app, workerId: string) => {
    const res = await app.request(`${api}/queues/q/claim`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ workerId, limit: 3 }),
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { jobs: { id: string }[] }).jobs;
  };
  const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => claimVia(i % 2 ? t.app : app2, `w${i}`)));
  const ids = answers.flat().map((j) => j.id);
  expect(ids).toHaveLength(40);
  expect(new Set(ids).size).toBe(40);
  expect(t.errors).toEqual([]);
});
