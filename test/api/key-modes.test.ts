/**
 * Key modes: an idempotency key that rewrites the key's job no worker has
 * claimed yet ('replace', 'debounce' with debounceMs) or makes at most one job
 * per window ('throttle' with throttleMs). A running job, or one back to
 * pending for a retry, is never rewritten; bulk enqueues with a key twice;
 * bad combinations are a 400 naming the field; two servers on one file.
 */
import { afterEach, beforeEach, expect, test } from 'vitest';
import { createApp } from '../../src/app.ts';
import { createClient } from '../../src/client/index.ts';
import { openLibsql } from '../../src/runtime/libsql.ts';
import { engineOn, setup, type TestBed } from '../support/helpers.ts';

const api = '/api/v1';
const T0 = Date.UTC(2030, 0, 1);
const at = (ms: number) => new Date(ms).toISOString();
let t: TestBed;
beforeEach(async () => {
  t = await setup();
});
afterEach(() => {
  expect(t.errors).toEqual([]);
  t.close();
});

const enqueue = (body: unknown, queue = 'q') => t.post(`${api}/queues/${queue}/jobs`, body);
const rows = async (query: string) => (await t.client.execute(query)).rows.map((r) => Object.fromEntries(Object.entries(r)));
const replacedCount = async (mode: string) => Number((await rows(`SELECT value FROM counters WHERE queue_name = 'q' AND name = 'enqueue_replaced' AND label = '${mode}'`))[0]?.value ?? 0);

test("'replace' rewrites the pending job's payload, run time and options, answers it replaced, and records the old and new run time", async () => {
  const first = await enqueue({ payload: { v: 1 }, idempotencyKey: 'sync', uniqueWhile: 'replace', delayMs: 60_000, priority: 1, maxAttempts: 3 });
  expect(first.status).toBe(201);
  expect(first.json.job).toMatchObject({ uniqueWhile: 'replace', replacedCount: 0, availableAt: at(T0 + 60_000) });
  t.clock.advance(1000);
  const second = await enqueue({ payload: { v: 2 }, idempotencyKey: 'sync', uniqueWhile: 'replace', runAt: at(T0 + 5000), priority: 7, maxAttempts: 9, timeoutMs: 1234, onLost: 'hold' });
  expect(second.status).toBe(200);
  expect(second.json).toEqual({ replaced: true, job: expect.objectContaining({ id: first.json.job.id, payload: { v: 2 }, availableAt: at(T0 + 5000), priority: 7, maxAttempts: 9, timeoutMs: 1234, onLost: 'hold', replacedCount: 1, createdAt: at(T0) }) });
  // Without a run time it runs now, as a plain enqueue would.
  const third = await enqueue({ payload: { v: 3 }, idempotencyKey: 'sync', uniqueWhile: 'replace' });
  expect(third.json.job).toMatchObject({ id: first.json.job.id, payload: { v: 3 }, availableAt: at(T0 + 1000), priority: 0, replacedCount: 2 });
  expect(await rows(`SELECT count(*) AS n FROM jobs`)).toEqual([{ n: 1 }]);
  const replaced = (await t.get(`${api}/jobs/${first.json.job.id}`)).json.events.filter((e: { type: string }) => e.type === 'replaced');
  expect(replaced.map((e: { reason: string; message: string }) => [e.reason, e.message])).toEqual([
    ['replace', `run time ${at(T0 + 60_000)} -> ${at(T0 + 5000)}`],
    ['replace', `run time ${at(T0 + 5000)} -> ${at(T0 + 1000)}`],
  ]);
  expect(await replacedCount('replace')).toBe(2);
  const metrics = (await t.get('/metrics')).text;
  expect(metrics).toContain('leasehold_enqueue_replaced_total{queue="q",mode="replace"} 2');
  expect(metrics).toContain('leasehold_enqueue_replaced_total{queue="q",mode="debounce"} 0');
  // The rewritten job is what a worker gets.
  const [claimed] = await t.claim('q', 'w');
  expect(claimed).toMatchObject({ id: first.json.job.id, payload: { v: 3 } });
});

