/**
 * A job with onLost 'hold' is never run again without a person, on every
 * path by which its attempt loses its lease, checked from outside: a real
 * server on a loopback port (its in-process reaper), real SDK workers over
 * HTTP whose handlers honour ctx.signal, the fault proxy for a worker cut
 * off. Each case waits until the first attempt ended, checks the job is held
 * with the event that says why, lets the reaper pass more times while
 * another worker polls the queue, and checks nobody ran it again.
 *
 * - deadline: the SDK's own timer stops the handler at timeoutMs; the
 *   failure it sends is held (deadline_held), on the server's defaults;
 * - cut off (the worker's requests pass, its answers are held): it fences
 *   itself (lease_expired_locally); the failure it sends is held
 *   (lost_attempt_held) and the worker beside it never gets the job;
 * - an operator's force: held (requeue_held); the worker's next heartbeat is
 *   refused (lease_lost) and it sends nothing;
 * - the owner check says the process is gone while the worker is cut off
 *   both ways: the reaper holds it, and the failure the worker sends once
 *   the link heals is refused (lease_lost).
 * A kill is held-jobs.test.ts; the store's side of each path is in
 * test/store/conformance/held.conformance.ts.
 */
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { startProxy, type Proxy } from '../../tools/chaos/proxy.ts';
import { defaultConfig, type Config } from '../../src/core/config.ts';
import { silentLogger } from '../../src/core/log.ts';
import { startServer, type RunningServer } from '../../src/runtime/node.ts';
import { JobAbortedError } from '../../src/worker/errors.ts';
import { createWorker, httpTransport, type Worker } from '../../src/worker/index.ts';
import { postJson } from '../support/process-helpers.ts';
import { until } from '../support/until.ts';

/** The cut-off cases' timings (as stalled-connection.test.ts): lease, heartbeat and grace shortened together, the SDK deriving its own. */
const SHORT: Partial<Config> = { leaseMs: 6_000, heartbeatMs: 2_000, graceMs: 2_000, reaperIntervalMs: 500, workerAliveMs: 4_000, maxReapDeferMs: 2_000 };

let dir: string;
const cleanups: (() => Promise<void> | void)[] = [];
/** Per job id: each run of a handler, by worker, with the reason its signal was aborted. */
let runs: Map<string, { worker: string; attempt: number; aborted?: string }[]>;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-held-paths-'));
  runs = new Map();
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  rmSync(dir, { recursive: true, force: true });
});

async function serve(config: Partial<Config>): Promise<RunningServer> {
  const server = await startServer(defaultConfig({ ...config, databaseUrl: `file:${join(dir, 'q.db')}`, host: '127.0.0.1', port: 0 }), { log: silentLogger });
  cleanups.push(() => server.close());
  return server;
}

const quiet = { info() {}, warn() {}, error() {} };

/** A worker with the SDK's defaults whose handler waits for its signal (or `ms`) and honours it. */
function startWorker(url: string, workerId: string, ms = Infinity): Worker {
  const w = createWorker({
    transport: httpTransport({ url }),
    queue: 'q',
    workerId,
    handleSignals: false,
    logger: quiet,
    handler: (ctx) =>
      new Promise((resolve, reject) => {
        const run: { worker: string; attempt: number; aborted?: string } = { worker: workerId, attempt: ctx.job.attempt };
        runs.set(ctx.job.id, [...(runs.get(ctx.job.id) ?? []), run]);
        if (Number.isFinite(ms)) setTimeout(() => resolve(`done by ${workerId}`), ms);
        ctx.signal.addEventListener('abort', () => {
          run.aborted = ctx.signal.reason instanceof JobAbortedError ? ctx.signal.reason.reason : String(ctx.signal.reason);
          reject(ctx.signal.reason);
        });
      }),
  });
  cleanups.push(() => w.close({ drainTimeoutMs: 0 }));
  return w.start();
}

async function enqueue(server: RunningServer, body: Record<string, unknown>): Promise<string> {
  const res = await postJson(`${server.url}/api/v1/queues/q/jobs`, { payload: {}, onLost: 'hold', ...body });
  expect(res.status).toBe(201);
  return res.json.job.id as string;
}

