/**
 * The first minute of running leasehold: a start line that says where and how,
 * one clear line (exit 1) for a port in use or an unreachable database, and
 * workers (SDK, `leasehold work`, the Python example) that stop when their
 * token is refused instead of retrying forever.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createWorker, httpTransport, TokenRefusedError } from '../../src/worker/index.ts';
import { startServerProcess, type ServerProcess } from '../support/process-helpers.ts';
import { until } from '../support/until.ts';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'leasehold.js');
const PY_WORKER = join(import.meta.dirname, '..', '..', 'examples', 'python', 'worker.py');
const TOKENS = { LEASEHOLD_WORKER_TOKEN: 'w'.repeat(24), LEASEHOLD_ADMIN_TOKEN: 'a'.repeat(24) };

let dir: string;
let server: ServerProcess;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-first-minute-'));
  server = await startServerProcess(['--database-url', `file:${join(dir, 'served.db')}`], TOKENS);
});
afterAll(async () => {
  server?.child.kill('SIGTERM');
  await server?.exited;
  rmSync(dir, { recursive: true, force: true });
});

/** A port something else is listening on, and a function to free it. */
async function takenPort(): Promise<{ port: number; free: () => void }> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return { port: (s.address() as { port: number }).port, free: () => s.close() };
}

test('the start line names the URL, the dashboard, the database and the auth mode', () => {
  const line = server.output().split('\n').find((l) => l.includes('listening on'))!;
  expect(line).toContain(`dashboard ${server.url}/`);
  expect(line).toContain(`database file:${join(dir, 'served.db')}`);
  expect(line).toContain('auth: worker and admin tokens');
  expect(server.output()).not.toContain('warning');
});

test('without tokens, the start line says the API and dashboard are open', async () => {
  const open = await startServerProcess(['--database-url', `file:${join(dir, 'open.db')}`]);
  try {
    await until('the warning line', () => open.output().includes('warning'), 20_000, open.output);
    expect(open.output()).toContain('auth: none (open)');
    expect(open.output()).toMatch(/warning: the worker API and the admin API and the dashboard are open to anyone who can reach http:\/\/127\.0\.0\.1:\d+; set LEASEHOLD_WORKER_TOKEN/);
  } finally {
    open.child.kill('SIGTERM');
    await open.exited;
  }
});

test('a port in use is one line and exit 1, before any migration runs', async () => {
  const { port, free } = await takenPort();
  try {
    const db = join(dir, 'never.db');
    const res = spawnSync(process.execPath, [BIN, 'serve', '--port', String(port), '--database-url', `file:${db}`], { encoding: 'utf8' });
    expect(res.status).toBe(1);
    expect(res.stderr.trim()).toBe(`leasehold: cannot listen on 127.0.0.1:${port}: the port is already in use (choose another with LEASEHOLD_PORT or --port)`);
    expect(existsSync(db)).toBe(false);
  } finally {
    free();
  }
});

test('an unreachable remote database is one line and exit 1', async () => {
  const { port, free } = await takenPort();
  free(); // nothing listens there now
  const res = spawnSync(process.execPath, [BIN, 'serve', '--port', '0', '--database-url', `http://127.0.0.1:${port}`], {
    encoding: 'utf8',
    env: { ...process.env, LEASEHOLD_DATABASE_AUTH_TOKEN: 'secret-auth-token' },
  });
  expect(res.status).toBe(1);
  const lines = res.stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(new RegExp(`^leasehold: cannot reach the database at http://127\\.0\\.0\\.1:${port}: \\S`));
  expect(res.stderr).not.toContain('secret-auth-token');
});

test('an SDK worker whose token is refused stops, with a TokenRefusedError saying so', async () => {
  const logged: string[] = [];
  const worker = createWorker({
    transport: httpTransport({ url: server.url, token: 'not-the-worker-token' }),
    queue: 'q',
    handleSignals: false,
    pollMs: 10,
    logger: { info: () => {}, warn: (m) => logged.push(m), error: (m) => logged.push(m) },
    handler: () => undefined,
  });
  const stopped = new Promise<{ error?: unknown }>((resolve) => worker.on('stopped', resolve));
  worker.start();
  const { error } = await stopped;
  expect(error).toBeInstanceOf(TokenRefusedError);
  expect((error as TokenRefusedError).status).toBe(401);
  expect(logged).toEqual([expect.stringContaining('refused the worker token (401 unauthorized')]);
});

function exitOf(command: string, args: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stderr })));
}

test('leasehold work with a refused token exits 1 saying why', async () => {
  const res = await exitOf(process.execPath, [BIN, 'work', '--queue', 'q', '--url', server.url, '--token', 'not-the-worker-token', '--', 'true']);
  expect(res.code).toBe(1);
  expect(res.stderr).toContain('refused the worker token (401');
});

test('the Python example worker with a refused token exits 1 saying why', async () => {
  const res = await exitOf('python3', [PY_WORKER, '--url', server.url, '--queue', 'q', '--token', 'not-the-worker-token']);
  expect(res.code).toBe(1);
  expect(res.stderr).toContain('leasehold refused the worker token (401 unauthorized');
});
