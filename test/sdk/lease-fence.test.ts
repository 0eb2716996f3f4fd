/**
 * Self-fencing and call budgets, on a fake clock: a worker whose calls hang
 * (the network stopped moving bytes, the server still runs) stops its handler
 * by its own timer before the reaper may take the job, and no call that
 * carries leases waits longer than they last; the lease rules that tie the
 * request timeout to the lease and the heartbeat.
 *
 * The worker speaks real HTTP (httpTransport) to the real app through
 * app.request, except for the requests a test makes hang: those get no answer
 * and end only when their signal aborts (or never, for a transport that
 * ignores it). The app, the reaper and the worker's timers share one manual
 * clock. The same faults over a real stalled TCP connection:
 * test/e2e/stalled-connection.test.ts.
 */
import { afterEach, describe, expect, test } from 'vitest';
import type { Config } from '../../src/core/config.ts';
import { LAST_TRY_MS, withinLeases } from '../../src/worker/call-budget.ts';
import { JobAbortedError } from '../../src/worker/errors.ts';
import { createWorker, httpTransport, type Worker, type WorkerOptions } from '../../src/worker/index.ts';
import { checkLeaseTimings } from '../../src/worker/lease-rules.ts';
import { TransportError } from '../../src/worker/transport.ts';
import { fakeTimers, type FakeTimers } from '../support/fake-timers.ts';
import { setup, type TestBed } from '../support/helpers.ts';

const LEASE = 1_500;
const HEARTBEAT = 300;
const GRACE = 600;
/** Where the worker fences itself: a tenth of the lease before the local copy runs out. */
const FENCE = LEASE - LEASE / 10;
const SETTINGS: Partial<Config> = { leaseMs: LEASE, heartbeatMs: HEARTBEAT, graceMs: GRACE, workerAliveMs: 900, maxReapDeferMs: 600, backoffBaseMs: 50, backoffMaxMs: 100 };
const quiet = { info() {}, warn() {}, error() {} };

interface Bed {
  t: TestBed;
  timers: FakeTimers;
}
const beds: Bed[] = [];
const running: { w: Worker; timers: FakeTimers }[] = [];
afterEach(async () => {
  for (const { w, timers } of running.splice(0)) {
    let closed = false;
    void w.close({ drainTimeoutMs: 0 }).finally(() => (closed = true));
    await timers.advanceUntil('worker closed', () => closed);
  }
  for (const b of beds.splice(0)) b.t.close();
});

async function bed(): Promise<Bed> {
  const t = await setup(SETTINGS);
  const b = { t, timers: fakeTimers(t.clock) };
  beds.push(b);
  return b;
}

interface Hung {
  path: string;
  sentAt: number;
  /** When its signal aborted it (fake time); undefined while it still hangs. */
  endedAt?: number;
  leases: string[];
}

/**
 * An HTTP transport to the app in which the requests `hangs` picks get no
 * answer. `ignoresSignal`: they never end at all (a transport that does not
 * honour the worker's signal).
 */
function hangingHttp(b: Bed, hangs: (path: string, body: { leases?: { id: string }[]; results?: { id: string }[] }) => boolean, opts: { ignoresSignal?: boolean } = {}) {
  const hung: Hung[] = [];
  const enders: (() => void)[] = [];
  const transport = httpTransport({
    url: 'http://127.0.0.1',
    fetch: (async (input: string, init?: RequestInit) => {
      const path = new URL(input).pathname.replace('/api/v1', '');
      const body = JSON.parse(String(init?.body ?? '{}'));
      if (!hangs(path, body)) return b.t.app.request(input, init);
      const entry: Hung = { path, sentAt: b.timers.now(), leases: [...(body.leases ?? []), ...(body.results ?? [])].map((l: { id: string }) => String(l.id)) };
      hung.push(entry);
      return new Promise((_, reject) => {
        enders.push(() => reject(new TypeError('fetch failed')));
        if (opts.ignoresSignal) return;
        init?.signal?.addEventListener(
          'abort',
          () => {
            entry.endedAt = b.timers.now();
            reject(init.signal!.reason);
          },
          { once: true },
        );
      });
    }) as typeof fetch,
  });
  /** `end()`: every request still hanging fails, as if the connection was reset. */
  return { transport, hung, end: () => enders.splice(0).forEach((end) => end()) };
}

const renewals = (path: string, body: { leases?: unknown[] }) => path === '/heartbeats' && (body.leases?.length ?? 0) > 0;

