/**
 * A worker cut off from a running server fences itself before anyone else
 * gets its job: a real server (with its in-process reaper) on a loopback
 * port, worker A through the fault proxy, worker B direct, the SDK's default
 * settings. A's connection stops moving bytes one way or both after A started
 * the job; from the handlers' own timestamps, A's signal must be aborted with
 * `lease_expired_locally` before B's handler starts the same job, which B then
 * completes, and nothing A wrote after it was cut off is accepted.
 *
 * The server's lease, heartbeat and grace are shortened together, as the
 * SDK derives its timings from them (lease 6 s, heartbeat 2 s, grace 2 s);
 * the reaper's interval, the liveness window and the deferral with them, so
 * each case ends within about 10 s. The SDK's own options (requestTimeoutMs:
 * 10 s, claimWaitMs, ...) are its defaults.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { startProxy, type PartitionMode, type Proxy } from '../../tools/chaos/proxy.ts';
import { defaultConfig, type Config } from '../../src/core/config.ts';
import { silentLogger } from '../../src/core/log.ts';
import { startServer, type RunningServer } from '../../src/runtime/node.ts';
import { JobAbortedError } from '../../src/worker/errors.ts';
import { createWorker, httpTransport, type Worker } from '../../src/worker/index.ts';
import { setup, type TestBed } from '../support/helpers.ts';
import { until } from '../support/until.ts';

const SERVER: Partial<Config> = { leaseMs: 6_000, heartbeatMs: 2_000, graceMs: 2_000, reaperIntervalMs: 500, workerAliveMs: 4_000, maxReapDeferMs: 2_000 };
/** When A's connection stops moving bytes, after its handler started (as measured in the field). */
const STALL_AFTER_MS = 900;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Times {
  /** A's first run of the job (attempt 1), the one the stall cut off. */
  aStarted?: number;
  aAborted?: number;
  aReason?: unknown;
  bStarted?: number;
  /** Every run of A's handler (with answers stalled, A's next claim can take the job again). */
  aRuns: { attempt: number; started: number; aborted?: number }[];
}

async function scene() {
  const t: TestBed = await setup(SERVER);
  cleanups.push(() => t.close());
  const server: RunningServer = await startServer(defaultConfig({ ...SERVER, databaseUrl: t.url, host: '127.0.0.1', port: 0 }), { log: silentLogger });
  cleanups.push(() => server.close());
  const proxy: Proxy = await startProxy(() => Number(new URL(server.url).port));
  return { t, server, proxy };
}

function start(w: Worker, close: () => Promise<void>) {
  cleanups.push(close);
  return w.start();
}

const quiet = { info() {}, warn() {}, error() {} };

