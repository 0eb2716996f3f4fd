/**
 * The worker SDK, over both transports (in-process and HTTP):
 * outcomes, heartbeats apart from the handler, AbortSignal on lease loss and
 * deadline, self-fencing, checkpoints, once(), graceful shutdown, blocked
 * event loop, and the requests it makes.
 *
 * A few end-to-end runs use real time (and HTTP on a real port). The races
 * that only wait for time to pass (a lease kept, lost or run out, a deadline,
 * a drain timeout) run on a fake clock: the worker's timers
 * (WorkerOptions.timers) and the app's clock are the same manual clock, and
 * the test moves it.
 */
import { silentLogger } from '../../src/core/log.ts';
import { afterEach, describe, expect, test } from 'vitest';
import { databaseClock } from '../../src/core/clock.ts';
import { defaultConfig, type Config } from '../../src/core/config.ts';
import { startServer, type RunningServer } from '../../src/runtime/node.ts';
import { dbTransport } from '../../src/embedded/db-transport.ts';
import { createWorker, httpTransport, JobSnooze, NonRetryableError, RetryAfter, type JobDependency, type Transport, type Worker, type WorkerOptions } from '../../src/worker/index.ts';
import { JobAbortedError } from '../../src/worker/errors.ts';
import { TransportError } from '../../src/worker/transport.ts';
import { realTimers, type WorkerTimers } from '../../src/worker/timers.ts';
import { fakeTimers, type FakeTimers } from '../support/fake-timers.ts';
import { setup, type TestBed } from '../support/helpers.ts';
import { until } from '../support/until.ts';

// Short leases with enough slack (grace, deferral) that a loaded CI machine does not lose one.
const FAST: Partial<Config> = { leaseMs: 1_500, heartbeatMs: 300, graceMs: 600, workerAliveMs: 900, maxReapDeferMs: 600, backoffBaseMs: 50, backoffMaxMs: 100 };

interface Bed {
  t: TestBed;
  transport: Transport;
  server?: RunningServer;
}