function worker(b: Bed, options: Partial<WorkerOptions> & Pick<WorkerOptions, 'handler' | 'transport'>) {
  // claimWaitMs 0: a claim waiting on the server waits in real time, which the fake clock does not move.
  const w = createWorker({ queue: 'q', pollMs: 20, maxPollMs: 100, handleSignals: false, logger: quiet, timers: b.timers, claimWaitMs: 0, ...options });
  running.push({ w, timers: b.timers });
  return w.start();
}

/** A handler that waits for its signal and records when (fake time) and why it was aborted; then it rejects with the reason, as a well-behaved handler does. */
function waitsForAbort(b: Bed) {
  const seen: { started: boolean; reason?: JobAbortedError; at?: number } = { started: false };
  const handler = (ctx: { signal: AbortSignal }) =>
    new Promise((_, reject) => {
      seen.started = true;
      ctx.signal.addEventListener('abort', () => {
        seen.reason = ctx.signal.reason as JobAbortedError;
        seen.at = b.timers.now();
        reject(ctx.signal.reason);
      });
    });
  return { seen, handler };
}

async function reapNow(b: Bed) {
  const res = await b.t.app.request('/api/v1/reaper/run', { method: 'POST', headers: { 'content-type': 'application/json' } });
  return ((await res.json()) as { requeued: unknown[] }).requeued.length;
}

describe('self-fencing by the lease, whatever the calls in flight do', () => {
  test('a renewal stuck in flight (a transport that never ends it) does not hold the fence back: the handler is aborted with lease_expired_locally a tenth of the lease before its local end, while the server still counts the lease as held', async () => {
    const b = await bed();
    const { transport, hung } = hangingHttp(b, renewals, { ignoresSignal: true });
    // One attempt: the failure the handler reports once aborted ends the job.
    const id = (await b.t.enqueue('q', { payload: {}, maxAttempts: 1 })).id;
    const { seen, handler } = waitsForAbort(b);
    const claimedAt: number[] = [];
    const lost: string[] = [];
    const w = worker(b, { transport, handler });
    w.on('claimed', () => claimedAt.push(b.timers.now())).on('lease_lost', (e) => lost.push(e.reason));
    await b.timers.advanceUntil('aborted', () => seen.reason, { stepMs: 10, maxMs: 10 * LEASE });
    expect(seen.reason).toBeInstanceOf(JobAbortedError);
    expect(seen.reason!.reason).toBe('lease_expired_locally');
    // The claim's answer confirmed the lease from when it was sent (here: the
    // moment it was claimed, the fake clock does not move during a call).
    expect(seen.at! - claimedAt[0]!).toBe(FENCE);
    expect(hung.length).toBeGreaterThan(0);
    // At that moment the reaper may not take the job: its lease (and grace) has not run out on the server.
    expect(await reapNow(b)).toBe(0);
    expect(lost).toEqual(['lease_expired_locally']);
    expect(w.stats.leaseLost).toBe(1);
    // The handler's failure, sent once it stopped, still found the lease its own.
    await b.timers.advanceUntil('failed', async () => (await b.t.get(`/api/v1/jobs/${id}`)).json.job.status === 'failed');
    expect(w.stats.failed).toBe(1);
  });

  test('every renewal that gets through moves the fence: it fires a tenth of the lease before the end of the last confirmed one', async () => {
    const b = await bed();
    let stuckFrom = Infinity;
    const confirmed: number[] = [];
    const { transport } = hangingHttp(b, (path, body) => {
      if (!renewals(path, body)) return false;
      if (b.timers.now() >= stuckFrom) return true;
      confirmed.push(b.timers.now());
      return false;
    });
    await b.t.enqueue('q', { payload: {}, maxAttempts: 1 });
    const { seen, handler } = waitsForAbort(b);
    worker(b, { transport, handler });
    await b.timers.advanceUntil('running', () => seen.started, { stepMs: 10 });
    // Two leases long the renewals get through, and nothing is fenced or reaped.
    for (let i = 0; i < (2 * LEASE) / 100; i++) {
      await b.timers.advance(100);
      expect(await reapNow(b)).toBe(0);
    }
    expect(seen.reason).toBeUndefined();
    stuckFrom = b.timers.now();
    await b.timers.advanceUntil('aborted', () => seen.reason, { stepMs: 10, maxMs: 10 * LEASE });
    expect(seen.reason!.reason).toBe('lease_expired_locally');
    expect(confirmed.length).toBeGreaterThanOrEqual((2 * LEASE) / HEARTBEAT - 1);
    expect(seen.at! - confirmed.at(-1)!).toBe(FENCE);
  });
});

