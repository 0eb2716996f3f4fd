/**
 * What the worker SDK says, against a real server on 127.0.0.1: what a close
 * waits for and how long, one line when the server goes away and one when it
 * is back (not one per heartbeat), and the heartbeat a short lease implies.
 */
import { afterEach, expect, test } from 'vitest';
import { databaseClock } from '../../src/core/clock.ts';
import { defaultConfig, type Config } from '../../src/core/config.ts';
import { silentLogger } from '../../src/core/log.ts';
import { startServer, type RunningServer } from '../../src/runtime/node.ts';
import { createWorker, httpTransport, type Worker } from '../../src/worker/index.ts';
import { setup, type TestBed } from '../support/helpers.ts';
import { until } from '../support/until.ts';

type Line = { level: string; message: string; fields?: Record<string, unknown> };

let t: TestBed | undefined;
let server: RunningServer | undefined;
let w: Worker | undefined;
afterEach(async () => {
  await w?.close({ drainTimeoutMs: 0 });
  await server?.close();
  t?.close();
  w = server = t = undefined;
});

function recorder() {
  const lines: Line[] = [];
  const at = (level: string) => (message: string, fields?: Record<string, unknown>) => void lines.push({ level, message, ...(fields ? { fields } : {}) });
  return { lines, logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } };
}

async function serve(overrides: Partial<Config> = {}, port = 0) {
  t ??= await setup(overrides, { realClock: databaseClock });
  server = await startServer(defaultConfig({ ...overrides, databaseUrl: t.url, port }), { reaper: false, log: silentLogger });
  return server;
}

test('close() says what it waits for and how long, then that the jobs finished', async () => {
  const s = await serve();
  const { lines, logger } = recorder();
  let started = false;
  w = createWorker({
    transport: httpTransport({ url: s.url }),
    queue: 'q',
    handleSignals: false,
    logger,
    async handler() {
      started = true;
      await new Promise((r) => setTimeout(r, 400));
      return 'ok';
    },
  }).start();
  const { job } = (await t!.post('/api/v1/queues/q/jobs', { payload: 1 })).json;
  await until('the handler started', () => started);
  await w.close();
  const said = lines.filter((l) => l.message.startsWith('shutting down'));
  expect(said.map((l) => l.level)).toEqual(['info', 'info']);
  expect(said[0]!.message).toBe(`shutting down: waiting up to 10 s for 1 running job(s) to finish (${job.id}); then the rest are stopped and their leases released`);
  expect(said[0]!.fields).toMatchObject({ jobIds: [job.id], drainTimeoutMs: 10_000 });
  expect(said[1]!.message).toMatch(/^shutting down: the running jobs finished in \d/);
});

test('close() that runs out of drain time says which jobs it stops and releases', async () => {
  const s = await serve();
  const { lines, logger } = recorder();
  let started = false;
  w = createWorker({
    transport: httpTransport({ url: s.url }),
    queue: 'q',
    handleSignals: false,
    logger,
    handler: (ctx) =>
      new Promise((resolve) => {
        started = true;
        ctx.signal.addEventListener('abort', () => resolve('stopped'));
      }),
  }).start();
  const { job } = (await t!.post('/api/v1/queues/q/jobs', { payload: 1 })).json;
  await until('the handler started', () => started);
  await w.close({ drainTimeoutMs: 300 });
  const warned = lines.filter((l) => l.level === 'warn' && l.message.startsWith('shutting down'));
  expect(warned.map((l) => l.message)).toEqual([`shutting down: 1 job(s) still running after 300 ms (${job.id}): stopping them and releasing their leases, so they run again at once`]);
  expect((await t!.get(`/api/v1/jobs/${job.id}`)).json.job.status).toBe('pending');
});

