/**
 * The Node server's limits against oversized and slow clients, on a real port:
 * a kept-alive client that sends too much gets a 413 and its next request
 * works; slow headers and slow bodies are cut off; connections are capped.
 */
import { Agent, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { silentLogger } from '../../src/core/log.ts';
import { defaultConfig } from '../../src/core/config.ts';
import { startServer, type RunningServer } from '../../src/runtime/node.ts';

const LIMIT = 1024;

let dir: string;
let server: RunningServer;
let port: number;
let agent: Agent;
const sockets: Socket[] = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-limits-'));
  server = await startServer(
    defaultConfig({ databaseUrl: `file:${join(dir, 'x.db')}`, port: 0, maxPayloadBytes: LIMIT, requestTimeoutMs: 1_000, maxConnections: 4 }),
    { log: silentLogger, reaper: false },
  );
  port = Number(new URL(server.url).port);
  agent = new Agent({ keepAlive: true, maxSockets: 1 });
});

afterEach(async () => {
  agent.destroy();
  for (const s of sockets) s.destroy();
  sockets.length = 0;
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  socketReused: boolean;
}

/** One request through the shared keep-alive agent; `chunked` sends the body without a Content-Length. */
function send(method: string, path: string, body?: string, chunked = false): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (body !== undefined && !chunked) headers['content-length'] = String(Buffer.byteLength(body));
    const req = request({ host: '127.0.0.1', port, method, path, agent, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text, socketReused: req.reusedSocket }));
    });
    req.on('error', reject);
    if (body !== undefined) {
      // Several writes, so a chunked body really arrives in chunks.
      for (let i = 0; i < body.length; i += 512) req.write(body.slice(i, i + 512));
    }
    req.end();
  });
}

const bigJob = () => JSON.stringify({ payload: 'x'.repeat(LIMIT * 3) });

async function pendingCount(): Promise<number> {
  const answer = await send('GET', '/api/v1/queues');
  const queues = JSON.parse(answer.body).queues as { name: string; counts?: { pending?: number } }[];
  return queues.reduce((n, q) => n + (q.counts?.pending ?? 0), 0);
}

/** Opens a raw socket and collects what the server sends until it closes. */
function rawSocket(): Promise<{ socket: Socket; closed: Promise<{ data: string; error?: Error }> }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    sockets.push(socket);
    let data = '';
    let error: Error | undefined;
    socket.setEncoding('utf8');
    socket.on('data', (c) => (data += c));
    socket.on('error', (e) => (error = e));
    const closed = new Promise<{ data: string; error?: Error }>((done) => socket.on('close', () => done({ data, error })));
    socket.once('connect', () => resolve({ socket, closed }));
    socket.once('error', reject);
  });
}

test('a declared body over the limit gets 413 and Connection: close, and the next request on the agent works', async () => {
  const answer = await send('POST', '/api/v1/queues/q/jobs', bigJob());
  expect(answer.status).toBe(413);
  expect(answer.headers.connection).toBe('close');
  expect(JSON.parse(answer.body).error).toMatchObject({ code: 'payload_too_large', field: 'body' });

  const next = await send('POST', '/api/v1/queues/q/jobs', JSON.stringify({ payload: 1 }));
  expect(next.status).toBe(201);
  expect(await pendingCount()).toBe(1);
});

test('a chunked body over the limit gets 413 and Connection: close, and the next request works', async () => {
  const answer = await send('POST', '/api/v1/queues/q/jobs', bigJob(), true);
  expect(answer.status).toBe(413);
  expect(answer.headers.connection).toBe('close');
  expect(JSON.parse(answer.body).error.code).toBe('payload_too_large');

  const next = await send('GET', '/healthz');
  expect(next.status).toBe(200);
  expect(await pendingCount()).toBe(0);
});

test('a chunked body under the limit is read whole and enqueued', async () => {
  const payload = 'y'.repeat(LIMIT / 2);
  const answer = await send('POST', '/api/v1/queues/q/jobs', JSON.stringify({ payload }), true);
  expect(answer.status).toBe(201);
  expect(JSON.parse(answer.body).job.payload).toBe(payload);
  expect(await pendingCount()).toBe(1);
});

test('a body under the limit keeps the connection alive', async () => {
  await send('POST', '/api/v1/queues/q/jobs', JSON.stringify({ payload: 1 }));
  const second = await send('POST', '/api/v1/queues/q/jobs', JSON.stringify({ payload: 2 }));
  expect(second.status).toBe(201);
  expect(second.socketReused).toBe(true);
});

test('the 413 reaches a client that is still sending, and the socket ends without a reset', async () => {
  const { socket, closed } = await rawSocket();
  const body = 'x'.repeat(LIMIT * 2);
  socket.write(`POST /api/v1/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
  for (let i = 0; i < body.length; i += 256) socket.write(body.slice(i, i + 256));
  const { data, error } = await closed;
  expect(error).toBeUndefined();
  expect(data).toMatch(/^HTTP\/1\.1 413 /);
  expect(data).toMatch(/connection: close/i);
  expect(data).toContain('payload_too_large');
});

test('a client that never finishes its headers is answered 408 and cut off', async () => {
  const { socket, closed } = await rawSocket();
  socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n`);
  const { data } = await closed;
  expect(data).toMatch(/^HTTP\/1\.1 408 /);
});

test('a client that stops sending its body is answered 408 and cut off, and nothing is stored', async () => {
  const { socket, closed } = await rawSocket();
  socket.write(`POST /api/v1/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"payload":`);
  const { data } = await closed;
  expect(data).toMatch(/^HTTP\/1\.1 408 /);
  expect(await pendingCount()).toBe(0);
});

test('connections over the cap are dropped, and a slot frees when one closes', async () => {
  // Three idle raw sockets plus the agent's socket fill the cap of four.
  await send('GET', '/healthz');
  const held = await Promise.all([rawSocket(), rawSocket(), rawSocket()]);
  const over = await rawSocket();
  over.socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
  const dropped = await over.closed;
  expect(dropped.data).toBe('');

  held[0].socket.destroy();
  await held[0].closed;
  const again = await rawSocket();
  again.socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`);
  expect((await again.closed).data).toMatch(/^HTTP\/1\.1 200 /);
});