describe('a claim answered too late', () => {
  test('a claim whose answer arrives after its lease is past the fence (counted from when it was sent) is not run: dropped unstarted', async () => {
    const b = await bed();
    let late = true;
    const transport = httpTransport({
      url: 'http://127.0.0.1',
      fetch: (async (input: string, init?: RequestInit) => {
        const res = await b.t.app.request(input, init);
        // The server claimed at once; its answer takes longer than the lease's fence to come back.
        if (late && new URL(input).pathname.endsWith('/claim')) {
          const body = await res.text();
          if (body.includes('lockToken')) {
            late = false;
            await new Promise((r) => b.timers.setTimeout(() => r(undefined), FENCE + 50));
          }
          return new Response(body, { status: res.status, headers: res.headers });
        }
        return res;
      }) as typeof fetch,
    });
    await b.t.enqueue('q');
    let ran = 0;
    const abandoned: string[] = [];
    const w = worker(b, { transport, handler: () => void ran++ });
    w.on('abandoned', (e) => abandoned.push(e.reason));
    await b.timers.advanceUntil('dropped', () => abandoned.length > 0, { stepMs: 10, maxMs: 10 * LEASE });
    expect(abandoned).toEqual(['lease lost before it started']);
    expect(ran).toBe(0);
    expect(w.stats.leaseLost).toBe(1);
  });
});

describe('no call waits longer than the leases it carries', () => {
  test('a renewal gives up when its leases are fenced, not at the request timeout, and the next tick goes out while it hangs (two in flight at most)', async () => {
    const b = await bed();
    const { transport, hung } = hangingHttp(b, renewals);
    await b.t.enqueue('q', { payload: {}, maxAttempts: 1 });
    const { seen, handler } = waitsForAbort(b);
    const claimedAt: number[] = [];
    worker(b, { transport, handler }).on('claimed', () => claimedAt.push(b.timers.now()));
    await b.timers.advanceUntil('aborted', () => seen.reason, { stepMs: 10, maxMs: 10 * LEASE });
    await b.timers.advance(LEASE);
    const c = claimedAt[0]!;
    // The tick after the first one did not wait for it: it went out on time,
    // and the ones after waited while two were out.
    expect(hung.map((h) => h.sentAt - c)).toEqual([HEARTBEAT, 2 * HEARTBEAT]);
    for (const h of hung) {
      // Given up at the fence: a renewal answered later could save nothing.
      expect(h.endedAt! - c).toBe(FENCE);
      // A renewal sent with L ms left on its lease gave up within L ms.
      expect(h.endedAt! - h.sentAt).toBeLessThanOrEqual(c + LEASE - h.sentAt);
    }
    expect(seen.at! - c).toBe(FENCE);
  });

  test('a completion that gets no answer is given up when its lease ends, and the job is reported abandoned then; no call outlives the lease it carries', async () => {
    const b = await bed();
    // Cut off: nothing that carries the lease gets an answer.
    const { transport, hung } = hangingHttp(b, (path, body) => renewals(path, body) || path === '/completions');
    const id = (await b.t.enqueue('q')).id;
    const claimedAt: number[] = [];
    const abandoned: { at: number; reason: string }[] = [];
    const w = worker(b, { transport, handler: () => 'done' });
    w.on('claimed', () => claimedAt.push(b.timers.now())).on('abandoned', (e) => abandoned.push({ at: b.timers.now(), reason: e.reason }));
    await b.timers.advanceUntil('abandoned', () => abandoned.length > 0, { stepMs: 10, maxMs: 10 * LEASE });
    const c = claimedAt[0]!;
    expect(abandoned).toEqual([{ at: c + LEASE, reason: 'completion could not be delivered' }]);
    const completions = hung.filter((h) => h.path === '/completions');
    expect(completions.map((h) => [h.sentAt - c, h.endedAt! - c])).toEqual([[0, LEASE]]);
    for (const h of hung) expect(h.endedAt! - c).toBeLessThanOrEqual(LEASE);
    // The server never heard of the result: the reaper takes the job back after lease + grace.
    expect((await b.t.get(`/api/v1/jobs/${id}`)).json.job.status).toBe('running');
  });

  test('a claim carries no lease: one that hangs is not cut by a lease budget (only by the request timeout), and the worker keeps beating meanwhile', async () => {
    const b = await bed();
    let beats = 0;
    const { transport, hung, end } = hangingHttp(b, (path) => {
      if (path === '/heartbeats') beats++;
      return path.endsWith('/claim');
    });
    const w = worker(b, { transport, handler: () => 'done', heartbeatMs: HEARTBEAT });
    await b.timers.advance(20 * LEASE);
    expect(hung.map((h) => [h.path, h.endedAt])).toEqual([['/queues/q/claim', undefined]]);
    expect(beats).toBeGreaterThanOrEqual((20 * LEASE) / HEARTBEAT - 1);
    expect(w.stats.heartbeatFailures).toBe(0);
    // close() waits for the claim in flight: end it.
    end();
  });

  test('withinLeases: a call is given up at the end of its leases even when the transport ignores the signal; a write with less than LAST_TRY_MS left gets that long', async () => {
    const b = await bed();
    const hangs = () => new Promise<never>(() => {});
    const now = b.timers.now();
    const ends: number[] = [];
    const calls = [
      withinLeases(b, now + 1_500, 'heartbeat', hangs).catch((e: unknown) => (ends.push(b.timers.now() - now), e)),
      withinLeases(b, now + 100, 'complete', hangs, LAST_TRY_MS).catch((e: unknown) => (ends.push(b.timers.now() - now), e)),
    ];
    await b.timers.advance(2_000);
    const errors = await Promise.all(calls);
    expect(ends.sort((x, y) => x - y)).toEqual([LAST_TRY_MS, 1_500]);
    for (const e of errors) expect(e).toBeInstanceOf(TransportError);
    expect(String((errors[0] as Error).message)).toContain('no answer within 1500 ms');
  });
});