test('an idle worker whose server goes away logs one warning, then one line when it is back, not one per heartbeat', async () => {
  // A short lease (the server's and the worker's), so the heartbeat the SDK derives from it ticks quickly.
  const lease = { leaseMs: 1_500 };
  const first = await serve(lease);
  const port = Number(new URL(first.url).port);
  const { lines, logger } = recorder();
  w = createWorker({ transport: httpTransport({ url: first.url }), queue: 'q', ...lease, handleSignals: false, logger, handler: () => 'ok' }).start();
  await until('the worker beat once', async () => ((await t!.get('/api/v1/workers')).json.workers as unknown[]).length > 0);
  await first.close();
  server = undefined;
  await until('several heartbeats failed', () => w!.stats.heartbeatFailures >= 4, 15_000);
  server = await startServer(defaultConfig({ ...lease, databaseUrl: t!.url, port }), { reaper: false, log: silentLogger });
  await until('the worker said the server is back', () => lines.some((l) => l.message.startsWith('server answers again')), 15_000);

  const failures = lines.filter((l) => /^(heartbeat|claim) failed/.test(l.message));
  expect(failures.length).toBeGreaterThanOrEqual(4);
  // A loaded host may also stall this process's event loop past half a heartbeat, which the
  // worker rightly warns about too: that is another signal, not a failed call.
  const warnings = lines.filter((l) => l.level === 'warn' && !l.message.startsWith('event loop was blocked'));
  expect(warnings).toHaveLength(1);
  expect(warnings[0]!.message).toMatch(/^(heartbeat|claim) failed \(.+\).*: calls to the server are failing; the worker keeps trying/);
  expect(warnings[0]!.message).not.toContain('(none)');
  expect(failures.filter((l) => l.level === 'debug')).toHaveLength(failures.length - 1);
  const back = lines.filter((l) => l.message.startsWith('server answers again'));
  expect(back).toHaveLength(1);
  expect(back[0]!.level).toBe('info');
  expect(back[0]!.fields).toMatchObject({ failures: failures.length });
}, 40_000);

test('an idle worker with the default settings tries a failed claim again at most 2 s later, and takes a job soon after its server is back', async () => {
  const first = await serve();
  const port = Number(new URL(first.url).port);
  const { lines, logger } = recorder();
  const handled: string[] = [];
  w = createWorker({ transport: httpTransport({ url: first.url }), queue: 'q', handleSignals: false, logger, handler: (ctx) => void handled.push(ctx.job.id) }).start();
  await until('the worker beat once', async () => ((await t!.get('/api/v1/workers')).json.workers as unknown[]).length > 0);
  await first.close();
  server = undefined;
  const claimFailures = () => lines.filter((l) => l.message.startsWith('claim failed'));
  // The idle poll doubles to 10 s; a failed claim's retry stops doubling at 2 s (the third try would have waited 4 s).
  await until('three claims failed', () => claimFailures().length >= 3, 15_000);
  expect(claimFailures().slice(0, 3).map((l) => l.fields?.retryInMs)).toEqual([1_000, 2_000, 2_000]);
  server = await startServer(defaultConfig({ databaseUrl: t!.url, port }), { reaper: false, log: silentLogger });
  const { job } = (await t!.post('/api/v1/queues/q/jobs', { payload: 1 })).json;
  await until('the job ran', () => handled.includes(job.id), 5_000);
}, 40_000);

test('a leaseMs without a heartbeatMs: the heartbeat is a third of the lease, and the worker says so', async () => {
  const s = await serve({ leaseMs: 1_500 });
  const { lines, logger } = recorder();
  const transport = httpTransport({ url: s.url });
  let beats = 0;
  w = createWorker({
    transport: { ...transport, heartbeat: (p, o) => (beats++, transport.heartbeat(p, o)) },
    queue: 'q',
    leaseMs: 1_500,
    handleSignals: false,
    logger,
    handler: () => 'ok',
  }).start();
  expect(lines.find((l) => l.message.startsWith('heartbeat every'))).toMatchObject({ level: 'info', message: 'heartbeat every 500 ms: heartbeatMs not given, a third of leaseMs (1500 ms)' });
  // An idle worker beats at that pace from the start, not every 5 s.
  await until('three beats', () => beats >= 3, 4_000);
});