test("'replace' never changes a claimed job: a running one, or one back to pending for a retry, stays as it was and the enqueue makes a new job beside it", async () => {
  const first = await enqueue({ payload: 'old', idempotencyKey: 'k', uniqueWhile: 'replace' });
  const [running] = await t.claim('q', 'w');
  expect(running!.id).toBe(first.json.job.id);
  const beside = await enqueue({ payload: 'new', idempotencyKey: 'k', uniqueWhile: 'replace' });
  expect(beside.status).toBe(201);
  expect(beside.json.job.id).not.toBe(first.json.job.id);
  expect((await t.get(`${api}/jobs/${first.json.job.id}`)).json.job).toMatchObject({ status: 'running', payload: 'old', replacedCount: 0 });
  // The next enqueue rewrites the new, unclaimed job.
  expect((await enqueue({ payload: 'newer', idempotencyKey: 'k', uniqueWhile: 'replace' })).json).toMatchObject({ replaced: true, job: { id: beside.json.job.id, payload: 'newer' } });
  // The running attempt fails and goes back to pending for a retry: beside the
  // unclaimed job of its key (it left that index for good when it was claimed).
  const failed = await t.post(`${api}/jobs/${running!.id}/fail`, { workerId: 'w', lockToken: running!.lockToken, error: 'boom', retryAfterMs: 0 });
  expect(failed.status).toBe(200);
  expect(failed.json.job).toMatchObject({ status: 'pending', payload: 'old' });
  expect((await enqueue({ payload: 'newest', idempotencyKey: 'k', uniqueWhile: 'replace' })).json.job.id).toBe(beside.json.job.id);
  expect((await t.get(`${api}/jobs/${first.json.job.id}`)).json.job).toMatchObject({ status: 'pending', payload: 'old', replacedCount: 0 });
});

test("'debounce' runs once, a quiet period after the last enqueue, with the last payload; a running job is never changed", async () => {
  const first = await enqueue({ payload: 1, idempotencyKey: 'reindex', uniqueWhile: 'debounce', debounceMs: 1000 });
  expect(first.status).toBe(201);
  expect(first.json.job.availableAt).toBe(at(T0 + 1000));
  t.clock.advance(600);
  const second = await enqueue({ payload: 2, idempotencyKey: 'reindex', uniqueWhile: 'debounce', debounceMs: 1000 });
  expect(second.json).toMatchObject({ replaced: true, job: { id: first.json.job.id, payload: 2, availableAt: at(T0 + 1600) } });
  t.clock.advance(600);
  // T0 + 1200: past the first quiet period, not the second.
  expect(await t.claim('q', 'w')).toEqual([]);
  t.clock.advance(400);
  const [claimed] = await t.claim('q', 'w');
  expect(claimed).toMatchObject({ id: first.json.job.id, payload: 2 });
  const during = await enqueue({ payload: 3, idempotencyKey: 'reindex', uniqueWhile: 'debounce', debounceMs: 1000 });
  expect(during.status).toBe(201);
  expect(during.json.job).toMatchObject({ payload: 3, availableAt: at(T0 + 2600) });
  expect((await t.get(`${api}/jobs/${first.json.job.id}`)).json.job).toMatchObject({ status: 'running', payload: 2, replacedCount: 1 });
  const events = (await t.get(`${api}/jobs/${first.json.job.id}`)).json.events.filter((e: { type: string }) => e.type === 'replaced');
  expect(events.map((e: { reason: string; message: string }) => [e.reason, e.message])).toEqual([['debounce', `run time ${at(T0 + 1000)} -> ${at(T0 + 1600)}`]]);
  expect(await replacedCount('debounce')).toBe(1);
});

test("'throttle' answers the key's job within the window of its creation, whatever its status, and makes a new one after it", async () => {
  const first = await enqueue({ payload: 1, idempotencyKey: 'digest', uniqueWhile: 'throttle', throttleMs: 1000 });
  expect(first.status).toBe(201);
  t.clock.advance(999);
  const within = await enqueue({ payload: 2, idempotencyKey: 'digest', uniqueWhile: 'throttle', throttleMs: 1000 });
  expect(within.status).toBe(200);
  expect(within.json).toMatchObject({ deduplicated: true, job: { id: first.json.job.id, payload: 1 } });
  t.clock.advance(1);
  // The window closed: a new job, though the first still waits.
  const after = await enqueue({ payload: 3, idempotencyKey: 'digest', uniqueWhile: 'throttle', throttleMs: 1000 });
  expect(after.status).toBe(201);
  expect(after.json.job.id).not.toBe(first.json.job.id);
  // A running job inside its window is answered, never changed but for its dedup counter.
  const claimed = await t.claim('q', 'w', { limit: 2 });
  expect(claimed.map((j) => j.id).sort()).toEqual([first.json.job.id, after.json.job.id].sort());
  const whileRunning = await enqueue({ payload: 4, idempotencyKey: 'digest', uniqueWhile: 'throttle', throttleMs: 1000 });
  expect(whileRunning.json).toMatchObject({ deduplicated: true, job: { id: after.json.job.id, status: 'running', payload: 3 } });
  // Each answer is counted as a deduplicated enqueue.
  expect(await rows(`SELECT value FROM counters WHERE queue_name = 'q' AND name = 'enqueue_deduplicated'`)).toEqual([{ value: 2 }]);
  expect(await rows(`SELECT count(*) AS n FROM jobs`)).toEqual([{ n: 2 }]);
});