describe('the lease rules that tie the request timeout to the lease and the heartbeat', () => {
  test('checkLeaseTimings: a heartbeat over half the lease is an error; a request timeout longer than the fence less one heartbeat is a warning', () => {
    expect(checkLeaseTimings({ leaseMs: 30_000, heartbeatMs: 5_000, requestTimeoutMs: 10_000 })).toEqual({ errors: [], warnings: [] });
    expect(checkLeaseTimings({ leaseMs: 6_000, heartbeatMs: 4_000 }).errors).toEqual([expect.stringContaining('heartbeatMs (4000 ms) must be at most half the lease (6000 ms)')]);
    const { errors, warnings } = checkLeaseTimings({ leaseMs: 6_000, heartbeatMs: 2_000, requestTimeoutMs: 10_000 });
    expect(errors).toEqual([]);
    expect(warnings).toEqual([expect.stringContaining('requestTimeoutMs (10000 ms) is longer than a renewal can take and still be in time')]);
    expect(warnings[0]).toContain('5400 ms after its last confirmed renewal');
    expect(warnings[0]).toContain('3400 ms');
    expect(checkLeaseTimings({ leaseMs: 6_000, heartbeatMs: 2_000, requestTimeoutMs: 3_400 }).warnings).toEqual([]);
  });

  test('createWorker refuses its own heartbeatMs over half its leaseMs, naming both', () => {
    const transport = httpTransport({ url: 'http://127.0.0.1:1' });
    expect(() => createWorker({ transport, queue: 'q', handler: () => null, leaseMs: 6_000, heartbeatMs: 4_000, handleSignals: false })).toThrow(
      /createWorker: heartbeatMs \(4000 ms\) must be at most half the lease \(6000 ms\)/,
    );
    expect(() => httpTransport({ url: 'http://127.0.0.1:1', requestTimeoutMs: 0 })).toThrow(/requestTimeoutMs must be a positive number/);
  });

  test('a lease the server grants that the request timeout cannot renew in time is said once, with the numbers', async () => {
    const t = await setup({ ...SETTINGS, leaseMs: 6_000, heartbeatMs: 2_000, graceMs: 2_000, workerAliveMs: 4_000, maxReapDeferMs: 2_000 });
    const b = { t, timers: fakeTimers(t.clock) };
    beds.push(b);
    const warnings: { message: string; fields: unknown }[] = [];
    const logger = { info() {}, error() {}, warn: (message: string, fields?: unknown) => warnings.push({ message, fields }) };
    for (let i = 0; i < 3; i++) await t.enqueue('q');
    // The SDK's default request timeout (10 s) against a 6 s lease renewed every 2 s.
    const transport = httpTransport({ url: 'http://127.0.0.1', fetch: ((input: string, init?: RequestInit) => t.app.request(input, init)) as typeof fetch });
    const w = worker(b, { transport, logger, handler: () => 'done' });
    await b.timers.advanceUntil('completed', () => w.stats.completed === 3, { stepMs: 10 });
    const said = warnings.filter((x) => x.message.includes('requestTimeoutMs'));
    expect(said).toHaveLength(1);
    expect(said[0]!.message).toMatch(/^lease of 6000 ms: requestTimeoutMs \(10000 ms\) is longer than a renewal can take/);
    expect(said[0]!.fields).toMatchObject({ leaseMs: 6_000, heartbeatMs: 2_000, requestTimeoutMs: 10_000 });
  });
});
