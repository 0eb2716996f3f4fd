/**
 * The worker SDK, over both transports (in-process and HTTP on a real port):
 * outcomes, heartbeats apart from the handler, AbortSignal on lease loss and
 * deadline, checkpoints, once(), graceful shutdown, blocked event loop.
 */
import { silentLogger } from '../src/core/log.ts';
import { afterEach, describe, expect, test } from 'vitest';
import { databaseClock } from '../src/core/clock.ts';
import { defaultConfig, type Config } from '../src/core/config.ts';
import { startServer, type RunningServer } from '../src/runtime/node.ts';
import { dbTransport } from '../src/embedded/db-transport.ts';
import { createWorker, httpTransport, NonRetryableError, RetryAfter, type Transport, type Worker, type WorkerOptions } from '../src/worker/index.ts';
import { JobAbortedError } from '../src/worker/errors.ts';
import { setup, type TestBed } from './helpers.ts';
import { until } from './until.ts';

// Short leases with enough slack (grace, deferral) that a loaded CI machine does not lose one.
const FAST: Partial<Config> = { leaseMs: 1_500, heartbeatMs: 300, graceMs: 600, workerAliveMs: 900, maxReapDeferMs: 600, backoffBaseMs: 50, backoffMaxMs: 100 };

interface Bed {
  t: TestBed;
  transport: Transport;
  server?: RunningServer;
}

const beds: Bed[] = [];
const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.map((w) => w.close({ drainTimeoutMs: 0 })));
  workers.length = 0;
  for (const b of beds) {
    await b.server?.close();
    b.t.close();
  }
  beds.length = 0;
});

const quiet = { info() {}, warn() {}, error() {} };

async function bed(kind: 'in-process' | 'http', overrides: Partial<Config> = {}): Promise<Bed> {
  const t = await setup({ ...FAST, ...overrides }, { realClock: databaseClock });
  let b: Bed;
  if (kind === 'in-process') {
    b = { t, transport: dbTransport({ db: t.db, config: t.config, clock: databaseClock }) };
  } else {
    const server = await startServer(defaultConfig({ ...FAST, ...overrides, databaseUrl: t.url, port: 0 }), { reaper: false, log: silentLogger });
    b = { t, transport: httpTransport({ url: server.url }), server };
  }
  beds.push(b);
  return b;
}

function worker(b: Bed, options: Partial<WorkerOptions> & Pick<WorkerOptions, 'handler'>) {
  const w = createWorker({ transport: b.transport, queue: 'q', pollMs: 20, maxPollMs: 100, handleSignals: false, logger: quiet, ...options });
  workers.push(w);
  return w.start();
}