const beds: Bed[] = [];
const workers: Worker[] = [];
/** Workers on a fake clock: closing one may wait on its timers, so the clock is pumped meanwhile. */
const fakeWorkers: { w: Worker; timers: FakeTimers }[] = [];
afterEach(async () => {
  await Promise.all(workers.map((w) => w.close({ drainTimeoutMs: 0 })));
  workers.length = 0;
  for (const { w, timers } of fakeWorkers) {
    let closed = false;
    void w.close({ drainTimeoutMs: 0 }).finally(() => (closed = true));
    await timers.advanceUntil('worker closed', () => closed);
  }
  fakeWorkers.length = 0;
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
    b = { t, transport: dbTransport(t.engine) };
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

  test('JobSnooze puts the job back without spending an attempt or recording an error, and counts it; past maxSnoozes it is retried, spending one', async () => {
    const b = await bed(kind);
    const snoozy = await enqueue(b, { payload: { kind: 'snoozy' }, group: 'acme' });
    const runs = new Map<string, number>();
    const seen: { snoozes: number | undefined; group: string | null | undefined }[] = [];
    const w = worker(b, {
      concurrency: 2,
      async handler(ctx) {
        const n = (runs.get(ctx.job.id) ?? 0) + 1;
        runs.set(ctx.job.id, n);
        if (ctx.job.id === snoozy) seen.push({ snoozes: ctx.job.snoozes, group: ctx.job.group });
        if ((ctx.job.payload as { kind: string }).kind === 'snoozy' && n <= 3) throw new JobSnooze(20);
        if ((ctx.job.payload as { kind: string }).kind === 'limited' && ctx.job.attempt < 2) throw new JobSnooze(20);
        return 'ok';
      },
    });
    await until('snoozy done', async () => (await jobState(b, snoozy)).status === 'completed');
    const done = (await b.t.client.execute({ sql: 'SELECT attempt_count, errored_attempts, snoozes, last_error FROM jobs WHERE id = ?', args: [Number(snoozy)] })).rows[0]!;
    expect(done).toMatchObject({ attempt_count: 1, errored_attempts: 0, snoozes: 3, last_error: null });
    expect(w.stats).toMatchObject({ snoozed: 3, failed: 0 });
    // The handler sees how often its job was snoozed so far, and the job's group.
    expect(seen).toEqual([0, 1, 2, 3].map((snoozes) => ({ snoozes, group: 'acme' })));
    // A queue that allows one snooze: the second is refused, and the job is retried after the same delay instead.
    await b.t.engine.store.queueUpsertSettings({ queue: 'q', patch: { maxSnoozes: 1 }, now: Date.now() });
    const limited = await enqueue(b, { payload: { kind: 'limited' } });
    await until('limited done', async () => (await jobState(b, limited)).status === 'completed');
    const row = (await b.t.client.execute({ sql: 'SELECT attempt_count, errored_attempts, snoozes FROM jobs WHERE id = ?', args: [Number(limited)] })).rows[0]!;
    expect(row).toMatchObject({ attempt_count: 2, errored_attempts: 1, snoozes: 1 });
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

  test('step(): a done step is not run again and its result comes back; its checkpoint was saved with the result; ctx.steps() lists it', async () => {
    const b = await bed(kind);
    const id = await enqueue(b, { payload: {}, maxAttempts: 3 });
    const ran: number[] = [];
    const seen: { checkpoint: unknown; steps: unknown }[] = [];
    worker(b, {
      async handler(ctx) {
        seen.push({ checkpoint: ctx.job.checkpoint, steps: await ctx.steps() });
        const charge = await ctx.step('charge', () => {
          ran.push(ctx.job.attempt);
          return { chargeId: `ch_${ctx.job.attempt}` };
        }, { checkpoint: (r: { chargeId: string }) => ({ charged: r.chargeId }) });
        if (ctx.job.attempt === 1) throw new Error('crash after the charge');
        return charge;
      },
    });
    await until('completed', async () => (await jobState(b, id)).status === 'completed');
    expect(ran).toEqual([1]);
    expect(seen).toEqual([
      { checkpoint: null, steps: [] },
      { checkpoint: { charged: 'ch_1' }, steps: [{ name: 'charge', state: 'done', attempt: 1, result: { chargeId: 'ch_1' } }] },
    ]);
    expect(JSON.parse((await jobState(b, id)).result!)).toEqual({ chargeId: 'ch_1' });
  });

  test('step(): a step started and never recorded is uncertain on the next attempt: an event says so, and the default fails the job naming the step', async () => {
    const b = await bed(kind);
    const id = await enqueue(b, { payload: {}, maxAttempts: 3 });
    const listed: unknown[] = [];
    worker(b, {
      async handler(ctx) {
        if (ctx.job.attempt === 1) {
          // The process "dies" inside the step: it started, it was never recorded done.
          await ctx.step('send', () => {
            throw new Error('died mid-send');
          });
        }
        listed.push(await ctx.steps());
        return ctx.step('send', () => 'sent again');
      },
    });
    await until('failed', async () => (await jobState(b, id)).status === 'failed');
    expect(listed).toEqual([[{ name: 'send', state: 'uncertain', attempt: 1, result: null }]]);
    const state = await jobState(b, id);
    expect(state.attempt_count).toBe(2);
    expect(state.last_error).toContain('step "send" was started on attempt 1 and never recorded done');
    const events = (await b.t.client.execute({ sql: "SELECT reason, message, attempt FROM events WHERE job_id = ? AND type = 'step_uncertain'", args: [Number(id)] })).rows;
    expect(events.map((e) => [e.reason, e.attempt])).toEqual([['send', 2]]);
    expect(String(events[0]!.message)).toContain('step send was started on attempt 1 by worker');
  });

  test("step(): ifUncertain 'run' runs it again, 'skip' goes on without it", async () => {
    const b = await bed(kind);
    const runId = await enqueue(b, { payload: { choice: 'run' }, maxAttempts: 3 });
    const skipId = await enqueue(b, { payload: { choice: 'skip' }, maxAttempts: 3 });
    worker(b, {
      concurrency: 2,
      async handler(ctx) {
        const choice = (ctx.job.payload as { choice: 'run' | 'skip' }).choice;
        const sent = await ctx.step('send', () => {
          if (ctx.job.attempt === 1) throw new Error('died mid-send');
          return `sent on attempt ${ctx.job.attempt}`;
        }, { ifUncertain: choice });
        return sent ?? 'skipped';
      },
    });
    await until('both completed', async () => (await jobState(b, runId)).status === 'completed' && (await jobState(b, skipId)).status === 'completed');
    expect(JSON.parse((await jobState(b, runId)).result!)).toBe('sent on attempt 2');
    expect(JSON.parse((await jobState(b, skipId)).result!)).toBe('skipped');
  });

  test('reportDuplicate(key): the duplicate the handler found downstream is an event with its key, counted in /metrics; a bad key is refused before it is sent', async () => {
    const b = await bed(kind);
    const id = await enqueue(b);
    const refused: string[] = [];
    worker(b, {
      async handler(ctx) {
        for (const bad of ['', 'x'.repeat(201), 'half \ud83d']) await ctx.reportDuplicate(bad).catch((e: Error) => refused.push(e.message));
        await ctx.reportDuplicate('charge ch_1');
        return 'ok';
      },
    });
    await until('completed', async () => (await jobState(b, id)).status === 'completed');
    expect(refused).toHaveLength(3);
    expect(refused[0]).toBe('reportDuplicate(): the key "" is not 1 to 200 characters');
    const events = (await b.t.client.execute({ sql: "SELECT reason, attempt FROM events WHERE job_id = ? AND type = 'duplicate_reported'", args: [Number(id)] })).rows;
    expect(events.map((e) => [e.reason, e.attempt])).toEqual([['charge ch_1', 1]]);
    expect(await (await b.t.app.request('/metrics')).text()).toContain('leasehold_duplicates_reported_total{queue="q"} 1');
  });

  test("ctx.dependencies(): a flow's parent reads what it waited for, each completed one with its result and a failed one counted as met under 'run'; a job that waits for nothing reads none", async () => {
    const b = await bed(kind);
    const res = await b.t.app.request('/api/v1/flows', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jobs: [
          { queue: 'parts', payload: { n: 1 } },
          { queue: 'parts', payload: { n: 2 } },
          { queue: 'parts', payload: { n: 3, fail: true }, maxAttempts: 1 },
          { queue: 'q', payload: { parent: true }, dependsOn: ['#0', '#1', '#2'], dependencyPolicy: 'run' },
        ],
      }),
    });
    expect(res.status).toBe(201);
    const [p1, p2, p3, parent] = ((await res.json()) as { jobs: { id: string }[] }).jobs.map((j) => j.id);
    const read = new Map<string, JobDependency<{ doubled: number }>[]>();
    const w = worker(b, {
      queue: ['parts', 'q'],
      concurrency: 3,
      async handler(ctx) {
        const payload = ctx.job.payload as { n?: number; fail?: boolean };
        read.set(ctx.job.id, await ctx.dependencies<{ doubled: number }>());
        if (payload.fail) throw new NonRetryableError('out of stock');
        return payload.n === undefined ? 'assembled' : { doubled: payload.n * 2 };
      },
    });
    await until('the parent completed', async () => (await jobState(b, parent!)).status === 'completed');
    // The store says completed once the completion commits; the worker counts it when the answer is back.
    await until('the worker counted three completions', async () => w.stats.completed === 3);
    expect(w.stats.completed).toBe(3);
    expect(read.get(p1!)).toEqual([]);
    const deps = read.get(parent!)!;
    expect(deps.map((d) => [d.id, d.queue, d.status, d.state, d.result, d.lastError])).toEqual([
      [p1, 'parts', 'completed', 'completed', { doubled: 2 }, null],
      [p2, 'parts', 'completed', 'completed', { doubled: 4 }, null],
      [p3, 'parts', 'failed', 'ignored', null, 'NonRetryableError: out of stock'],
    ]);
    expect(Date.parse(deps[0]!.updatedAt)).toBeGreaterThan(0);
    // Typed by the handler's own annotation: a completed dependency's result is { doubled } or null.
    const doubled: number | undefined = deps[0]!.result?.doubled;
    expect(doubled).toBe(2);
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
function slowed(inner: Transport, delays: Partial<Record<'tick' | 'complete', number>>, onTick: () => void = () => {}, timers: WorkerTimers = realTimers) {
  const calls = { heartbeat: 0, release: 0 };
  const wait = (ms: number | undefined) => (ms ? new Promise((r) => timers.setTimeout(() => r(undefined), ms)) : Promise.resolve());
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

interface FakeBed extends Bed {
  timers: FakeTimers;
  /** Request paths the HTTP transport sent (empty in-process). */
  requests: string[];
}

/** A bed on a fake clock: the app, the in-process transport and the worker's timers all read t.clock. HTTP goes through app.request (no port). */
async function fakeBed(kind: 'in-process' | 'http', overrides: Partial<Config> = {}): Promise<FakeBed> {
  const t = await setup({ ...FAST, ...overrides });
  const http = countedHttp(t);
  const b = { t, transport: kind === 'in-process' ? dbTransport(t.engine) : http.transport, timers: fakeTimers(t.clock), requests: http.requests };
  beds.push(b);
  return b;
}

function fakeWorker(b: FakeBed, options: Partial<WorkerOptions> & Pick<WorkerOptions, 'handler'>) {
  // claimWaitMs 0: a claim waiting on the server waits in real time, which a
  // fake clock does not move (the wait has its own tests: test/api/claim-wait.test.ts).
  const w = createWorker({ transport: b.transport, queue: 'q', pollMs: 20, maxPollMs: 100, handleSignals: false, logger: quiet, timers: b.timers, claimWaitMs: 0, ...options });
  fakeWorkers.push({ w, timers: b.timers });
  return w.start();
}

/** A handler that waits for its signal and says why and when (fake time) it was aborted; then it ends as `then` says. */
function waitsForAbort(b: FakeBed, then: 'resolve' | 'reject' = 'resolve') {
  const seen: { started: boolean; reason?: JobAbortedError; at?: number } = { started: false };
  const handler = (ctx: { signal: AbortSignal }) =>
    new Promise((resolve, reject) => {
      seen.started = true;
      ctx.signal.addEventListener('abort', () => {
        seen.reason = ctx.signal.reason as JobAbortedError;
        seen.at = b.timers.now();
        if (then === 'reject') reject(ctx.signal.reason);
        // A handler that ignores the signal and tries to finish anyway.
        else b.timers.setTimeout(() => resolve('too late'), 50);
      });
    });
  return { seen, handler };
}

describe.each(['in-process', 'http'] as const)('worker over %s, on a fake clock', (kind) => {
  test('the heartbeat loop keeps the lease of a job that runs several times longer than the lease', async () => {
    const b = await fakeBed(kind);
    const id = await enqueue(b);
    const w = fakeWorker(b, { handler: () => new Promise((r) => b.timers.setTimeout(() => r('slow but alive'), 4_600)) });
    // The reaper runs all along (on the same clock): a healthy lease must never be taken.
    const reaps: number[] = [];
    await b.timers.advanceUntil('completed', async () => {
      const report = (await (await b.t.app.request('/api/v1/reaper/run', { method: 'POST', headers: { 'content-type': 'application/json' } })).json()) as { requeued: unknown[] };
      reaps.push(report.requeued.length);
      return (await jobState(b, id)).status === 'completed';
    });
    expect(reaps.length).toBeGreaterThan(4_600 / 50);
    expect(reaps.every((n) => n === 0)).toBe(true);
    expect(await jobState(b, id)).toMatchObject({ attempt_count: 1, lost_attempts: 0 });
    expect(w.stats.leaseLost).toBe(0);
  });

  test('a job whose completion is on its way is not renewed while its lease has time left (a renewal racing the completion would be refused as a stale write), and is renewed before the lease runs out', async () => {
    const b = await fakeBed(kind);
    const id = await enqueue(b);
    let openGate!: () => void;
    const gate = new Promise<void>((r) => (openGate = r));
    const renewed: string[][] = [];
    let completionSent = false;
    // The real transport, with its completion held back until the test lets it go.
    const transport: Transport = {
      ...b.transport,
      async complete(p) {
        completionSent = true;
        await gate;
        return b.transport.complete(p);
      },
      heartbeat(p) {
        renewed.push(p.leases.map((l) => l.id));
        return b.transport.heartbeat(p);
      },
    };
    const w = fakeWorker(b, { transport, handler: () => 'done' });
    await b.timers.advanceUntil('completion on its way', () => completionSent, { stepMs: 10 });
    const sentAt = b.timers.now();
    renewed.length = 0;
    // The lease (1,500 ms, heartbeat 300 ms) has time left: no renewal for it.
    await b.timers.advance(600);
    expect(renewed.length).toBeGreaterThan(0);
    expect(renewed.every((ids) => !ids.includes(id))).toBe(true);
    // Still on its way as the lease nears its end: renewed, so the reaper cannot take it.
    await b.timers.advanceUntil('renewed near the end of the lease', () => renewed.some((ids) => ids.includes(id)), { stepMs: 50, maxMs: 1_500 });
    expect(b.timers.now() - sentAt).toBeLessThan(1_500);
    openGate();
    await b.timers.advanceUntil('completed', async () => (await jobState(b, id)).status === 'completed');
    const refused = await b.t.client.execute({ sql: "SELECT count(*) AS n FROM events WHERE job_id = ? AND type = 'stale_write_rejected'", args: [Number(id)] });
    expect(Number(refused.rows[0]!.n)).toBe(0);
    expect(w.stats).toMatchObject({ completed: 1, leaseLost: 0 });
  });

  test('a refused heartbeat aborts the handler with lease_lost, and its late completion is abandoned', async () => {
    const b = await fakeBed(kind);
    const id = await enqueue(b);
    const { seen, handler } = waitsForAbort(b);
    const abandoned: string[] = [];
    const w = fakeWorker(b, { handler });
    w.on('abandoned', (e) => abandoned.push(e.job.id));
    await b.timers.advanceUntil('running', () => seen.started);
    // An operator takes the job away: the worker's token is now stale.
    await b.t.app.request(`/api/v1/jobs/${id}/requeue`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ force: true, reason: 'test' }) });
    const takenAt = b.timers.now();
    await b.timers.advanceUntil('abandoned', () => abandoned.length === 1);
    expect(seen.reason).toBeInstanceOf(JobAbortedError);
    expect(seen.reason!.reason).toBe('lease_lost');
    // Told at the next tick (every 300 ms).
    expect(seen.at! - takenAt).toBeLessThanOrEqual(300);
    expect((await jobState(b, id)).result).toBeNull();
    expect(w.stats.completed).toBe(0);
    // Told the lease is gone, the worker sends no completion: only the refused heartbeat is on record.
    const refused = await b.t.client.execute({ sql: `SELECT reason FROM events WHERE job_id = ? AND type = 'stale_write_rejected'`, args: [Number(id)] });
    expect(refused.rows.map((r) => r.reason)).toEqual(['heartbeat']);
  });

  test('a job this worker claims again while its earlier claim still runs (a forced requeue) keeps the new claim: the earlier handler is stopped, the new one heartbeats and completes', async () => {
    const b = await fakeBed(kind);
    const id = await enqueue(b);
    let calls = 0;
    const signals: AbortSignal[] = [];
    const abandoned: string[] = [];
    const w = fakeWorker(b, {
      concurrency: 2,
      // The first run ignores its signal and ends at 1 s; the second runs three leases long.
      handler: (ctx) => {
        signals.push(ctx.signal);
        const call = ++calls;
        return new Promise((r) => b.timers.setTimeout(() => r(call === 1 ? 'first' : 'second'), call === 1 ? 1_000 : 4_600));
      },
    });
    w.on('abandoned', (e) => abandoned.push(e.job.id));
    await b.timers.advanceUntil('running', () => calls === 1);
    expect((await b.t.app.request(`/api/v1/jobs/${id}/requeue`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ force: true, reason: 'test' }) })).status).toBe(200);
    // The reaper runs all along: the second claim, kept alive, must never be taken.
    const reaps: number[] = [];
    await b.timers.advanceUntil('completed', async () => {
      const report = (await (await b.t.app.request('/api/v1/reaper/run', { method: 'POST', headers: { 'content-type': 'application/json' } })).json()) as { requeued: unknown[] };
      reaps.push(report.requeued.length);
      return (await jobState(b, id)).status === 'completed';
    });
    expect(calls).toBe(2);
    expect((signals[0]!.reason as JobAbortedError).reason).toBe('lease_lost');
    expect(signals[1]!.aborted).toBe(false);
    expect(reaps.every((n) => n === 0)).toBe(true);
    expect(await jobState(b, id)).toMatchObject({ status: 'completed', attempt_count: 2, result: '"second"' });
    await b.timers.advanceUntil('abandoned', () => abandoned.length === 1);
    expect(abandoned).toEqual([id]);
  });

  test('a handler stuck past its deadline is aborted with deadline_exceeded, at the deadline', async () => {
    const b = await fakeBed(kind);
    const id = await enqueue(b, { payload: {}, timeoutMs: 300, maxAttempts: 1 });
    const { seen, handler } = waitsForAbort(b, 'reject');
    const claimedAt: number[] = [];
    fakeWorker(b, { handler }).on('claimed', () => claimedAt.push(b.timers.now()));
    await b.timers.advanceUntil('failed', async () => (await jobState(b, id)).status === 'failed');
    expect(seen.reason?.reason).toBe('deadline_exceeded');
    expect(seen.at! - claimedAt[0]!).toBe(300);
  });

  test('self-fencing: when heartbeats cannot get through, the handler is aborted a tenth of the lease before its lease runs out locally, before the reaper may take the job', async () => {
    const b = await fakeBed(kind);
    const id = await enqueue(b);
    const inner = b.transport;
    // The server is unreachable for renewals (the claim and the rest still work).
    b.transport = { ...inner, heartbeat: async (p) => (p.leases.length > 0 ? Promise.reject(new TransportError('connection refused')) : inner.heartbeat(p)) };
    const { seen, handler } = waitsForAbort(b, 'reject');
    const failures: string[][] = [];
    const claimedAt: number[] = [];
    const w = fakeWorker(b, { handler });
    w.on('heartbeat_failed', (e) => failures.push(e.jobs)).on('claimed', () => claimedAt.push(b.timers.now()));
    await b.timers.advanceUntil('aborted', () => seen.reason);
    expect(seen.reason!.reason).toBe('lease_expired_locally');
    const lease = FAST.leaseMs!;
    // By its own timer, a tenth of the lease (local copy) early; the reaper waits lease + grace.
    expect(seen.at! - claimedAt[0]!).toBe(lease - lease / 10);
    expect(seen.at! - claimedAt[0]!).toBeLessThan(lease + FAST.graceMs!);
    expect(failures.length).toBeGreaterThanOrEqual((lease - lease / 10) / FAST.heartbeatMs! - 1);
    expect(failures[0]).toEqual([id]);
    expect(w.stats).toMatchObject({ leaseLost: 1 });
    expect(w.stats.heartbeatFailures).toBe(failures.length);
  });

  test('close() stops claiming, waits for the drain timeout, then aborts and releases leases so jobs run again at once', async () => {
    const b = await fakeBed(kind);
    const id = await enqueue(b);
    const { seen, handler } = waitsForAbort(b);
    const w = fakeWorker(b, { handler });
    await b.timers.advanceUntil('handler started', () => seen.started);
    const stopped = new Promise((r) => w.on('stopped', r));
    let closed = false;
    const closingAt = b.timers.now();
    void w.close({ drainTimeoutMs: 1_000 }).then(() => (closed = true));
    await b.timers.advanceUntil('closed', () => closed, { stepMs: 10 });
    expect(await stopped).toEqual({ released: [id] });
    expect(seen.reason?.reason).toBe('shutdown');
    // The drain waited its full second (and not much more) for the handler.
    expect(seen.at! - closingAt).toBeGreaterThanOrEqual(1_000);
    expect(seen.at! - closingAt).toBeLessThan(1_100);
    // Released, not lost: ready now, and the attempt was given back.
    expect(await jobState(b, id)).toMatchObject({ status: 'pending', attempt_count: 0, lost_attempts: 0 });
  });
});