describe('a worker cut off from a running server, SDK defaults', () => {
  test.each(['stall_requests', 'stall_answers', 'stall'] as PartitionMode[])('%s: A is aborted with lease_expired_locally before B starts the job; B completes it', async (mode) => {
    const { t, server, proxy } = await scene();
    const times: Times = { aRuns: [] };
    // Wall-clock moments beside the monotonic ones, to place the server's events.
    const wall = { aStarted: 0, aAborted: 0 };
    const a = createWorker({
      transport: httpTransport({ url: `http://127.0.0.1:${proxy.port}` }),
      queue: 'q',
      workerId: 'worker-a',
      handleSignals: false,
      logger: quiet,
      handler: (ctx) =>
        new Promise((_, reject) => {
          const run: Times['aRuns'][number] = { attempt: ctx.job.attempt, started: performance.now() };
          times.aRuns.push(run);
          const first = ctx.job.attempt === 1;
          if (first) {
            times.aStarted = run.started;
            wall.aStarted = Date.now();
          }
          ctx.signal.addEventListener('abort', () => {
            run.aborted = performance.now();
            if (first) {
              times.aAborted = run.aborted;
              wall.aAborted = Date.now();
              times.aReason = ctx.signal.reason;
            }
            reject(ctx.signal.reason);
          });
        }),
    });
    // Closed after the proxy (below): with the proxy gone its calls fail at once instead of hanging.
    start(a, () => a.close({ drainTimeoutMs: 0 }));
    const enqueued = await fetch(`${server.url}/api/v1/queues/q/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ payload: {} }) });
    const id = ((await enqueued.json()) as { job: { id: string } }).job.id;
    await until('A runs the job', () => times.aStarted !== undefined);
    await new Promise((r) => setTimeout(r, STALL_AFTER_MS));
    // Longer than the test: the link heals only when the proxy closes.
    void proxy.partition(mode, 60_000);
    cleanups.push(() => proxy.close());

    const b = createWorker({
      transport: httpTransport({ url: server.url }),
      queue: 'q',
      workerId: 'worker-b',
      handleSignals: false,
      logger: quiet,
      handler: async () => {
        times.bStarted ??= performance.now();
        await new Promise((r) => setTimeout(r, 200));
        return 'done by B';
      },
    });
    start(b, () => b.close({ drainTimeoutMs: 0 }));
    const job = async () => (await t.client.execute({ sql: 'SELECT status, result, attempt_count FROM jobs WHERE id = ?', args: [Number(id)] })).rows[0] as unknown as { status: string; result: string | null; attempt_count: number };
    await until('B completed the job', async () => (await job()).status === 'completed' && b.stats.completed === 1, 25_000, () => JSON.stringify({ times, a: a.stats, b: b.stats }));

    // The order of events, from the handlers' own clocks.
    expect(times.aReason).toBeInstanceOf(JobAbortedError);
    expect((times.aReason as JobAbortedError).reason).toBe('lease_expired_locally');
    expect(times.aAborted).toBeDefined();
    expect(times.bStarted).toBeDefined();
    expect(times.aAborted!).toBeLessThan(times.bStarted!);
    // No run of A's (a later claim of A's included) was still going when B started.
    for (const run of times.aRuns) if (run.started < times.bStarted!) expect(run.aborted ?? Infinity).toBeLessThan(times.bStarted!);
    // B's result is the job's; A recorded none. (With answers stalled, A's
    // next claim may take the job again under a token A never hears of: that
    // attempt is reaped before B gets it, and runs nowhere.)
    expect(await job()).toMatchObject({ status: 'completed', result: '"done by B"' });
    expect(a.stats.completed).toBe(0);
    expect(b.stats.completed).toBe(1);

    // What the server did meanwhile, for the record (offsets from A's start).
    const events = ((await (await fetch(`${server.url}/api/v1/jobs/${id}`)).json()) as { events: { type: string; at: string; workerId: string | null; reason: string | null; attempt: number | null }[] }).events;
    const since = (ms: number) => `${((ms - times.aStarted!) / 1000).toFixed(2)} s`;
    const onServer = events
      .filter((e) => e.type !== 'enqueued')
      .map((e) => `${e.type}${e.reason ? `(${e.reason})` : ''}${e.workerId ? ` by ${e.workerId}` : ''} at ${((Date.parse(e.at) - wall.aStarted) / 1000).toFixed(2)} s`);
    console.log(`${mode}: attempt ${(await job()).attempt_count} completed; stalled at ${(STALL_AFTER_MS / 1000).toFixed(2)} s; A aborted at ${since(times.aAborted!)}; B started at ${since(times.bStarted!)}; server: ${onServer.join(', ')}`);
    // Sooner than the reaper needs: before the lease A was granted ran out on
    // the server's clock (at least the claim plus the lease; later if a
    // renewal A never heard of got through), not only before lease + grace.
    const claimedByA = events.find((e) => e.type === 'claimed' && e.workerId === 'worker-a' && e.attempt === 1)!;
    expect(wall.aAborted).toBeLessThan(Date.parse(claimedByA.at) + SERVER.leaseMs!);
    // Anything A sent once cut off and the server heard late was refused, not taken.
    expect(events.filter((e) => e.type === 'completed').map((e) => e.workerId ?? 'worker-b')).toEqual(['worker-b']);
  }, 40_000);
});