type Timeline = { job: Record<string, any>; events: { type: string; reason: string | null; message: string | null; workerId: string | null }[] };
const read = async (server: RunningServer, id: string) => (await (await fetch(`${server.url}/api/v1/jobs/${id}`)).json()) as Timeline;
const passes = async (server: RunningServer) => ((await (await fetch(`${server.url}/api/v1/metrics`)).json()) as { maintenance: { passes: number } }).maintenance.passes;

/** The first attempt's end: the first event after its claim that took the job from it. */
async function firstAttemptEnded(server: RunningServer, id: string, timeoutMs: number) {
  const ends = new Set(['held', 'retry_scheduled', 'failed', 'reaped', 'released']);
  let last: Timeline | undefined;
  await until('the first attempt ended', async () => (last = await read(server, id)).events.some((e) => ends.has(e.type)), timeoutMs, () => JSON.stringify(last));
  return read(server, id);
}

/** Held, with `reason`, never retried; and after `more` reaper passes with a worker polling, still held and run once. */
async function expectHeldAndNotRunAgain(server: RunningServer, id: string, reason: string, more: number) {
  const { job, events } = await read(server, id);
  const types = events.map((e) => e.type);
  expect(types).not.toContain('retry_scheduled');
  expect(events.find((e) => e.type === 'held')).toMatchObject({ reason });
  expect(job).toMatchObject({ status: 'pending', attempt: 1, lostAttempt: { attempt: 1 } });
  expect(job.heldAt).not.toBeNull();
  const from = await passes(server);
  await until(`${more} more maintenance passes`, async () => (await passes(server)) >= from + more, 30_000);
  expect(runs.get(id)?.length).toBe(1);
  expect((await read(server, id)).job).toMatchObject({ status: 'pending', attempt: 1 });
  expect((await read(server, id)).events.filter((e) => e.type === 'claimed')).toHaveLength(1);
}

test("deadline, on the server's defaults: the handler stopped at timeoutMs reports its failure, and the job is held (deadline_held), not run again", async () => {
  const server = await serve({});
  const id = await enqueue(server, { timeoutMs: 2_000 });
  startWorker(server.url, 'w1');
  const ended = await firstAttemptEnded(server, id, 15_000);
  expect(runs.get(id)).toEqual([{ worker: 'w1', attempt: 1, aborted: 'deadline_exceeded' }]);
  expect(ended.events.find((e) => e.type === 'held')).toMatchObject({ reason: 'deadline_held', workerId: 'w1' });
  expect(ended.job.lostAttempt.why).toContain('deadline_exceeded');
  await expectHeldAndNotRunAgain(server, id, 'deadline_held', 2);
}, 40_000);

test('cut off (its requests pass, its answers are held): the worker fences itself, the failure it sends holds the job, and the worker beside it never gets it', async () => {
  const server = await serve(SHORT);
  const proxy: Proxy = await startProxy(() => Number(new URL(server.url).port));
  const id = await enqueue(server, {});
  startWorker(`http://127.0.0.1:${proxy.port}`, 'cut-off');
  await until('A runs the job', () => runs.has(id));
  // Longer than the test: the link heals only when the proxy closes (closed before the workers).
  void proxy.partition('stall_answers', 60_000);
  startWorker(server.url, 'beside', 100);
  const ended = await firstAttemptEnded(server, id, 20_000);
  cleanups.push(() => proxy.close());
  expect(runs.get(id)).toEqual([{ worker: 'cut-off', attempt: 1, aborted: 'lease_expired_locally' }]);
  expect(ended.events.find((e) => e.type === 'held')).toMatchObject({ reason: 'lost_attempt_held', workerId: 'cut-off' });
  expect(ended.job.lostAttempt.why).toContain('lease_expired_locally');
  await expectHeldAndNotRunAgain(server, id, 'lost_attempt_held', 6);
  // A person releases it: the worker beside runs it once more, and completes it.
  const released = await postJson(`${server.url}/api/v1/jobs/${id}/held/release`, { reason: 'the bank has no record of the charge' });
  expect(released.status).toBe(200);
  await until('completed', async () => (await read(server, id)).job.status === 'completed', 15_000);
  expect((await read(server, id)).job).toMatchObject({ attempt: 2, result: 'done by beside' });
}, 60_000);

