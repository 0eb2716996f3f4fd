/**
 * leasehold/client against the real app (app.request as its fetch, a fresh
 * database per test): enqueue and its coalescing, per-caller errors, typed
 * errors, getJob / waitForJob with the worker token, cancel and retry.
 */
import { afterEach, beforeEach, expect, test } from 'vitest';
import { createClient, LeaseholdApiError, LeaseholdNetworkError, LeaseholdTimeoutError, type ClientOptions } from '../../src/client/index.ts';
import { setup, type TestBed } from '../support/helpers.ts';

const ADMIN = 'a'.repeat(24);
const WORKER = 'w'.repeat(24);

let t: TestBed;
let requests: { method: string; path: string; body: unknown }[];
beforeEach(async () => {
  t = await setup({ adminToken: ADMIN, workerToken: WORKER });
  requests = [];
});
afterEach(() => {
  expect(t.errors).toEqual([]);
  t.close();
});

function client(token: string | undefined = WORKER, extra: Partial<ClientOptions> = {}) {
  const fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = new URL(String(input));
    requests.push({ method: init?.method ?? 'GET', path: url.pathname, body: init?.body ? JSON.parse(String(init.body)) : undefined });
    return t.app.request(url.pathname + url.search, init);
  };
  return createClient({ url: 'http://leasehold.test/', token, fetch: fetch as typeof globalThis.fetch, ...extra });
}

test('enqueue answers the new job; a duplicate idempotency key answers the existing one', async () => {
  const c = client();
  const first = await c.enqueue('mail', { to: 'ada' }, { idempotencyKey: 'k1', priority: 5, maxAttempts: 3 });
  expect(first).toMatchObject({ queue: 'mail', status: 'pending', priority: 5, idempotencyKey: 'k1', deduplicated: false });
  const again = await c.enqueue('mail', { to: 'someone else' }, { idempotencyKey: 'k1' });
  expect(again).toMatchObject({ id: first.id, deduplicated: true });
  const job = await c.getJob(first.id);
  expect(job).toMatchObject({ id: first.id, payload: { to: 'ada' }, maxAttempts: 3 });
});

test("enqueue with onLost 'hold': the job keeps its own policy; a bad one is refused naming the field", async () => {
  const c = client();
  const held = await c.enqueue('charges', { amount: 5 }, { onLost: 'hold' });
  const plain = await c.enqueue('charges', { amount: 6 });
  expect((await c.getJob(held.id)).onLost).toBe('hold');
  expect((await c.getJob(plain.id)).onLost).toBeNull();
  await expect(c.enqueue('charges', 1, { onLost: 'later' as 'hold' })).rejects.toMatchObject({ code: 'invalid_request', field: 'onLost' });
});

test('enqueues made together go out as one bulk request per queue, each caller getting its own job', async () => {
  const c = client();
  const [a, b, x, d] = await Promise.all([c.enqueue('q', 1), c.enqueue('q', 2), c.enqueue('other', 3), c.enqueue('q', 4, { runAt: new Date(Date.UTC(2040, 0, 1)) })]);
  expect(requests.map((r) => r.path)).toEqual(['/api/v1/queues/q/jobs', '/api/v1/queues/other/jobs']);
  expect((requests[0]!.body as { jobs: unknown[] }).jobs).toEqual([{ payload: 1 }, { payload: 2 }, { payload: 4, runAt: '2040-01-01T00:00:00.000Z' }]);
  expect(new Set([a.id, b.id, x.id, d.id]).size).toBe(4);
  expect(d.availableAt).toBe('2040-01-01T00:00:00.000Z');
  expect((await c.getJob(b.id)).payload).toBe(2);
  expect((await c.getJob(x.id)).queue).toBe('other');
});