describe('worker timing edges, on a fake clock', () => {
  test('a job asking for quicker heartbeats while a tick is in flight leaves one heartbeat loop, not two', async () => {
    // Ticks do not wait for the one in flight (at most two are out): the
    // slow tick is only there to have one in flight when the job arrives.
    const b = await fakeBed('in-process', { leaseMs: 5_000, heartbeatMs: 1_000, graceMs: 1_000, maxReapDeferMs: 1_000, workerAliveMs: 3_000 });
    // Queue "fast" asks its workers for 100 ms heartbeats; "q" for the server's 1 s.
    expect((await b.t.app.request('/api/v1/queues/fast/settings', { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ heartbeatMs: 100 }) })).status).toBe(200);
    let tickStarted = false;
    // A tick takes 700 ms, so it is in flight for most of each second.
    const delays = { tick: 700 };
    const { transport, calls } = slowed(b.transport, delays, () => (tickStarted = true), b.timers);
    b.transport = transport;
    const held: (() => void)[] = [];
    const w = fakeWorker(b, { queue: ['q', 'fast'], concurrency: 2, pollMs: 10, maxPollMs: 20, handler: () => new Promise<void>((r) => held.push(r)) });
    await enqueue(b); // into "q": the timer goes to 1 s
    await b.timers.advanceUntil('first job running', () => w.stats.claimed === 1, { stepMs: 10 });
    // The next tick starts: while it is in flight, a "fast" job arrives.
    tickStarted = false;
    await b.timers.advanceUntil('a tick in flight', () => tickStarted, { stepMs: 10 });
    await b.t.app.request('/api/v1/queues/fast/jobs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ payload: {} }) });
    await b.timers.advanceUntil('fast job running', () => w.stats.claimed === 2, { stepMs: 10 });
    delays.tick = 0;
    await b.timers.advance(1_000);
    const before = calls.heartbeat;
    await b.timers.advance(2_000);
    const perTwoSeconds = calls.heartbeat - before;
    for (const r of held) r();
    // One loop: every 100 ms, 20 in 2 s. Two loops made about twice that.
    expect(perTwoSeconds).toBeGreaterThanOrEqual(19);
    expect(perTwoSeconds).toBeLessThanOrEqual(21);
  });
});