/** Enqueues with the real clock (the worker runs on real time). */
async function enqueue(b: Bed, job: Record<string, unknown> = { payload: {} }) {
  const res = await b.t.app.request('/api/v1/queues/q/jobs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(job) });
  return ((await res.json()) as { job: { id: string } }).job.id;
}

/** Job state through the store, on the real clock. */
async function jobState(b: Bed, id: string) {
  const res = await b.t.client.execute({ sql: 'SELECT status, attempt_count, errored_attempts, lost_attempts, result, last_error, checkpoint FROM jobs WHERE id = ?', args: [Number(id)] });
  return res.rows[0] as unknown as { status: string; attempt_count: number; errored_attempts: number; lost_attempts: number; result: string | null; last_error: string | null; checkpoint: string | null };
}


describe.each(['in-process', 'http'] as const)('worker over %s', (kind) => {
  test('a return value completes the job with that result; many jobs run at the set concurrency', async () => {
    const b = await bed(kind);
    const ids = await Promise.all(Array.from({ length: 20 }, (_, i) => enqueue(b, { payload: { i } })));
    let running = 0;
    let peak = 0;
    const w = worker(b, {
      concurrency: 4,
      async handler(ctx) {
        running++;
        peak = Math.max(peak, running);
        await new Promise((r) => setTimeout(r, 10));
        running--;
        return { doubled: (ctx.job.payload as { i: number }).i * 2 };
      },
    });
    await until('all completed', () => w.stats.completed === 20);
    expect(peak).toBeLessThanOrEqual(4);
    for (const [i, id] of ids.entries()) expect(JSON.parse((await jobState(b, id)).result!)).toEqual({ doubled: i * 2 });
  });

  test('a thrown error retries with backoff; NonRetryableError fails for good; RetryAfter asks for its delay', async () => {
    const b = await bed(kind);
    const flaky = await enqueue(b, { payload: { kind: 'flaky' } });
    const fatal = await enqueue(b, { payload: { kind: 'fatal' } });
    const later = await enqueue(b, { payload: { kind: 'later' } });
    const w = worker(b, {
      concurrency: 3,
      async handler(ctx) {
        const kind = (ctx.job.payload as { kind: string }).kind;
        if (kind === 'flaky' && ctx.job.attempt === 1) throw new Error('boom');
        if (kind === 'fatal') throw new NonRetryableError('bad input');
        if (kind === 'later' && ctx.job.attempt === 1) throw new RetryAfter(60_000, 'rate limited');
        return 'ok';
      },
    });
    await until('flaky done', async () => (await jobState(b, flaky)).status === 'completed');
    await until('fatal failed', async () => (await jobState(b, fatal)).status === 'failed');
    expect(await jobState(b, flaky)).toMatchObject({ attempt_count: 2, errored_attempts: 1 });
    expect((await jobState(b, fatal)).last_error).toContain('bad input');
    const row = (await b.t.client.execute({ sql: 'SELECT status, available_at - updated_at AS delay FROM jobs WHERE id = ?', args: [Number(later)] })).rows[0]!;
    expect(row.status).toBe('pending');
    expect(Number(row.delay)).toBe(60_000);
    expect(w.stats.failed).toBe(3);
  });

  test('the heartbeat loop keeps the lease of a job that runs several times longer than the lease', async () => {
    const b = await bed(kind);
    const id = await enqueue(b);
    const w = worker(b, { handler: () => new Promise((r) => setTimeout(() => r('slow but alive'), 4_600)) });
    // The reaper runs all along: a healthy lease must never be taken.
    const reaps: number[] = [];
    await until('completed', async () => {
      const report = await (await b.t.app.request('/api/v1/reaper/run', { method: 'POST', headers: { 'content-type': 'application/json' } })).json() as { requeued: unknown[] };
      reaps.push(report.requeued.length);
      return (await jobState(b, id)).status === 'completed';
    });
    expect(reaps.every((n) => n === 0)).toBe(true);
    expect(await jobState(b, id)).toMatchObject({ attempt_count: 1, lost_attempts: 0 });
    expect(w.stats.leaseLost).toBe(0);
  });

  test('a refused heartbeat aborts the handler with lease_lost, and its late completion is abandoned', async () => {
    const b = await bed(kind);
    const id = await enqueue(b);
    let reason: unknown;
    const abandoned: string[] = [];
    const w = worker(b, {
      handler: (ctx) =>
        new Promise((resolve) => {
          ctx.signal.addEventListener('abort', () => {
            reason = ctx.signal.reason;
            // A handler that ignores the signal and tries to finish anyway.
            setTimeout(() => resolve('too late'), 50);
          });
        }),
    });
    w.on('abandoned', (e) => abandoned.push(e.job.id));
    await until('running', async () => (await jobState(b, id)).status === 'running');
    // An operator takes the job away: the worker's token is now stale.
    await b.t.app.request(`/api/v1/jobs/${id}/requeue`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ force: true, reason: 'test' }) });
    await until('abandoned', () => abandoned.length === 1);
    expect(reason).toBeInstanceOf(JobAbortedError);
    expect((reason as JobAbortedError).reason).toBe('lease_lost');
    const state = await jobState(b, id);
    expect(state.result).toBeNull();
    expect(w.stats.completed).toBe(0);
    // Told the lease is gone, the worker sends no completion: only the refused heartbeat is on record.
    const refused = await b.t.client.execute({ sql: `SELECT reason FROM events WHERE job_id = ? AND type = 'stale_write_rejected'`, args: [Number(id)] });
    expect(refused.rows.map((r) => r.reason)).toEqual(['heartbeat']);
  });

  test('a handler stuck past its deadline is aborted with deadline_exceeded', async () => {
    const b = await bed(kind);
    const id = await enqueue(b, { payload: {}, timeoutMs: 300, maxAttempts: 1 });
    let reason: JobAbortedError | undefined;
    worker(b, {
      handler: (ctx) =>
        new Promise((_, reject) => ctx.signal.addEventListener('abort', () => {
          reason = ctx.signal.reason as JobAbortedError;
          reject(ctx.signal.reason);
        })),
    });
    await until('failed', async () => (await jobState(b, id)).status === 'failed');
    expect(reason?.reason).toBe('deadline_exceeded');
  });

  test('attempt 2 starts from the checkpoint attempt 1 saved, and once() does not repeat its effect', async () => {
    const b = await bed(kind);
    const id = await enqueue(b);
    const effects: number[] = [];
    const seen: unknown[] = [];
    worker(b, {
      async handler(ctx) {
        seen.push(ctx.job.checkpoint);
        const charge = await ctx.once('charge', () => {
          effects.push(ctx.job.attempt);
          return { chargeId: `ch_${ctx.job.attempt}` };
        });
        if (ctx.job.attempt === 1) {
          await ctx.checkpoint({ step: 3 });
          throw new Error('crash after the charge');
        }
        return charge;
      },
    });
    await until('completed', async () => (await jobState(b, id)).status === 'completed');
    expect(seen).toEqual([null, { step: 3 }]);
    expect(effects).toEqual([1]);
    expect(JSON.parse((await jobState(b, id)).result!)).toEqual({ chargeId: 'ch_1' });
  });

  test('close() stops claiming, waits for the drain timeout, then aborts and releases leases so jobs run again at once', async () => {
    const b = await bed(kind);
    const id = await enqueue(b);
    let aborted: JobAbortedError | undefined;
    let started = false;
    const w = worker(b, {
      handler: (ctx) =>
        new Promise((r) => {
          started = true;
          ctx.signal.addEventListener('abort', () => {
            aborted = ctx.signal.reason as JobAbortedError;
            r(null);
          });
        }),
    });
    await until('handler started', () => started);
    const stopped = new Promise((r) => w.on('stopped', r));
    await w.close({ drainTimeoutMs: 100 });
    expect(await stopped).toEqual({ released: [id] });
    expect(aborted?.reason).toBe('shutdown');
    // Released, not lost: ready now, and the attempt was given back.
    expect(await jobState(b, id)).toMatchObject({ status: 'pending', attempt_count: 0, lost_attempts: 0 });
  });

  test('a handler that blocks the event loop is reported with the job and the measured delay', async () => {
    const b = await bed(kind, { leaseMs: 5_000, heartbeatMs: 200 });
    await enqueue(b);
    const blocked: { delayMs: number; jobs: string[] }[] = [];
    const w = worker(b, {
      handler() {
        const end = Date.now() + 1_200;
        while (Date.now() < end) {
          // CPU-bound work on the event loop.
        }
        return 'done';
      },
    });
    w.on('event_loop_blocked', (e) => blocked.push(e));
    await until('completed', () => w.stats.completed === 1);
    await until('blocked reported', () => blocked.length > 0);
    expect(blocked[0]!.delayMs).toBeGreaterThan(500);
    expect(w.stats.eventLoopBlocked).toBeGreaterThan(0);
  });
});