test('in a coalesced bulk, a bad item rejects only its own caller, with its own field; the others are enqueued', async () => {
  const c = client();
  const results = await Promise.allSettled([c.enqueue('q', 'ok1'), c.enqueue('q', 'bad', { priority: 5000 }), c.enqueue('q', 'ok2'), c.enqueue('q', 'bad2', { maxAttempts: 0 })]);
  expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'rejected']);
  const bad = (results[1] as PromiseRejectedResult).reason;
  expect(bad).toBeInstanceOf(LeaseholdApiError);
  expect(bad).toMatchObject({ status: 400, code: 'invalid_request', field: 'priority' });
  expect((results[3] as PromiseRejectedResult).reason).toMatchObject({ code: 'invalid_request', field: 'maxAttempts' });
  const ok = results.filter((r) => r.status === 'fulfilled').map((r) => (r as PromiseFulfilledResult<{ id: string }>).value.id);
  expect(await Promise.all(ok.map(async (id) => (await c.getJob(id)).payload))).toEqual(['ok1', 'ok2']);
});

test('enqueueMany sends one bulk and answers one result per item, in order', async () => {
  const c = client();
  const out = await c.enqueueMany('q', [{ payload: 'a' }, { payload: 'b', idempotencyKey: 'kb' }, { payload: 'c', idempotencyKey: 'kb' }]);
  expect(requests).toHaveLength(1);
  expect(out.map((e) => e.deduplicated)).toEqual([false, false, true]);
  expect(out[2]!.id).toBe(out[1]!.id);
  await expect(c.enqueueMany('q', [{ payload: 1 }, { payload: 2, delayMs: -1 }])).rejects.toMatchObject({ code: 'invalid_request', field: 'jobs[1].delayMs' });
});

test('errors are typed: the API code, message and field; unauthorized; not found; unreachable', async () => {
  await expect(client('wrong-token-wrong-token').enqueue('q', 1)).rejects.toMatchObject({ name: 'LeaseholdApiError', status: 401, code: 'unauthorized', field: 'authorization' });
  await expect(client().getJob('999')).rejects.toMatchObject({ status: 404, code: 'not_found' });
  await expect(client().enqueue('bad queue!', 1)).rejects.toMatchObject({ code: 'invalid_request', field: 'queue' });
  const down = createClient({ url: 'http://127.0.0.1:9', fetch: async () => Promise.reject(new TypeError('fetch failed')) });
  await expect(down.enqueue('q', 1)).rejects.toBeInstanceOf(LeaseholdNetworkError);
});

test('a producer holding only the worker token reads its job back with waitForJob once a worker finishes it', async () => {
  const c = client(WORKER);
  const { id } = await c.enqueue('q', { n: 2 });
  const waiting = c.waitForJob(id, { pollMs: 5, maxPollMs: 20 });
  const claim = await t.post('/api/v1/queues/q/claim', { workerId: 'w1' }, { authorization: `Bearer ${WORKER}` });
  const [job] = claim.json.jobs;
  await t.post(`/api/v1/jobs/${job.id}/complete`, { workerId: 'w1', lockToken: job.lockToken, result: { doubled: 4 } }, { authorization: `Bearer ${WORKER}` });
  await expect(waiting).resolves.toMatchObject({ id, status: 'completed', result: { doubled: 4 } });
});

test('waitForJob gives up after timeoutMs, or when its signal aborts', async () => {
  const c = client();
  const { id } = await c.enqueue('q', 1);
  await expect(c.waitForJob(id, { timeoutMs: 30, pollMs: 5 })).rejects.toBeInstanceOf(LeaseholdTimeoutError);
  const controller = new AbortController();
  const waiting = c.waitForJob(id, { signal: controller.signal, pollMs: 5 });
  controller.abort(new Error('gave up'));
  await expect(waiting).rejects.toThrow('gave up');
});

test('cancel and retry take the admin token; the worker token is refused with 403', async () => {
  const { id } = await client().enqueue('q', 1);
  await expect(client(WORKER).cancel(id)).rejects.toMatchObject({ status: 403, code: 'forbidden' });
  const admin = client(ADMIN);
  expect(await admin.cancel(id, { reason: 'not needed' })).toMatchObject({ id, status: 'cancelled' });
  await expect(admin.cancel(id)).rejects.toMatchObject({ status: 409, code: 'conflict' });
  expect(await admin.retry(id)).toMatchObject({ id, status: 'pending' });
});
