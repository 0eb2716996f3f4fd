/**
 * What one connection may hold on the Bun server (`bun src/cli/bun.ts serve`,
 * default settings), on a real loopback port: a client pipelining 500
 * requests without reading is closed long before it gets them all, a socket
 * that sends no request is closed after LEASEHOLD_HEADERS_TIMEOUT_MS (Bun's
 * idleTimeout), and a claim waiting longer than that is still answered.
 * Bun does the pacing itself; see docs/deploy-bun.md.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { defaultConfig } from '../../src/core/config.ts';
import { untilListening } from '../support/process-helpers.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const BUN = join(ROOT, 'node_modules', '.bin', 'bun');
const DEFAULTS = defaultConfig();

let dir: string;
let child: ChildProcess;
let url: string;
let port: number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-bun-conns-'));
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('LEASEHOLD_'))) as Record<string, string>;
  child = spawn(BUN, [join(ROOT, 'src', 'cli', 'bun.ts'), 'serve', '--port', '0', '--database-url', `file:${join(dir, 'x.db')}`], { cwd: ROOT, env: { ...env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  url = (await untilListening(child, 'bun', 30_000)).url;
  port = Number(new URL(url).port);
}, 40_000);
afterAll(() => {
  child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

function rawSocket(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    socket.pause();
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });
}

function readToClose(socket: Socket): Promise<number[]> {
  return new Promise((resolve) => {
    let text = '';
    socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
    socket.on('error', () => {});
    socket.on('close', () => resolve([...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]))));
    socket.resume();
  });
}

test('a client pipelining 500 requests without reading is closed before it gets them all; others are served', async () => {
  const socket = await rawSocket();
  socket.write(`GET /api/v1/openapi.json HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`.repeat(500));
  await new Promise((r) => setTimeout(r, 1_000));
  const statuses = await readToClose(socket);
  expect(statuses.length).toBeLessThan(500);
  expect((await fetch(`${url}/healthz`)).status).toBe(200);
}, 30_000);

test('a socket that sends no request is closed after the headers timeout; a claim waiting longer is answered', async () => {
  const waitMs = DEFAULTS.headersTimeoutMs + 5_000;
  const claim = fetch(`${url}/api/v1/queues/q/claim`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ workerId: 'w', waitMs }) });
  const socket = await rawSocket();
  const opened = Date.now();
  await readToClose(socket);
  const heldMs = Date.now() - opened;
  expect(heldMs).toBeGreaterThanOrEqual(DEFAULTS.headersTimeoutMs - 1_000);
  expect(heldMs).toBeLessThan(DEFAULTS.headersTimeoutMs + 5_000);
  const answer = await claim;
  expect(answer.status).toBe(200);
  expect(await answer.json()).toEqual({ jobs: [] });
}, 40_000);