describe('requests a worker makes per heartbeat tick (HTTP, counted, fake clock)', () => {
  test('one tick is one request: the renewals and the liveness beat go in one POST /heartbeats, busy or idle', async () => {
    const b = await fakeBed('http', { leaseMs: 10_000, graceMs: 5_000, workerAliveMs: 10_000 });
    const id = await enqueue(b);
    const { seen, handler } = waitsForAbort(b);
    const w = fakeWorker(b, { heartbeatMs: 1_000, workerId: 'w1', pollMs: 10_000, maxPollMs: 10_000, identity: { host: 'box', pid: 7, version: '1.2.3' }, handler });
    await b.timers.advanceUntil('running', () => seen.started, { stepMs: 10 });
    const liveness = (paths: string[]) => paths.filter((p) => p === '/heartbeats' || p === '/workers/beat' || /^\/jobs\/\d+\/heartbeat$/.test(p));
    for (let tick = 0; tick < 3; tick++) {
      b.requests.length = 0;
      await b.timers.advance(1_000);
      expect(liveness(b.requests), `tick ${tick}`).toEqual(['/heartbeats']);
    }
    // That one request kept the lease and the worker's row.
    const row = (await b.t.client.execute({ sql: 'SELECT host, pid, version, queues, running_count, instance_id, last_seen_at FROM workers WHERE id = ?', args: ['w1'] })).rows[0]!;
    expect(row).toMatchObject({ host: 'box', pid: 7, version: '1.2.3', queues: '["q"]', running_count: 1, instance_id: w.instanceId });
    const lease = (await b.t.client.execute({ sql: 'SELECT lease_expires_at FROM jobs WHERE id = ?', args: [Number(id)] })).rows[0]!;
    expect(Number(lease.lease_expires_at)).toBe(Number(row.last_seen_at) + 10_000);
    // Idle (an operator takes the job back and cancels it): still one request per tick, with no leases.
    expect((await b.t.app.request(`/api/v1/jobs/${id}/requeue`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ force: true, reason: 'test' }) })).status).toBe(200);
    expect((await b.t.app.request(`/api/v1/jobs/${id}/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(200);
    await b.timers.advanceUntil('idle', () => w.running === 0, { stepMs: 100 });
    b.requests.length = 0;
    await b.timers.advance(1_000);
    expect(liveness(b.requests)).toEqual(['/heartbeats']);
    expect((await b.t.client.execute({ sql: 'SELECT running_count FROM workers WHERE id = ?', args: ['w1'] })).rows[0]).toMatchObject({ running_count: 0 });
  });
});

