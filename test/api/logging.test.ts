/**
 * Logs an operator can use: one record per request (request id, method,
 * route pattern, status, duration, job id and queue), one per notable event
 * (a job reaped, an alert), JSON lines when stdout is not a terminal and text
 * when it is, LEASEHOLD_LOG_LEVEL, and no secret in any of it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { loadConfig, ConfigError } from '../../src/core/config.ts';
import { createLogger, type LogRecord } from '../../src/core/log.ts';
import { formatText, streamLogger } from '../../src/runtime/log.ts';
import { makeReaperPass } from '../../src/runtime/reaper-timer.ts';
import { recordingLogger, setup, type TestBed, appOn } from '../support/helpers.ts';
import { startServerProcess, type ServerProcess } from '../support/process-helpers.ts';

let t: TestBed;
beforeEach(async () => {
  t = await setup();
});
afterEach(() => t.close());

const requestLines = () => t.logs.filter((r) => typeof r.status === 'number');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

test('an enqueue is one record with time, level, message, request id, method, route, status, duration, job id and queue', async () => {
  const res = await t.app.request('/api/v1/queues/email/jobs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"payload":{}}' });
  expect(res.status).toBe(201);
  const job = ((await res.json()) as { job: { id: string } }).job;
  const lines = requestLines();
  expect(lines).toHaveLength(1);
  const line = lines[0]!;
  expect(line).toMatchObject({
    level: 'info',
    method: 'POST',
    route: '/api/v1/queues/:queue/jobs',
    status: 201,
    jobId: job.id,
    queue: 'email',
    requestId: res.headers.get('x-request-id'),
  });
  expect(line.requestId).toMatch(UUID);
  expect(Date.parse(line.time)).not.toBeNaN();
  expect(line.msg).toBe('POST /api/v1/queues/:queue/jobs 201');
  expect(line.durationMs).toEqual(expect.any(Number));
});

test("a sane x-request-id is kept and echoed; a missing or odd one is replaced by a new id", async () => {
  const kept = await t.app.request('/api/v1/queues', { headers: { 'x-request-id': 'trace-123.abc:9' } });
  expect(kept.headers.get('x-request-id')).toBe('trace-123.abc:9');
  expect(requestLines().at(-1)!.requestId).toBe('trace-123.abc:9');

  for (const odd of ['has spaces', 'x'.repeat(129), 'quote"d', '']) {
    const res = await t.app.request('/api/v1/queues', { headers: { 'x-request-id': odd } });
    const id = res.headers.get('x-request-id')!;
    expect(id, JSON.stringify(odd)).toMatch(UUID);
    expect(requestLines().at(-1)!.requestId).toBe(id);
  }
  // Each request gets its own.
  const a = (await t.app.request('/healthz')).headers.get('x-request-id');
  const b = (await t.app.request('/healthz')).headers.get('x-request-id');
  expect(a).toMatch(UUID);
  expect(a).not.toBe(b);
});

test('the route is the matched pattern, never the raw path; refusals carry their error code at warn', async () => {
  await t.get('/api/v1/jobs/987654');
  expect(requestLines().at(-1)).toMatchObject({ level: 'warn', route: '/api/v1/jobs/:id', status: 404, jobId: '987654', error: 'not_found' });
  expect(JSON.stringify(requestLines().at(-1))).not.toContain('/api/v1/jobs/987654');

  const job = await t.enqueue('q');
  const [claimed] = await t.claim('q', 'w1');
  expect(requestLines().at(-1)).toMatchObject({ route: '/api/v1/queues/:queue/claim', queue: 'q', jobId: job.id, status: 200 });
  await t.post(`/api/v1/jobs/${job.id}/complete`, { workerId: 'w1', lockToken: 'not-the-token' });
  expect(requestLines().at(-1)).toMatchObject({ level: 'warn', route: '/api/v1/jobs/:id/complete', jobId: job.id, status: 409, error: 'lease_lost' });
  await t.post(`/api/v1/jobs/${job.id}/complete`, { workerId: 'w1', lockToken: claimed!.lockToken });
  // A worker's routine call that succeeded: debug (LEASEHOLD_REQUEST_LOG=standard).
  expect(requestLines().at(-1)).toMatchObject({ level: 'debug', route: '/api/v1/jobs/:id/complete', status: 200 });

  // Refused before the handler ran (the body limit): still named by its route.
  await t.post('/api/v1/queues/q/jobs', { payload: 'x'.repeat(t.config.maxPayloadBytes) });
  expect(requestLines().at(-1)).toMatchObject({ level: 'warn', route: '/api/v1/queues/:queue/jobs', status: 413, queue: 'q', error: 'payload_too_large' });

  // No route matched: the path stands in.
  await t.get('/nowhere/at/all');
  expect(requestLines().at(-1)).toMatchObject({ status: 404, path: '/nowhere/at/all' });
  expect(requestLines().at(-1)).not.toHaveProperty('route');
});

test('/healthz is logged at debug, a 500 at error with the stack on its own record', async () => {
  await t.get('/healthz');
  expect(requestLines().at(-1)).toMatchObject({ level: 'debug', route: '/healthz', status: 200 });

  await t.client.execute('ALTER TABLE jobs RENAME TO jobs_gone');
  const res = await t.app.request('/api/v1/jobs/1', { headers: { 'x-request-id': 'broken-1' } });
  expect(res.status).toBe(500);
  expect(await res.text()).not.toMatch(/jobs|SQL/i);
  expect(requestLines().at(-1)).toMatchObject({ level: 'error', status: 500, requestId: 'broken-1', error: 'internal' });
  const unexpected = t.logs.find((r) => r.msg === 'unexpected error')!;
  expect(unexpected).toMatchObject({ level: 'error', requestId: 'broken-1' });
  expect((unexpected.error as { stack: string }).stack).toMatch(/no such table|jobs/);
  t.errors.length = 0; // expected here
});

test('tokens never reach a record: secret-named fields, bearer tokens in text, credentials in URLs', async () => {
  const token = 'sekrit-token-value-0123456789';
  const records: LogRecord[] = [];
  const log = createLogger({ sink: (r) => records.push(r) });
  log.info(`refused Authorization: Bearer ${token}`, {
    authorization: `Bearer ${token}`,
    adminToken: token,
    nested: { headers: { cookie: token, 'x-api-key': 'k' }, url: `libsql://user:${token}@db.example` },
    lockToken: 'shown: it fences, it does not authenticate',
    error: new Error(`upstream said Bearer ${token}`),
  });
  const text = JSON.stringify(records);
  expect(text).not.toContain(token);
  expect(records[0]).toMatchObject({ authorization: '[redacted]', adminToken: '[redacted]', lockToken: 'shown: it fences, it does not authenticate' });
  expect(records[0]!.msg).toBe('refused Authorization: Bearer [redacted]');

  // Through the app: a refused token is logged as a refusal, without the token.
  const secured = await setup({ workerToken: 'w'.repeat(20), adminToken: 'a'.repeat(20) });
  try {
    const res = await secured.app.request('/api/v1/queues', { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(401);
    expect(secured.logs.at(-1)).toMatchObject({ level: 'warn', status: 401, error: 'unauthorized', route: '/api/v1/queues' });
    expect(JSON.stringify(secured.logs)).not.toContain(token);
  } finally {
    secured.close();
  }
});

test('a reap is one warn record naming the job, queue, worker and reason, then the summary', async () => {
  const records: LogRecord[] = [];
  const job = await t.enqueue('mail');
  await t.claim('mail', 'w-gone');
  t.clock.advance(t.config.leaseMs + t.config.graceMs + 1);
  // No gap watch: a fresh pass would otherwise hold expired leases for heartbeat + grace (src/runtime/gap-watch.ts).
  const noGap = false;
  await makeReaperPass(t.engine, recordingLogger(records), noGap)();
  const reap = records.find((r) => r.event === 'reap')!;
  expect(reap).toMatchObject({ level: 'warn', action: 'requeue', jobId: job.id, queue: 'mail', workerId: 'w-gone', reason: 'reaped_due_to_expired_lease' });
  expect(reap.msg).toContain(`job ${job.id}`);
  expect(records.find((r) => r.event === 'reaper_pass')).toMatchObject({ level: 'info', requeued: 1, msg: expect.stringContaining('reaper: requeued 1') });

  // A quiet pass says nothing.
  records.length = 0;
  await makeReaperPass(t.engine, recordingLogger(records), noGap)();
  expect(records).toEqual([]);
});

test('LEASEHOLD_LOG_LEVEL drops what is below it; LEASEHOLD_LOG_FORMAT picks json or text; bad values are refused', () => {
  const written: string[] = [];
  const stream = (isTTY: boolean) => ({ isTTY, write: (s: string) => written.push(s) });

  const { config } = loadConfig({ LEASEHOLD_LOG_LEVEL: 'warn' });
  const warnOnly = streamLogger({ level: config.logLevel, format: config.logFormat, stream: stream(false) });
  warnOnly.debug('d');
  warnOnly.info('i');
  warnOnly.warn('w', { jobId: '7' });
  warnOnly.error('e');
  expect(written.map((l) => JSON.parse(l).msg)).toEqual(['w', 'e']);
  expect(JSON.parse(written[0]!)).toMatchObject({ level: 'warn', jobId: '7' });
  expect(written.every((l) => l.endsWith('\n') && l.indexOf('\n') === l.length - 1)).toBe(true);

  // auto: text on a terminal, JSON otherwise; an explicit format wins.
  written.length = 0;
  streamLogger({ stream: stream(true) }).info('GET /healthz 200', { requestId: 'r1', route: '/healthz', durationMs: 1.5 });
  expect(written[0]).toMatch(/^\d{2}:\d{2}:\d{2}\.\d{3} INFO  GET \/healthz 200 requestId=r1 route=\/healthz durationMs=1\.5\n$/);
  written.length = 0;
  streamLogger({ stream: stream(true), format: loadConfig({ LEASEHOLD_LOG_FORMAT: 'json' }).config.logFormat }).info('x');
  expect(JSON.parse(written[0]!)).toMatchObject({ level: 'info', msg: 'x' });
  written.length = 0;
  streamLogger({ stream: stream(false), format: 'text' }).info('x', { note: 'two words' });
  expect(written[0]).toContain('INFO  x note="two words"');

  expect(formatText({ time: '2030-01-01T00:00:00.000Z', level: 'error', msg: 'boom', error: { message: 'm', stack: 'Error: m\n    at f (x.ts:1:1)' } })).toBe(
    '00:00:00.000 ERROR boom error={"message":"m"}\n    Error: m\n        at f (x.ts:1:1)',
  );

  expect(() => loadConfig({ LEASEHOLD_LOG_LEVEL: 'verbose' })).toThrow(ConfigError);
  expect(() => loadConfig({}, ['--log-format', 'xml'])).toThrow(/LEASEHOLD_LOG_FORMAT: must be auto, json or text/);
  expect(loadConfig({}, ['--log-level', 'debug']).config.logLevel).toBe('debug');
});

/** A real `leasehold serve` with stdout piped (not a terminal): JSON lines. */
describe('a real server', () => {
  let dir: string;
  let server: ServerProcess;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'leasehold-logging-'));
    server = await startServerProcess(['--database-url', `file:${join(dir, 'logs.db')}`]);
  });
  afterAll(async () => {
    server?.child.kill('SIGTERM');
    await server?.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  test('a real server on a pipe writes JSON lines: the start line, then one per request with its request id', async () => {
    const res = await fetch(`${server.url}/api/v1/queues/q/jobs`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': 'from-the-caller' }, body: '{"payload":1}' });
    expect(res.status).toBe(201);
    expect(res.headers.get('x-request-id')).toBe('from-the-caller');
    const { job } = (await res.json()) as { job: { id: string } };
    let lines: Record<string, unknown>[] = [];
    for (let i = 0; i < 50 && !lines.some((l) => l.requestId === 'from-the-caller'); i++) {
      await new Promise((r) => setTimeout(r, 20));
      lines = server.output().trim().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
    }
    expect(lines[0]).toMatchObject({ level: 'info', event: 'listening', url: server.url, msg: expect.stringContaining(`leasehold listening on ${server.url}`) });
    expect(lines.find((l) => l.requestId === 'from-the-caller')).toMatchObject({ method: 'POST', route: '/api/v1/queues/:queue/jobs', status: 201, jobId: job.id, queue: 'q' });
  });
});

test("the worker SDK's logger gets structured fields (workerId always; error and retry delay for a failed claim)", async () => {
  const { createWorker, httpTransport } = await import('../../src/worker/index.ts');
  const calls: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
  const at = (level: string) => (message: string, fields?: Record<string, unknown>) => calls.push({ level, message, fields });
  const w = createWorker({
    transport: httpTransport({ url: 'http://127.0.0.1:1' }),
    queue: 'q',
    workerId: 'w-fields',
    pollMs: 10,
    maxPollMs: 20,
    handleSignals: false,
    logger: { info: at('info'), warn: at('warn'), error: at('error') },
    handler: () => undefined,
  });
  w.start();
  for (let i = 0; i < 100 && !calls.some((c) => c.message.startsWith('claim failed')); i++) await new Promise((r) => setTimeout(r, 10));
  await w.close();
  const failed = calls.find((c) => c.message.startsWith('claim failed'))!;
  expect(failed.level).toBe('warn');
  expect(failed.fields).toMatchObject({ workerId: 'w-fields', error: expect.any(String), retryInMs: expect.any(Number) });
});

test('text logs escape control characters: a newline in a 404 path or a worker id, or an ANSI escape, cannot forge a line', async () => {
  const written: string[] = [];
  const text = streamLogger({ level: 'debug', format: 'text', stream: { isTTY: true, write: (s: string) => written.push(s) } });
  const json = streamLogger({ level: 'debug', format: 'json', stream: { isTTY: false, write: (s: string) => written.push(s) } });
  const app = appOn({ db: t.db, config: t.config, clock: t.clock, log: text });
  const forged = '00:00:00.000 INFO  GET /api/v1/queues 200';
  expect((await app.request(`/nothing%0a${forged.replaceAll(" ", "%20")}%0d%1b[2J%c2%9b`)).status).toBe(404);

  const job = await t.enqueue('mail');
  await t.claim('mail', `w1\n${forged}\u001b[31m`);
  t.clock.advance(t.config.leaseMs + t.config.graceMs + 1);
  await makeReaperPass(t.engine, text, false)();
  json.warn(`from w1\n${forged}\u009b`, { workerId: `w1\u2028x` });

  expect(written.length).toBeGreaterThanOrEqual(4);
  for (const line of written) {
    // One record, one line; no raw control character anywhere.
    expect(line.indexOf('\n'), line).toBe(line.length - 1);
    expect(line.slice(0, -1), line).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/);
  }
  expect(written[0]).toContain('/nothing\\n00:00:00.000 INFO  GET /api/v1/queues 200\\r\\u001b[2J\\u009b 404');
  const reap = written.find((l) => l.includes(`took job ${job.id} back`))!;
  expect(reap).toContain('from w1\\n00:00:00.000 INFO');
  expect(reap).toContain('workerId="w1\\n00:00:00.000 INFO  GET /api/v1/queues 200\\u001b[31m"');
  // JSON lines parse back to the same text.
  expect(JSON.parse(written.at(-1)!)).toMatchObject({ msg: `from w1\n${forged}\u009b`, workerId: 'w1\u2028x' });
});