test('a bulk naming a key twice: the later wins for replace and debounce, the first for throttle; each answer in input order', async () => {
  const res = await enqueue({
    jobs: [
      { payload: 'r1', idempotencyKey: 'r', uniqueWhile: 'replace' },
      { payload: 'plain' },
      { payload: 't1', idempotencyKey: 't', uniqueWhile: 'throttle', throttleMs: 60_000 },
      { payload: 'd1', idempotencyKey: 'd', uniqueWhile: 'debounce', debounceMs: 500 },
      { payload: 'r2', idempotencyKey: 'r', uniqueWhile: 'replace', priority: 5 },
      { payload: 't2', idempotencyKey: 't', uniqueWhile: 'throttle', throttleMs: 60_000 },
      { payload: 'd2', idempotencyKey: 'd', uniqueWhile: 'debounce', debounceMs: 2000 },
      { payload: 'a', idempotencyKey: 'r', uniqueWhile: 'active' },
    ],
  });
  expect(res.status).toBe(201);
  const answers = res.json.jobs as { id: string; deduplicated: boolean; replaced: boolean; priority: number; availableAt: string }[];
  expect(answers.map((a) => [a.deduplicated, a.replaced])).toEqual([
    [false, false], [false, false], [false, false], [false, false],
    [false, true], [true, false], [false, true], [false, false],
  ]);
  expect(answers[4]!.id).toBe(answers[0]!.id);
  expect(answers[4]!.priority).toBe(5);
  expect(answers[5]!.id).toBe(answers[2]!.id);
  expect(answers[6]).toMatchObject({ id: answers[3]!.id, availableAt: at(T0 + 2000) });
  // An 'active' job with the same key is a job of its own: the modes keep to their own jobs.
  expect(answers[7]!.id).not.toBe(answers[0]!.id);
  // (A bulk that mixes modes stores them family by family, so ids follow input order within a family only.)
  expect(await rows(`SELECT idempotency_key AS k, coalesce(key_mode, unique_while) AS mode, payload FROM jobs ORDER BY 1, 2`)).toEqual([
    { k: null, mode: 'retained', payload: '"plain"' },
    { k: 'd', mode: 'debounce', payload: '"d2"' },
    { k: 'r', mode: 'active', payload: '"a"' },
    { k: 'r', mode: 'replace', payload: '"r2"' },
    { k: 't', mode: 'throttle', payload: '"t1"' },
  ]);
  expect(await replacedCount('replace')).toBe(1);
  expect(await replacedCount('debounce')).toBe(1);
});

test('bad key-mode input is a 400 naming the field, and stores nothing', async () => {
  const cases: [unknown, string][] = [
    [{ payload: 1, uniqueWhile: 'replace' }, 'uniqueWhile'],
    [{ payload: 1, uniqueWhile: 'throttle', throttleMs: 10 }, 'uniqueWhile'],
    [{ payload: 1, idempotencyKey: 'k', uniqueWhile: 'debounce' }, 'debounceMs'],
    [{ payload: 1, idempotencyKey: 'k', uniqueWhile: 'throttle' }, 'throttleMs'],
    [{ payload: 1, idempotencyKey: 'k', debounceMs: 10 }, 'debounceMs'],
    [{ payload: 1, idempotencyKey: 'k', uniqueWhile: 'replace', debounceMs: 10 }, 'debounceMs'],
    [{ payload: 1, idempotencyKey: 'k', uniqueWhile: 'debounce', debounceMs: 10, throttleMs: 10 }, 'throttleMs'],
    [{ payload: 1, idempotencyKey: 'k', uniqueWhile: 'debounce', debounceMs: 0 }, 'debounceMs'],
    [{ payload: 1, idempotencyKey: 'k', uniqueWhile: 'debounce', debounceMs: 8 * 24 * 3600 * 1000 }, 'debounceMs'],
    [{ payload: 1, idempotencyKey: 'k', uniqueWhile: 'debounce', debounceMs: 1.5 }, 'debounceMs'],
    [{ payload: 1, idempotencyKey: 'k', uniqueWhile: 'throttle', throttleMs: -1 }, 'throttleMs'],
    [{ payload: 1, idempotencyKey: 'k', uniqueWhile: 'throttle', throttleMs: '100' }, 'throttleMs'],
    [{ payload: 1, idempotencyKey: 'k', uniqueWhile: 'debounce', debounceMs: 10, delayMs: 5 }, 'delayMs'],
    [{ payload: 1, idempotencyKey: 'k', uniqueWhile: 'debounce', debounceMs: 10, runAt: '2030-01-01T00:00:00Z' }, 'runAt'],
    [{ payload: 1, idempotencyKey: 'k', uniqueWhile: 'debounced', debounceMs: 10 }, 'uniqueWhile'],
    [{ jobs: [{ payload: 1, idempotencyKey: 'k', uniqueWhile: 'replace' }, { payload: 2, idempotencyKey: 'k', uniqueWhile: 'throttle' }] }, 'jobs[1].throttleMs'],
  ];
  for (const [body, field] of cases) {
    const res = await enqueue(body);
    expect(res.status, JSON.stringify(body)).toBe(400);
    expect(res.json.error.field, JSON.stringify(body)).toBe(field);
  }
  expect(await rows('SELECT count(*) AS n FROM jobs')).toEqual([{ n: 0 }]);
});