test("cut off, on the server's and the SDK's defaults (lease 30 s): the worker fences itself, and the failure it sends holds the job, never run again", async () => {
  // The test above runs the same fault on short timings to also release the job in time. On the
  // defaults a release can take up to lease + grace + maxReapDeferMs to reach the worker beside:
  // the cut-off worker's own waiting claim may take the released job, and its lost answer keeps
  // the lease for that long (its owner still looks alive).
  const server = await serve({});
  const proxy: Proxy = await startProxy(() => Number(new URL(server.url).port));
  cleanups.push(() => proxy.close());
  const id = await enqueue(server, {});
  startWorker(`http://127.0.0.1:${proxy.port}`, 'cut-off');
  await until('A runs the job', () => runs.has(id));
  void proxy.partition('stall_answers', 120_000);
  startWorker(server.url, 'beside', 100);
  const ended = await firstAttemptEnded(server, id, 60_000);
  expect(runs.get(id)).toEqual([{ worker: 'cut-off', attempt: 1, aborted: 'lease_expired_locally' }]);
  expect(ended.events.find((e) => e.type === 'held')).toMatchObject({ reason: 'lost_attempt_held', workerId: 'cut-off' });
  await expectHeldAndNotRunAgain(server, id, 'lost_attempt_held', 2);
}, 120_000);

test("an operator's force, on the server's defaults: held (requeue_held); the worker's next heartbeat is refused and it sends nothing", async () => {
  const server = await serve({});
  const id = await enqueue(server, {});
  const w = startWorker(server.url, 'w1');
  await until('w1 runs the job', () => runs.has(id));
  const forced = await postJson(`${server.url}/api/v1/jobs/${id}/requeue`, { force: true, reason: 'node is being drained' });
  expect(forced.status).toBe(200);
  await until('the handler learns it lost its lease', () => runs.get(id)?.[0]?.aborted !== undefined, 15_000);
  expect(runs.get(id)).toEqual([{ worker: 'w1', attempt: 1, aborted: 'lease_lost' }]);
  expect(w.stats).toMatchObject({ leaseLost: 1, failed: 0 });
  // Its heartbeat was refused (a stale write, recorded); no failure was sent after it.
  expect((await read(server, id)).events.filter((e) => e.type === 'stale_write_rejected').map((e) => e.reason)).toEqual(['heartbeat']);
  await expectHeldAndNotRunAgain(server, id, 'requeue_held', 1);
}, 40_000);

test("the owner check says the process is gone: the reaper holds the job, and the cut-off worker's failure, once its link heals, is refused", async () => {
  const checks: Server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"state":"gone"}'));
  await new Promise<void>((r) => checks.listen(0, '127.0.0.1', r));
  cleanups.push(() => new Promise<void>((r) => checks.close(() => r())));
  const server = await serve({ ...SHORT, ownerCheckUrl: `http://127.0.0.1:${(checks.address() as { port: number }).port}/owner` });
  const proxy: Proxy = await startProxy(() => Number(new URL(server.url).port));
  cleanups.push(() => proxy.close());
  const id = await enqueue(server, {});
  startWorker(`http://127.0.0.1:${proxy.port}`, 'cut-off');
  await until('A runs the job', () => runs.has(id));
  const healed = proxy.partition('stall', 9_000);
  startWorker(server.url, 'beside', 100);
  const ended = await firstAttemptEnded(server, id, 20_000);
  expect(ended.events.find((e) => e.type === 'held')).toMatchObject({ reason: 'lost_attempt_held', message: expect.stringContaining('gone') });
  await healed;
  await until('the stale failure arrives', async () => (await read(server, id)).events.some((e) => e.type === 'stale_write_rejected'), 15_000);
  expect((await read(server, id)).events.find((e) => e.type === 'stale_write_rejected')).toMatchObject({ reason: 'fail', workerId: 'cut-off' });
  expect(runs.get(id)).toEqual([{ worker: 'cut-off', attempt: 1, aborted: 'lease_expired_locally' }]);
  await expectHeldAndNotRunAgain(server, id, 'lost_attempt_held', 4);
}, 60_000);