/** A transport whose chosen calls take longer, which counts heartbeat and release calls, and can say when a tick (a heartbeat carrying the beat) starts. */
function slowed(inner: Transport, delays: Partial<Record<'tick' | 'complete', number>>, onTick: () => void = () => {}) {
  const calls = { heartbeat: 0, release: 0 };
  const wait = (ms: number | undefined) => (ms ? new Promise((r) => setTimeout(r, ms)) : Promise.resolve());
  const transport: Transport = {
    ...inner,
    heartbeat: async (p) => {
      calls.heartbeat++;
      if (p.beat) {
        onTick();
        await wait(delays.tick);
      }
      return inner.heartbeat(p);
    },
    complete: async (p) => {
      await wait(delays.complete);
      return inner.complete(p);
    },
    release: (p) => {
      calls.release++;
      return inner.release(p);
    },
  };
  return { transport, calls };
}

describe('worker timing edges (in-process)', () => {
  test('a job asking for quicker heartbeats while a tick is in flight leaves one heartbeat loop, not two', async () => {
    const b = await bed('in-process', { leaseMs: 5_000, heartbeatMs: 1_000, graceMs: 1_000, maxReapDeferMs: 1_000, workerAliveMs: 3_000 });
    // Queue "fast" asks its workers for 100 ms heartbeats; "q" for the server's 1 s.
    expect((await b.t.app.request('/api/v1/queues/fast/settings', { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ heartbeatMs: 100 }) })).status).toBe(200);
    let tickStarted: () => void = () => {};
    // The tick is slow, so it is in flight for most of each second.
    const { transport, calls } = slowed(b.transport, { tick: 700 }, () => tickStarted());
    const held: (() => void)[] = [];
    const w = createWorker({ transport, queue: ['q', 'fast'], concurrency: 2, pollMs: 10, maxPollMs: 20, handleSignals: false, logger: quiet, handler: () => new Promise<void>((r) => held.push(r)) });
    workers.push(w);
    w.start();
    await enqueue(b); // into "q": the timer goes to 1 s
    await until('first job running', () => w.stats.claimed === 1);
    // The next tick starts: while it is in flight, a "fast" job arrives.
    await new Promise<void>((r) => (tickStarted = r));
    await b.t.app.request('/api/v1/queues/fast/jobs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ payload: {} }) });
    await until('fast job running', () => w.stats.claimed === 2);
    const before = calls.heartbeat;
    await new Promise((r) => setTimeout(r, 2_000));
    const perTwoSeconds = calls.heartbeat - before;
    for (const r of held) r();
    // One loop: every ~100 ms plus the 700 ms tick it awaits: about 2-3 in 2 s. Two loops made about twice that.
    expect(perTwoSeconds).toBeGreaterThan(0);
    expect(perTwoSeconds).toBeLessThanOrEqual(4);
  }, 15_000);

  test('close() does not release a job whose completion is already on its way', async () => {
    const b = await bed('in-process');
    const id = await enqueue(b);
    const { transport, calls } = slowed(b.transport, { complete: 200 });
    const w = createWorker({ transport, queue: 'q', pollMs: 20, maxPollMs: 50, handleSignals: false, logger: quiet, handler: () => 'done' });
    workers.push(w);
    const stopped = new Promise((r) => w.on('stopped', r));
    const completing = new Promise((r) => w.on('claimed', () => setTimeout(r, 20)));
    w.start();
    await completing; // the handler has returned; its completion is in flight for 200 ms
    await w.close({ drainTimeoutMs: 0 });
    expect(await stopped).toEqual({ released: [] });
    expect(calls.release).toBe(0);
    expect(w.stats.completed).toBe(1);
    expect(await jobState(b, id)).toMatchObject({ status: 'completed', attempt_count: 1 });
  });
});