test('two servers on one database file enqueueing at once leave exactly one pending job per key, for each mode', async () => {
  const other = await openLibsql(t.url);
  const app2 = createApp({ engine: engineOn(other.db, { config: t.config, clock: t.clock, log: t.log }) });
  try {
    const on = async (app: typeof t.app, body: unknown) => {
      const res = await app.request(`${api}/queues/q/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(res.status).toBeLessThan(300);
      const answer = (await res.json()) as { job?: { id: string }; jobs?: { id: string }[] };
      return answer.job?.id ?? answer.jobs![0]!.id;
    };
    const modes = [
      { uniqueWhile: 'replace' },
      { uniqueWhile: 'debounce', debounceMs: 5000 },
      { uniqueWhile: 'throttle', throttleMs: 5000 },
    ];
    const sends = [];
    for (let i = 0; i < 20; i++) {
      for (const [m, mode] of modes.entries()) {
        sends.push(on(i % 2 ? app2 : t.app, { payload: i, idempotencyKey: `key-${m}`, ...mode }));
        sends.push(on(i % 2 ? t.app : app2, { jobs: [{ payload: i, idempotencyKey: `key-${m}`, ...mode }, { payload: -i, idempotencyKey: `key-${m}`, ...mode }] }));
      }
    }
    const ids = await Promise.all(sends);
    expect(ids).not.toContain(undefined);
    expect(await rows(`SELECT idempotency_key AS k, status, count(*) AS n FROM jobs GROUP BY 1, 2 ORDER BY 1`)).toEqual([
      { k: 'key-0', status: 'pending', n: 1 },
      { k: 'key-1', status: 'pending', n: 1 },
      { k: 'key-2', status: 'pending', n: 1 },
    ]);
    // Every rewrite was counted, on whichever server made it: one insert per key, the rest rewrites or answers.
    expect(await replacedCount('replace')).toBe(59);
    expect(await replacedCount('debounce')).toBe(59);
    expect(await rows(`SELECT value FROM counters WHERE queue_name = 'q' AND name = 'enqueue_deduplicated'`)).toEqual([{ value: 59 }]);
  } finally {
    other.close();
  }
});

test('the producer client passes the key modes and says what happened', async () => {
  const fetch = (input: RequestInfo | URL, init?: RequestInit) => t.app.request(new URL(String(input)).pathname, init);
  const c = createClient({ url: 'http://leasehold.test/', fetch: fetch as typeof globalThis.fetch });
  const first = await c.enqueue('q', { n: 1 }, { idempotencyKey: 'c', uniqueWhile: 'debounce', debounceMs: 100 });
  expect(first).toMatchObject({ deduplicated: false, replaced: false });
  const again = await c.enqueue('q', { n: 2 }, { idempotencyKey: 'c', uniqueWhile: 'debounce', debounceMs: 100 });
  expect(again).toMatchObject({ id: first.id, deduplicated: false, replaced: true });
  const throttled = await c.enqueue('q', { n: 3 }, { idempotencyKey: 'th', uniqueWhile: 'throttle', throttleMs: 100 });
  expect((await c.enqueue('q', { n: 4 }, { idempotencyKey: 'th', uniqueWhile: 'throttle', throttleMs: 100 }))).toMatchObject({ id: throttled.id, deduplicated: true, replaced: false });
  expect(await c.getJob(first.id)).toMatchObject({ payload: { n: 2 }, uniqueWhile: 'debounce', replacedCount: 1 });
});
