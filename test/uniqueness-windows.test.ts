/**
 * Uniqueness windows: an idempotency key deduplicates while a job enqueued
 * with it is kept (uniqueWhile 'retained', the default), or only while a job
 * with it is pending or running ('active'): once that job finished, the key
 * makes a new job. Single and batch enqueue, the producer client, and the
 * operator's retry, which never lets two active jobs share a key.
 */
import { afterEach, beforeEach, expect, test } from 'vitest';
import { createClient } from '../src/client/index.ts';
import { setup, type TestBed } from './helpers.ts';

const api = '/api/v1';
let t: TestBed;
beforeEach(async () => {
  t = await setup();
});
afterEach(() => {
  expect(t.errors).toEqual([]);
  t.close();
});

const enqueue = (queue: string, body: unknown) => t.post(`${api}/queues/${queue}/jobs`, body);
async function finish(queue: string) {
  const [job] = await t.claim(queue, 'w');
  expect((await t.post(`${api}/jobs/${job!.id}/complete`, { workerId: 'w', lockToken: job!.lockToken })).status).toBe(200);
  return job!;
}

test("'active': a duplicate while pending or running answers that job; once it finished the key makes a new one", async () => {
  const first = await enqueue('q', { payload: 1, idempotencyKey: 'sync-42', uniqueWhile: 'active' });
  expect(first.status).toBe(201);
  expect(first.json.job).toMatchObject({ idempotencyKey: 'sync-42', uniqueWhile: 'active' });
  const whilePending = await enqueue('q', { payload: 2, idempotencyKey: 'sync-42', uniqueWhile: 'active' });
  expect(whilePending.status).toBe(200);
  expect(whilePending.json).toMatchObject({ deduplicated: true, job: { id: first.json.job.id, payload: 1 } });
  const [claimed] = await t.claim('q', 'w');
  const whileRunning = await enqueue('q', { payload: 3, idempotencyKey: 'sync-42', uniqueWhile: 'active' });
  expect(whileRunning.json).toMatchObject({ deduplicated: true, job: { id: first.json.job.id, status: 'running' } });
  await t.post(`${api}/jobs/${claimed!.id}/complete`, { workerId: 'w', lockToken: claimed!.lockToken });

  const second = await enqueue('q', { payload: 4, idempotencyKey: 'sync-42', uniqueWhile: 'active' });
  expect(second.status).toBe(201);
  expect(second.json.job.id).not.toBe(first.json.job.id);
  expect((await enqueue('q', { payload: 5, idempotencyKey: 'sync-42', uniqueWhile: 'active' })).json.job.id).toBe(second.json.job.id);
  // A cancelled or failed job has finished too.
  expect((await t.post(`${api}/jobs/${second.json.job.id}/cancel`, {})).status).toBe(200);
  const third = await enqueue('q', { payload: 6, idempotencyKey: 'sync-42', uniqueWhile: 'active' });
  expect(third.status).toBe(201);
  // Keys are per queue; the finished jobs are all kept, each findable by the key.
  expect((await enqueue('other', { payload: 7, idempotencyKey: 'sync-42', uniqueWhile: 'active' })).status).toBe(201);
  const listed = await t.get(`${api}/jobs?queue=q&idempotencyKey=sync-42&order=asc`);
  expect(listed.json.jobs.map((j: { status: string }) => j.status)).toEqual(['completed', 'cancelled', 'pending']);
});

test("'retained' (the default) keeps answering the finished job, as before", async () => {
  const first = await enqueue('q', { payload: 1, idempotencyKey: 'welcome-ada' });
  expect(first.json.job.uniqueWhile).toBe('retained');
  await finish('q');
  const again = await enqueue('q', { payload: 2, idempotencyKey: 'welcome-ada', uniqueWhile: 'retained' });
  expect(again.status).toBe(200);
  expect(again.json).toMatchObject({ deduplicated: true, job: { id: first.json.job.id, status: 'completed' } });
});

test('the two modes side by side: an active job holds the key for both; a finished one only for its own mode', async () => {
  const retained = await enqueue('q', { payload: 'r', idempotencyKey: 'k' });
  await finish('q');
  // A finished 'retained' job does not stop an 'active' enqueue...
  const active = await enqueue('q', { payload: 'a', idempotencyKey: 'k', uniqueWhile: 'active' });
  expect(active.status).toBe(201);
  // ...and while that one is pending, a 'retained' enqueue gets the finished retained job (its own mode's window).
  expect((await enqueue('q', { payload: 'r2', idempotencyKey: 'k' })).json.job.id).toBe(retained.json.job.id);
  // A pending 'retained' job holds the key against 'active' enqueues.
  const held = await enqueue('q2', { payload: 'r', idempotencyKey: 'k' });
  const dup = await enqueue('q2', { payload: 'a', idempotencyKey: 'k', uniqueWhile: 'active' });
  expect(dup.json).toMatchObject({ deduplicated: true, job: { id: held.json.job.id } });
});

