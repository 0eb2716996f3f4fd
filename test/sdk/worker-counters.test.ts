/**
 * The worker SDK reports its counters with its liveness beats (event-loop
 * blocks and the longest, heartbeat failures, leases lost); the server keeps
 * the latest per worker and shows them in GET /workers, the dashboard's
 * workers page and `leasehold workers`. Beats without them (older SDKs) work.
 */
import { afterEach, expect, test } from 'vitest';
import { databaseClock } from '../../src/core/clock.ts';
import { defaultConfig, type Config } from '../../src/core/config.ts';
import { silentLogger } from '../../src/core/log.ts';
import { startServer, type RunningServer } from '../../src/runtime/node.ts';
import { createWorker, httpTransport, type Transport, type Worker } from '../../src/worker/index.ts';
import { setup, type TestBed } from '../support/helpers.ts';
import { until } from '../support/until.ts';

const FAST: Partial<Config> = { leaseMs: 5_000, heartbeatMs: 200, graceMs: 600, workerAliveMs: 2_000 };
const quiet = { info() {}, warn() {}, error() {} };

let t: TestBed | undefined;
let server: RunningServer | undefined;
let w: Worker | undefined;
afterEach(async () => {
  await w?.close({ drainTimeoutMs: 0 });
  await server?.close();
  t?.close();
  w = server = t = undefined;
});

async function registry() {
  const res = await t!.get('/api/v1/workers');
  expect(res.status).toBe(200);
  return res.json.workers as { id: string; counters: Record<string, number | null> | null }[];
}

test('a worker that blocked its event loop, failed a heartbeat and lost a lease reports all three; the registry, dashboard show them', async () => {
  t = await setup(FAST, { realClock: databaseClock });
  server = await startServer(defaultConfig({ ...FAST, databaseUrl: t.url, port: 0 }), { reaper: false, log: silentLogger });
  const http = httpTransport({ url: server.url });
  // The network drops one heartbeat round.
  let dropOne = false;
  const transport: Transport = {
    ...http,
    heartbeat: async (p) => {
      if (dropOne) {
        dropOne = false;
        throw new Error('connection reset (test)');
      }
      return http.heartbeat(p);
    },
  };
  await http.heartbeat({ workerId: 'w1', leases: [], beat: { queues: ['q'], runningCount: 0 } }).catch(() => undefined);
  const [, lost] = (await t.post('/api/v1/queues/q/jobs', { jobs: [{ payload: 'block' }, { payload: 'hold' }] })).json.jobs;
  let release: () => void = () => {};
  w = createWorker({
    transport,
    workerId: 'w1',
    queue: 'q',
    concurrency: 2,
    pollMs: 20,
    maxPollMs: 100,
    handleSignals: false,
    logger: quiet,
    async handler(ctx) {
      if (ctx.job.payload === 'block') {
        const end = Date.now() + 1_200;
        while (Date.now() < end) {
          // CPU-bound work on the event loop.
        }
        return 'done';
      }
      // Held until the operator takes it away.
      await new Promise<void>((r) => {
        release = r;
        ctx.signal.addEventListener('abort', () => r());
      });
    },
  }).start();

  await until('blocking job done', () => w!.stats.completed >= 1, 10_000);
  expect(w.stats.eventLoopBlocked).toBeGreaterThan(0);
  dropOne = true;
  await until('a heartbeat failed', () => w!.stats.heartbeatFailures >= 1, 5_000);
  // The operator takes the held job (the queue paused, so this worker does not
  // simply claim it again): the worker's next heartbeat is refused.
  expect((await t.post('/api/v1/queues/q/pause', {})).status).toBe(200);
  expect((await t.post(`/api/v1/jobs/${lost.id}/requeue`, { force: true, reason: 'test' })).status).toBe(200);
  await until('lease lost', () => w!.stats.leaseLost >= 1, 5_000);
  release();

  let reported: Record<string, number | null> | null = null;
  await until(
    'the counters reach the registry',
    async () => {
      reported = (await registry()).find((x) => x.id === 'w1')?.counters ?? null;
      return !!reported && reported.leasesLost === 1 && reported.heartbeatFailures! >= 1;
    },
    5_000,
  );
  expect(reported!.eventLoopBlocks).toBe(w.stats.eventLoopBlocked);
  expect(reported!.longestEventLoopBlockMs).toBeGreaterThan(500);
  expect(reported!.longestEventLoopBlockMs).toBeLessThan(5_000);

  const page = await t.get('/dashboard/live/workers');
  expect(page.status).toBe(200);
  expect(page.text).toMatch(/<td class="warn loop-blocks">\d+ \(longest [\d.]+ s\)<\/td>/);
  expect(page.text).toContain('Leases lost');
});

test('a beat without counters (an older SDK) works and shows none; bad counters are a 400 naming the field and change nothing', async () => {
  t = await setup();
  expect((await t.post('/api/v1/workers/beat', { workerId: 'old', runningCount: 0 })).status).toBe(200);
  expect((await registry())[0]!.counters).toBeNull();
  expect((await t.get('/dashboard/live/workers')).text).toContain('<td class="loop-blocks">—</td>');

  const good = { workerId: 'new', instanceId: 'i-1', eventLoopBlocks: 2, longestEventLoopBlockMs: 1500, heartbeatFailures: 0, leasesLost: 1 };
  expect((await t.post('/api/v1/workers/beat', good)).status).toBe(200);
  for (const [field, value] of [
    ['eventLoopBlocks', -1],
    ['longestEventLoopBlockMs', 1.5],
    ['heartbeatFailures', '3'],
    ['leasesLost', 1e12],
    ['longestEventLoopBlockMs', 25 * 3600 * 1000],
  ] as const) {
    const res = await t.post('/api/v1/workers/beat', { ...good, eventLoopBlocks: 9, [field]: value });
    expect(res.status, field).toBe(400);
    expect(res.json.error.field, field).toBe(field);
  }
  const row = (await registry()).find((x) => x.id === 'new')!;
  expect(row.counters).toEqual({ eventLoopBlocks: 2, longestEventLoopBlockMs: 1500, heartbeatFailures: 0, leasesLost: 1 });

  // The same process beating without them keeps the last values; a new process under the id starts afresh.
  await t.post('/api/v1/workers/beat', { workerId: 'new', instanceId: 'i-1' });
  expect((await registry()).find((x) => x.id === 'new')!.counters).toEqual(row.counters);
  await t.post('/api/v1/workers/beat', { workerId: 'new', instanceId: 'i-2' });
  expect((await registry()).find((x) => x.id === 'new')!.counters).toBeNull();
});
