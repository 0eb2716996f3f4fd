/**
 * LEASEHOLD_REQUEST_LOG: which requests get a line. By default a worker's
 * routine calls that succeed go at debug, so an info log of a busy server
 * says what is worth reading; `all` logs every request at info, `errors`
 * only refusals, failures and slow requests, `off` nothing.
 */
import { Hono } from 'hono';
import { afterEach, expect, test } from 'vitest';
import { requestLog, SLOW_MS } from '../../src/api/request-log.ts';
import { databaseClock } from '../../src/core/clock.ts';
import { ConfigError, defaultConfig, loadConfig, type Config } from '../../src/core/config.ts';
import { createLogger, type LogRecord } from '../../src/core/log.ts';
import { startServer, type RunningServer } from '../../src/runtime/node.ts';
import { createWorker, httpTransport } from '../../src/worker/index.ts';
import { recordingLogger, setup, type TestBed } from '../support/helpers.ts';
import { until } from '../support/until.ts';

let t: TestBed | undefined;
let server: RunningServer | undefined;
afterEach(async () => {
  await server?.close();
  t?.close();
  server = t = undefined;
});

const requestLines = (logs: LogRecord[], level?: string) => logs.filter((r) => typeof r.status === 'number' && (level === undefined || r.level === level));

test('121 jobs through an SDK worker, one call each: no info request line for its calls, each still there at debug', async () => {
  t = await setup({}, { realClock: databaseClock });
  const logs: LogRecord[] = [];
  server = await startServer(defaultConfig({ databaseUrl: t.url, port: 0 }), { reaper: false, log: recordingLogger(logs) });
  expect((await t.post('/api/v1/queues/q/jobs', { jobs: Array.from({ length: 121 }, (_, i) => ({ payload: i })) })).status).toBe(201);
  const w = createWorker({ transport: httpTransport({ url: server.url }), queue: 'q', claimAhead: 0, handleSignals: false, logger: { info() {}, warn() {}, error() {} }, handler: () => 'ok' }).start();
  await until('121 jobs done', () => w.stats.completed >= 121, 30_000);
  await w.close();
  const all = requestLines(logs);
  // Every request still has its line, at debug...
  expect(all.length).toBeGreaterThanOrEqual(121);
  // ...and none of the worker's successful calls is at info.
  expect(requestLines(logs, 'info').filter((r) => r.route !== undefined && String(r.route) !== '/api/v1/queues/:queue/jobs')).toEqual([]);
  expect(requestLines(logs, 'warn')).toEqual([]);
}, 60_000);

async function cycle(mode: Config['requestLog']) {
  t = await setup({ requestLog: mode });
  await t.enqueue('q');
  const [job] = await t.claim('q', 'w1');
  await t.post('/api/v1/heartbeats', { workerId: 'w1', leases: [{ id: job!.id, lockToken: job!.lockToken }] });
  await t.post(`/api/v1/jobs/${job!.id}/complete`, { workerId: 'w1', lockToken: 'f'.repeat(32) });
  await t.post(`/api/v1/jobs/${job!.id}/complete`, { workerId: 'w1', lockToken: job!.lockToken });
  await t.get('/api/v1/queues');
  const lines = requestLines(t.logs).map((r) => `${r.level} ${r.method} ${r.route} ${r.status}`);
  t.close();
  t = undefined;
  return lines;
}

test('each mode: standard puts routine successes at debug, all at info, errors keeps only refusals, off logs none', async () => {
  expect(await cycle('standard')).toEqual([
    'info POST /api/v1/queues/:queue/jobs 201',
    'debug POST /api/v1/queues/:queue/claim 200',
    'debug POST /api/v1/heartbeats 200',
    'warn POST /api/v1/jobs/:id/complete 409',
    'debug POST /api/v1/jobs/:id/complete 200',
    'info GET /api/v1/queues 200',
  ]);
  expect(await cycle('all')).toEqual([
    'info POST /api/v1/queues/:queue/jobs 201',
    'info POST /api/v1/queues/:queue/claim 200',
    'info POST /api/v1/heartbeats 200',
    'warn POST /api/v1/jobs/:id/complete 409',
    'info POST /api/v1/jobs/:id/complete 200',
    'info GET /api/v1/queues 200',
  ]);
  expect(await cycle('errors')).toEqual(['warn POST /api/v1/jobs/:id/complete 409']);
  expect(await cycle('off')).toEqual([]);
});

test('a slow routine call is at info, marked slow; a claim waiting for work is not slow', async () => {
  const logs: LogRecord[] = [];
  const log = createLogger({ level: 'debug', sink: (r) => logs.push(r) });
  let clock = 0;
  const app = new Hono();
  app.use('*', requestLog(log, defaultConfig(), { routine: new Set(['/beat', '/claim']), now: () => clock }));
  app.post('/beat', (c) => ((clock += SLOW_MS), c.json({})));
  app.post('/claim', (c) => ((clock += 5 * SLOW_MS), c.json({})));
  await app.request('/beat', { method: 'POST' });
  await app.request('/claim', { method: 'POST' });
  expect(logs.map((r) => [r.level, r.route, r.slow])).toEqual([
    ['info', '/beat', true],
    ['debug', '/claim', undefined],
  ]);
});

test('a bad LEASEHOLD_REQUEST_LOG is refused naming it', () => {
  expect(() => loadConfig({ LEASEHOLD_REQUEST_LOG: 'verbose' })).toThrow(ConfigError);
  expect(() => loadConfig({ LEASEHOLD_REQUEST_LOG: 'verbose' })).toThrow(/LEASEHOLD_REQUEST_LOG.*standard, all, errors, off/);
  expect(loadConfig({}, ['--request-log', 'all']).config.requestLog).toBe('all');
});
