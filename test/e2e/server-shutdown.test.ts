/**
 * Stopping the Node server (SIGTERM in `leasehold serve`) does not wait on
 * workers' kept-alive connections: a server with idle, polling workers used
 * to take 7.5 s to stop (15 s and more once the SDK kept its connections
 * alive through node:http), because Node's close() waits for every
 * connection to end and a polling worker never lets its connection rest.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { defaultConfig } from '../../src/core/config.ts';
import { silentLogger } from '../../src/core/log.ts';
import { SHUTDOWN_GRACE_MS, startServer, type RunningServer } from '../../src/runtime/node.ts';
import { createWorker, httpTransport, type Worker } from '../../src/worker/index.ts';

/** A small body limit, for a request refused before the app. */
const LIMIT = 4_096;

let dir: string;
let server: RunningServer;
const workers: Worker[] = [];
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-shutdown-'));
  server = await startServer(defaultConfig({ databaseUrl: `file:${join(dir, 'x.db')}`, port: 0, maxPayloadBytes: LIMIT }), { log: silentLogger, reaper: false });
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.close({ drainTimeoutMs: 0 })));
  rmSync(dir, { recursive: true, force: true });
});

/** How long `close()` took, or Infinity once it took longer than `bound`. */
async function timeClose(bound: number): Promise<number> {
  const t0 = performance.now();
  const closed = await Promise.race([server.close().then(() => true), new Promise<false>((r) => setTimeout(() => r(false), bound))]);
  return closed ? performance.now() - t0 : Infinity;
}

test('a server with polling workers on kept-alive connections stops without waiting for them', async () => {
  for (const waitMs of [0, 5_000]) {
    const worker = createWorker({ transport: httpTransport({ url: server.url }), queue: `q${waitMs}`, concurrency: 2, pollMs: 5, maxPollMs: 10, claimWaitMs: waitMs, handleSignals: false, logger: silentLogger, handler: () => null });
    workers.push(worker.start());
  }
  // Both have claimed (found nothing) a few times over their connections.
  await new Promise((r) => setTimeout(r, 300));
  // Well inside the grace period after which connections are cut: it did not need the cut.
  expect(await timeClose(SHUTDOWN_GRACE_MS * 2)).toBeLessThan(SHUTDOWN_GRACE_MS);
});

test('a request on a kept-alive connection while the server stops is answered with Connection: close, and the connection ends', async () => {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const send = (method: string, path: string, body?: unknown) =>
    new Promise<{ status: number; connection: string | undefined; port: number }>((resolve, reject) => {
      const req = request(`${server.url}${path}`, { method, agent, headers: body === undefined ? {} : { 'content-type': 'application/json' } }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, port: req.socket!.localPort! }));
      });
      req.on('error', reject).end(body === undefined ? undefined : JSON.stringify(body));
    });
  try {
    // A claim that waits for work holds the connection busy when the stop begins.
    const waiting = send('POST', '/api/v1/queues/q/claim', { workerId: 'w', waitMs: 10_000 });
    await new Promise((r) => setTimeout(r, 100));
    const closing = timeClose(SHUTDOWN_GRACE_MS * 2);
    const answered = await waiting; // the stop answers waiting claims at once
    expect(answered.status).toBe(200);
    // The next call goes on the same kept-alive connection and is told it ends there.
    const next = await send('GET', '/healthz');
    expect(next).toMatchObject({ status: 200, connection: 'close', port: answered.port });
    expect(await closing).toBeLessThan(SHUTDOWN_GRACE_MS);
  } finally {
    agent.destroy();
  }
});

test('a body over the limit sent while the server stops is refused with 413, and the stop goes on', async () => {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const post = (path: string, body: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request(`${server.url}${path}`, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode!));
        });
        req.on('error', reject).end(body);
      });
    const waiting = post('/api/v1/queues/q/claim', JSON.stringify({ workerId: 'w', waitMs: 10_000 }));
    await new Promise((r) => setTimeout(r, 100));
    const closing = timeClose(SHUTDOWN_GRACE_MS * 2);
    expect(await waiting).toBe(200);
    // Answered before the app (src/runtime/node-http.ts): the stop must not trip over its headers.
    expect(await post('/api/v1/queues/q/jobs', JSON.stringify({ payload: 'x'.repeat(LIMIT) }))).toBe(413);
    expect(await closing).toBeLessThan(SHUTDOWN_GRACE_MS);
  } finally {
    agent.destroy();
  }
});