/** An HTTP transport into the app itself (no port), counting the requests it makes per path. */
function countedHttp(t: TestBed) {
  const requests: string[] = [];
  const transport = httpTransport({
    url: 'http://127.0.0.1',
    fetch: (async (input: string, init?: RequestInit) => {
      requests.push(new URL(input).pathname.replace('/api/v1', ''));
      return t.app.request(input, init);
    }) as typeof fetch,
  });
  return { transport, requests };
}

describe('requests a worker makes (HTTP, counted)', () => {
  test('a worker holding 5 jobs gives them all back at close() in one release request', async () => {
    const b = await bed('in-process');
    const ids = await Promise.all(Array.from({ length: 5 }, () => enqueue(b)));
    const { transport, requests } = countedHttp(b.t);
    let started = 0;
    const w = createWorker({ transport, queue: 'q', concurrency: 5, pollMs: 20, maxPollMs: 50, handleSignals: false, logger: quiet, handler: (ctx) => {
      started++;
      return new Promise((r) => ctx.signal.addEventListener('abort', () => r(null)));
    } });
    workers.push(w);
    const stopped = new Promise<{ released: string[] }>((r) => w.on('stopped', r));
    w.start();
    await until('5 handlers running', () => started === 5);
    await w.close({ drainTimeoutMs: 0 });
    expect((await stopped).released.sort()).toEqual([...ids].sort());
    expect(requests.filter((p) => p.includes('release'))).toEqual(['/releases']);
    for (const id of ids) expect(await jobState(b, id)).toMatchObject({ status: 'pending', attempt_count: 0 });
  });
});