test('batch enqueue: duplicates inside the batch and against active jobs collapse; finished ones do not', async () => {
  const batch = (payloads: number[]) => enqueue('q', { jobs: payloads.map((p) => ({ payload: p, idempotencyKey: `k${p % 2}`, uniqueWhile: 'active' })) });
  const first = await batch([0, 1, 2, 3]);
  expect(first.status).toBe(201);
  expect(first.json.jobs.map((j: { deduplicated: boolean }) => j.deduplicated)).toEqual([false, false, true, true]);
  expect(first.json.jobs[2].id).toBe(first.json.jobs[0].id);
  await finish('q'); // k0's job (claimed first: lowest id)
  const second = await batch([0, 1]);
  expect(second.json.jobs[0]).toMatchObject({ deduplicated: false });
  expect(second.json.jobs[0].id).not.toBe(first.json.jobs[0].id);
  expect(second.json.jobs[1]).toMatchObject({ deduplicated: true, id: first.json.jobs[1].id });
  const count = await t.client.execute(`SELECT count(*) AS n FROM jobs`);
  expect(Number(count.rows[0]!.n)).toBe(3);
});

test('a retry never makes two active jobs with one key: 409 naming the holder, nothing changed; bulk skips it', async () => {
  const old = await enqueue('q', { payload: 1, idempotencyKey: 'k', uniqueWhile: 'active' });
  await t.post(`${api}/jobs/${old.json.job.id}/cancel`, {});
  const holder = await enqueue('q', { payload: 2, idempotencyKey: 'k', uniqueWhile: 'active' });
  const refused = await t.post(`${api}/jobs/${old.json.job.id}/retry`, {});
  expect(refused.status).toBe(409);
  expect(refused.json.error).toMatchObject({ code: 'conflict', keyHeldBy: holder.json.job.id });
  expect(refused.json.error.message).toContain(`shares its idempotency key with job ${holder.json.job.id}`);
  expect((await t.get(`${api}/jobs/${old.json.job.id}`)).json.job.status).toBe('cancelled');
  const bulk = await t.post(`${api}/queues/q/bulk`, { action: 'retry', status: 'cancelled', reason: 'again' });
  expect(bulk.json).toMatchObject({ changed: 0 });
  expect((await t.get(`${api}/jobs/${old.json.job.id}`)).json.job.status).toBe('cancelled');
  // Two cancelled jobs sharing a key: a bulk retry brings back one (the newest), never both.
  await t.post(`${api}/jobs/${holder.json.job.id}/cancel`, {});
  const both = await t.post(`${api}/queues/q/bulk`, { action: 'retry', status: 'cancelled', reason: 'again' });
  expect(both.json).toMatchObject({ changed: 1, ids: [holder.json.job.id] });
  const active = await t.client.execute(`SELECT id FROM jobs WHERE status = 'pending'`);
  expect(active.rows.map((r) => String(r.id))).toEqual([holder.json.job.id]);
  // Once the holder finished, the old job can be retried.
  await finish('q');
  expect((await t.post(`${api}/jobs/${old.json.job.id}/retry`, {})).status).toBe(200);
});

test('bad uniqueWhile is a 400 naming it, and stores nothing', async () => {
  for (const [body, field] of [
    [{ payload: 1, idempotencyKey: 'k', uniqueWhile: 'forever' }, 'uniqueWhile'],
    [{ payload: 1, idempotencyKey: 'k', uniqueWhile: 1 }, 'uniqueWhile'],
    [{ payload: 1, uniqueWhile: 'active' }, 'uniqueWhile'],
    [{ jobs: [{ payload: 1 }, { payload: 2, uniqueWhile: 'active' }] }, 'jobs[1].uniqueWhile'],
  ] as const) {
    const res = await enqueue('q', body);
    expect(res.status, JSON.stringify(body)).toBe(400);
    expect(res.json.error.field).toBe(field);
  }
  const count = await t.client.execute(`SELECT count(*) AS n FROM jobs`);
  expect(Number(count.rows[0]!.n)).toBe(0);
});

test('the producer client passes uniqueWhile', async () => {
  const fetch = (input: RequestInfo | URL, init?: RequestInit) => t.app.request(new URL(String(input)).pathname, init);
  const c = createClient({ url: 'http://leasehold.test/', fetch: fetch as typeof globalThis.fetch });
  const first = await c.enqueue('q', { n: 1 }, { idempotencyKey: 'c', uniqueWhile: 'active' });
  expect((await c.enqueue('q', { n: 2 }, { idempotencyKey: 'c', uniqueWhile: 'active' })).deduplicated).toBe(true);
  await finish('q');
  const next = await c.enqueue('q', { n: 3 }, { idempotencyKey: 'c', uniqueWhile: 'active' });
  expect(next).toMatchObject({ deduplicated: false });
  expect(next.id).not.toBe(first.id);
  expect((await c.getJob(next.id)).uniqueWhile).toBe('active');
});
