/**
 * A claim that waits on the server for work (waitMs): woken by an enqueue on
 * the same server, re-polling for work from another server or newly due,
 * ending early when the client goes away or the server shuts down, and
 * refusing a wait it cannot honour.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { createApp } from '../../src/app.ts';
import { databaseClock } from '../../src/core/clock.ts';
import { defaultConfig } from '../../src/core/config.ts';
import { silentLogger } from '../../src/core/log.ts';
import { openLibsql } from '../../src/runtime/libsql.ts';
import { startServer } from '../../src/runtime/node.ts';
import { openLeasehold } from '../../src/embedded/leasehold.ts';
import { setup, type TestBed, appOn } from '../support/helpers.ts';
import { until } from '../support/until.ts';
import { createWorker, httpTransport } from '../../src/worker/index.ts';
import { dbTransport } from '../../src/embedded/db-transport.ts';

const beds: TestBed[] = [];
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
  for (const t of beds.splice(0)) t.close();
});

async function bed() {
  const t = await setup({}, { realClock: databaseClock });
  beds.push(t);
  return t;
}

const claimBody = (extra: Record<string, unknown>) => ({ workerId: 'w1', ...extra });

async function pendingCount(t: TestBed) {
  const r = await t.client.execute("SELECT COUNT(*) AS n FROM jobs WHERE status = 'pending'");
  return Number(r.rows[0]!.n);
}

describe('claim with waitMs', () => {
  test('without waitMs an empty queue answers at once, as before', async () => {
    const t = await bed();
    const started = Date.now();
    const res = await t.post('/api/v1/queues/q/claim', claimBody({}));
    expect(res.status).toBe(200);
    expect(res.json.jobs).toEqual([]);
    expect(Date.now() - started).toBeLessThan(200);
  });

  // The job's start is what an enqueue is for: the woken claim is answered
  // first, and the producer's answer follows on the next turn.
  test.each([
    ['a single enqueue', { payload: { n: 1 } }],
    ['a bulk enqueue', { jobs: [{ payload: { n: 1 } }, { payload: { n: 2 } }] }],
  ])('%s that wakes a waiting claim answers after the claim', async (_, body) => {
    const t = await bed();
    const answered: string[] = [];
    const claiming = t.post('/api/v1/queues/q/claim', claimBody({ waitMs: 10_000 })).then((res) => (answered.push('claim'), res));
    await until('the claim to wait', () => t.engine.claimWaiters.waiting === 1);
    const enqueue = await t.post('/api/v1/queues/q/jobs', body).then((res) => (answered.push('enqueue'), res));
    const claim = await claiming;
    expect(answered).toEqual(['claim', 'enqueue']);
    expect(enqueue.status).toBe(201);
    expect(claim.json.jobs).toHaveLength(1);
  });

  test('an enqueue on the same server wakes the waiting claim, well before the re-poll', async () => {
    const t = await bed();
    const claiming = t.post('/api/v1/queues/q/claim', claimBody({ waitMs: 10_000 }));
    await until('the claim to wait', () => t.engine.claimWaiters.waiting === 1);
    const enqueuedAt = Date.now();
    const job = await t.enqueue('q', { payload: { n: 1 } });
    const res = await claiming;
    expect(res.status).toBe(200);
    expect(res.json.jobs.map((j: { id: string }) => j.id)).toEqual([job.id]);
    // The wake-up, not the 250 ms re-poll, brought it (generous for a loaded machine).
    expect(Date.now() - enqueuedAt).toBeLessThan(200);
    expect(t.engine.claimWaiters.waiting).toBe(0);
  });

  test('an enqueue to another queue does not answer the wait', async () => {
    const t = await bed();
    const claiming = t.post('/api/v1/queues/q/claim', claimBody({ waitMs: 600 }));
    await until('the claim to wait', () => t.engine.claimWaiters.waiting === 1);
    await t.enqueue('other');
    const res = await claiming;
    expect(res.json.jobs).toEqual([]);
    expect(await pendingCount(t)).toBe(1);
  });

  test('work enqueued by another server on the same database is found by the re-poll', async () => {
    const t = await bed();
    const other = await openLibsql(t.url);
    cleanups.push(() => other.close());
    const otherApp = appOn({ db: other.db, config: t.config, clock: databaseClock, log: silentLogger });
    const claiming = t.post('/api/v1/queues/q/claim', claimBody({ waitMs: 10_000 }));
    await until('the claim to wait', () => t.engine.claimWaiters.waiting === 1);
    const res0 = await otherApp.request('/api/v1/queues/q/jobs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ payload: {} }) });
    expect(res0.status).toBe(201);
    const id = ((await res0.json()) as { job: { id: string } }).job.id;
    const res = await claiming;
    expect(res.json.jobs.map((j: { id: string }) => j.id)).toEqual([id]);
  });

  test('a delayed job that becomes due while the claim waits is claimed', async () => {
    const t = await bed();
    // From before the enqueue: the job is due 400 ms after it is stored, which a loaded machine may answer late.
    const started = Date.now();
    const job = await t.enqueue('q', { payload: {}, delayMs: 400 });
    const res = await t.post('/api/v1/queues/q/claim', claimBody({ waitMs: 10_000 }));
    expect(res.json.jobs.map((j: { id: string }) => j.id)).toEqual([job.id]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
  });

  test('with nothing to claim, the claim answers an empty list once waitMs has passed', async () => {
    const t = await bed();
    const started = Date.now();
    const res = await t.post('/api/v1/queues/q/claim', claimBody({ waitMs: 400 }));
    expect(res.status).toBe(200);
    expect(res.json.jobs).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(390);
    expect(t.engine.claimWaiters.waiting).toBe(0);
  });

  test('a client that goes away stops waiting and is never claimed for', async () => {
    const t = await bed();
    const abort = new AbortController();
    const claiming = t.app.request('/api/v1/queues/q/claim', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(claimBody({ waitMs: 10_000 })),
      signal: abort.signal,
    });
    await until('the claim to wait', () => t.engine.claimWaiters.waiting === 1);
    abort.abort();
    await until('the claim to stop waiting', () => t.engine.claimWaiters.waiting === 0);
    await Promise.resolve(claiming).catch(() => undefined);
    await t.enqueue('q');
    expect(await pendingCount(t)).toBe(1);
  });

  test('the embedded API wakes a claim waiting over HTTP on the same database handle', async () => {
    const lh = await openLeasehold({ databaseUrl: `file:${(await bed()).dir}/embedded.db` });
    cleanups.push(() => lh.close());
    const app = createApp({ engine: lh.engine });
    const claiming = app.request('/api/v1/queues/q/claim', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(claimBody({ waitMs: 10_000 })) });
    await until('the claim to wait', () => lh.engine.claimWaiters.waiting === 1);
    const enqueuedAt = Date.now();
    const { job } = await lh.enqueue('q', { n: 1 });
    const res = await claiming;
    expect(((await res.json()) as { jobs: { id: string }[] }).jobs.map((j) => j.id)).toEqual([job.id]);
    expect(Date.now() - enqueuedAt).toBeLessThan(200);
  });

  test('server shutdown answers waiting claims at once instead of holding the close', async () => {
    const t = await bed();
    const server = await startServer(defaultConfig({ databaseUrl: t.url, port: 0 }), { reaper: false, log: silentLogger });
    const claiming = fetch(`${server.url}/api/v1/queues/q/claim`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(claimBody({ waitMs: 20_000 })) });
    // The request is parked once the server has had a moment to read it.
    await new Promise((r) => setTimeout(r, 300));
    const closing = Date.now();
    const [res] = await Promise.all([claiming, server.close()]);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { jobs: unknown[] }).jobs).toEqual([]);
    expect(Date.now() - closing).toBeLessThan(5_000);
  });

  test.each([
    [-1, 'waitMs'],
    [30_001, 'waitMs'],
    [1.5, 'waitMs'],
    ['100', 'waitMs'],
  ])('waitMs %j is refused with a 400 naming the field, and claims nothing', async (waitMs, field) => {
    const t = await bed();
    await t.enqueue('q');
    const res = await t.post('/api/v1/queues/q/claim', claimBody({ waitMs }));
    expect(res.status).toBe(400);
    expect(res.text).toContain(field);
    expect(await pendingCount(t)).toBe(1);
  });
});

describe('the worker SDK waits on the server when idle', () => {
  const quiet = { info() {}, warn() {}, error() {} };
  for (const kind of ['http', 'in-process'] as const) {
    test(`${kind}: a job enqueued to a worker idle for a while starts within milliseconds, and close() does not wait out the claim`, async () => {
      const t = await bed();
      let transport: ReturnType<typeof httpTransport>;
      if (kind === 'http') {
        const server = await startServer(defaultConfig({ databaseUrl: t.url, port: 0 }), { reaper: false, log: silentLogger });
        cleanups.push(() => server.close());
        transport = httpTransport({ url: server.url });
      } else {
        transport = dbTransport(t.engine);
      }
      const started = new Map<string, number>();
      // SDK defaults, apart from the process signals a test must not take over.
      const worker = createWorker({ transport, queue: 'q', handleSignals: false, logger: quiet, handler: (ctx) => void started.set(ctx.job.id, Date.now()) }).start();
      // Idle long enough that a polling worker would be backing off (500 ms, then 1 s, 2 s...).
      await new Promise((r) => setTimeout(r, 1_600));
      const latencies: number[] = [];
      for (let i = 0; i < 3; i++) {
        const enqueuedAt = Date.now();
        const job = await t.enqueue('q');
        await until('the job to start', () => started.has(job.id));
        latencies.push(started.get(job.id)! - enqueuedAt);
        await new Promise((r) => setTimeout(r, 700));
      }
      // Generous for a loaded machine; a polling worker here takes 1-2 s.
      expect(Math.min(...latencies)).toBeLessThan(150);
      const closing = Date.now();
      await worker.close({ drainTimeoutMs: 1_000 });
      expect(Date.now() - closing).toBeLessThan(1_500);
    });
  }
});
