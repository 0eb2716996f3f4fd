/**
 * What one connection may make the Node server hold, on a real loopback port
 * with the default settings: pipelined requests are answered one at a time
 * and a bounded number may wait; a client that stops reading is closed after
 * the write timeout; a socket that sends no request is closed after the
 * headers timeout; and the honest clients (the SDK's kept-alive connections,
 * a claim waiting for work, a pipelining client within the bound) are served.
 *
 * The server's own request log counts the answers the app computed, so a
 * flood is judged by the work it caused, not by how fast anything was.
 */
import { connect, type Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { defaultConfig, type Config } from '../../src/core/config.ts';
import type { LogRecord } from '../../src/core/log.ts';
import { startServer, type RunningServer } from '../../src/runtime/node.ts';
import { createWorker, httpTransport, type Worker } from '../../src/worker/index.ts';
import { recordingLogger } from '../support/helpers.ts';
import { until } from '../support/until.ts';

const DEFAULTS = defaultConfig();

let dir: string;
let server: RunningServer;
let port: number;
let logs: LogRecord[];
const sockets: Socket[] = [];
const workers: Worker[] = [];

async function start(overrides: Partial<Config> = {}): Promise<void> {
  logs = [];
  server = await startServer(defaultConfig({ databaseUrl: `file:${join(dir, 'x.db')}`, port: 0, ...overrides }), { log: recordingLogger(logs), reaper: false });
  port = Number(new URL(server.url).port);
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-conns-'));
});

afterEach(async () => {
  await Promise.all(workers.map((w) => w.close({ drainTimeoutMs: 0 })));
  workers.length = 0;
  for (const s of sockets) s.destroy();
  sockets.length = 0;
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** How many requests to `route` the app answered (one request-log line each). */
const answered = (route: string) => logs.filter((r) => r.route === route || r.path === route).length;

/** A raw socket that reads nothing until `read()` is called. */
function rawSocket(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    sockets.push(socket);
    socket.pause();
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Reads what the server sends until it closes the connection: the status line of every answer, in order. */
function readToClose(socket: Socket): Promise<{ statuses: number[]; error?: string }> {
  return new Promise((resolve) => {
    let text = '';
    let error: string | undefined;
    socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
    socket.on('error', (e: NodeJS.ErrnoException) => (error = e.code));
    socket.on('close', () => resolve({ statuses: [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1])), ...(error ? { error } : {}) }));
    socket.resume();
  });
}

const get = (path: string, headers = '') => `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${headers}\r\n`;

test('500 requests pipelined in one write: the app answers at most the first few, and the connection is closed', async () => {
  await start();
  const socket = await rawSocket();
  socket.write(get('/api/v1/openapi.json').repeat(500));
  // Refused at once: the server answers what it took on, if anyone reads it, and closes.
  const { statuses } = await readToClose(socket);
  expect(statuses.length).toBeLessThanOrEqual(DEFAULTS.maxPipelinedRequests + 2);
  expect(answered('/api/v1/openapi.json')).toBeLessThanOrEqual(DEFAULTS.maxPipelinedRequests + 1);
  expect(logs.some((r) => r.event === 'pipelining_refused')).toBe(true);
  // The server still serves everyone else.
  expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
});

test('a pipelining client that reads gets every answer up to the bound in order, then a 429 naming the limit and the close', async () => {
  await start();
  const socket = await rawSocket();
  const sent = DEFAULTS.maxPipelinedRequests + 3;
  socket.write(Array.from({ length: sent }, (_, i) => get(`/api/v1/jobs/${i + 1}`)).join(''));
  const reading = readToClose(socket);
  const { statuses } = await reading;
  // One answered, the bound waiting behind it (404: no such job), then the refusal.
  expect(statuses).toEqual([...Array(DEFAULTS.maxPipelinedRequests + 1).fill(404), 429]);
});

test('requests pipelined within the bound are all answered, in order, and the connection stays open', async () => {
  await start();
  const socket = await rawSocket();
  let text = '';
  socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
  socket.resume();
  socket.write(get('/healthz') + get('/api/v1/jobs/7') + get('/healthz') + get('/api/v1/openapi.json'));
  await until('four answers', () => [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].length === 4);
  expect([...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]))).toEqual([200, 404, 200, 200]);
  socket.write(get('/healthz', 'Connection: close\r\n'));
  expect((await readToClose(socket)).statuses).toEqual([200]);
});

test('a client that stops reading big answers is closed after the write timeout, and the app stops working for it', async () => {
  await start();
  // One job whose answer is about 1 MiB, asked for by more pipelined requests
  // than the kernel's socket buffers can take while nobody reads.
  const payload = 'p'.repeat(DEFAULTS.maxPayloadBytes - 1024);
  const enqueued = await fetch(`${server.url}/api/v1/queues/q/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ payload }) });
  const id = ((await enqueued.json()) as { job: { id: string } }).job.id;
  const asked = DEFAULTS.maxPipelinedRequests + 1;
  const socket = await rawSocket();
  socket.write(get(`/api/v1/jobs/${id}`).repeat(asked));

  await until('the write timeout', () => logs.some((r) => r.event === 'write_timeout'), DEFAULTS.writeTimeoutMs + 15_000);
  const ran = answered('/api/v1/jobs/:id');
  expect(ran).toBeLessThan(asked);
  // What the kernel had taken still arrives; the rest never does, and the connection is gone.
  const { statuses } = await readToClose(socket);
  expect(statuses.length).toBeLessThanOrEqual(ran);
  expect(answered('/api/v1/jobs/:id')).toBe(ran);
}, 60_000);

test('a socket that sends no request is closed after the headers timeout, not the request timeout', async () => {
  await start();
  const socket = await rawSocket();
  const opened = Date.now();
  const { statuses } = await readToClose(socket);
  const heldMs = Date.now() - opened;
  expect(heldMs).toBeGreaterThanOrEqual(DEFAULTS.headersTimeoutMs - 1_000);
  expect(heldMs).toBeLessThan(DEFAULTS.requestTimeoutMs);
  // Node says why before it closes (408); nothing else is sent.
  expect(statuses.every((s) => s === 408)).toBe(true);
}, 40_000);

test('the SDK on kept-alive connections, idle past the headers timeout, and a claim waiting longer than it are served', async () => {
  await start();
  // A claim that waits for work longer than the headers timeout, answered by an enqueue.
  const waiting = fetch(`${server.url}/api/v1/queues/wait/claim`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ workerId: 'waiter', waitMs: 25_000 }),
  });
  const done: unknown[] = [];
  const worker = createWorker({ transport: httpTransport({ url: server.url }), queue: 'q', handleSignals: false, logger: { info() {}, warn() {}, error() {} }, handler: (ctx) => void done.push(ctx.job.payload) });
  workers.push(worker);
  worker.start();
  const enqueue = (queue: string, payload: unknown) =>
    fetch(`${server.url}/api/v1/queues/${queue}/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ payload }) });

  await enqueue('q', 1);
  await until('the first job done', () => done.length === 1);
  // Idle longer than the headers timeout: the SDK keeps polling and heartbeating on its connections.
  await new Promise((r) => setTimeout(r, DEFAULTS.headersTimeoutMs + 2_000));
  await enqueue('wait', 'for the waiter');
  const claimed = await waiting;
  expect(claimed.status).toBe(200);
  expect(((await claimed.json()) as { jobs: { payload: unknown }[] }).jobs.map((j) => j.payload)).toEqual(['for the waiter']);

  await enqueue('q', 2);
  await until('the second job done', () => done.length === 2);
  expect(done).toEqual([1, 2]);
  expect(logs.filter((r) => r.event === 'write_timeout' || r.event === 'pipelining_refused')).toEqual([]);
}, 60_000);
