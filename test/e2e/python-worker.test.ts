/**
 * The any-language example: examples/python/worker.py (standard library only)
 * against a real server on loopback, through the public HTTP API alone.
 */
import { silentLogger } from '../../src/core/log.ts';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { defaultConfig } from '../../src/core/config.ts';
import { startServer, type RunningServer } from '../../src/runtime/node.ts';
import { until } from '../support/until.ts';

const WORKER = join(import.meta.dirname, '..', '..', 'examples', 'python', 'worker.py');

let dir: string;
let server: RunningServer;
const children: ChildProcess[] = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-py-'));
  server = await startServer(
    defaultConfig({
      databaseUrl: `file:${join(dir, 'x.db')}`,
      port: 0,
      leaseMs: 1500,
      heartbeatMs: 300,
      graceMs: 300,
      workerAliveMs: 600,
      maxReapDeferMs: 300,
      reaperIntervalMs: 200,
    }),
    { log: silentLogger },
  );
});

afterEach(async () => {
  for (const c of children) c.kill('SIGKILL');
  await Promise.all(children.map((c) => (c.exitCode === null && c.signalCode === null ? new Promise((r) => c.once('exit', r)) : undefined)));
  children.length = 0;
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

interface PyWorker {
  child: ChildProcess;
  events: Record<string, any>[];
  stderr: () => string;
  exited: Promise<number | null>;
}

function spawnWorker(extra: string[] = [], options: { cwd?: string } = {}): PyWorker {
  const child = spawn('python3', [WORKER, '--url', server.url, '--queue', 'py', ...extra], {
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd: options.cwd,
    env: { ...process.env, LEASEHOLD_URL: server.url },
  });
  children.push(child);
  const w: PyWorker = { child, events: [], stderr: () => err, exited: new Promise((r) => child.once('exit', (code) => r(code))) };
  let err = '';
  let buffer = '';
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  child.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      w.events.push(JSON.parse(line)); // every stdout line must be one JSON event
    }
  });
  return w;
}


async function enqueue(body: Record<string, unknown>): Promise<string> {
  const res = await fetch(`${server.url}/api/v1/queues/py/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect(res.status).toBe(201);
  return ((await res.json()) as any).job.id;
}

async function getJob(id: string): Promise<{ job: Record<string, any>; events: { type: string; reason: string | null }[] }> {
  const res = await fetch(`${server.url}/api/v1/jobs/${id}`);
  expect(res.status).toBe(200);
  return (await res.json()) as any;
}

const settled = (id: string, status: string) =>
  until(`job ${id} to be ${status}`, async () => {
    const got = await getJob(id);
    return got.job.status === status && got;
  });

test('jobs complete with the handler result, claimed in batches up to the free slots', async () => {
  const w = spawnWorker(['--concurrency', '3']);
  const ids = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((text) => enqueue({ payload: { text, sleep: 0.2 } })));
  for (const [i, id] of ids.entries()) {
    const { job } = await settled(id, 'completed');
    expect(job.result).toEqual({ text: ['A', 'B', 'C', 'D', 'E'][i] });
    expect(job.attempt).toBe(1);
  }
  // The server records the completion before the worker prints its event line.
  const completed = await until('the worker to report every completion', async () => {
    const seen = w.events.filter((e) => e.event === 'completed').map((e) => e.id);
    return seen.length >= ids.length && seen;
  });
  expect(completed.sort()).toEqual([...ids].sort());
  expect(w.events.filter((e) => ['failed', 'lease_lost', 'abandoned', 'error'].includes(e.event))).toEqual([]);
});

test('a job running 3x longer than its lease completes on attempt 1: heartbeats keep it', async () => {
  const w = spawnWorker();
  const id = await enqueue({ payload: { text: 'slow', sleep: 4.5 } }); // lease 1.5 s
  const { job, events } = await settled(id, 'completed');
  expect(job.attempt).toBe(1);
  expect(job.lostAttempts).toBe(0);
  expect(job.result).toEqual({ text: 'SLOW' });
  expect(events.map((e) => e.type)).toEqual(['enqueued', 'claimed', 'completed']);
  // The server records the completion before the worker prints its event line.
  await until('the worker to report the completion', () => w.events.some((e) => e.event === 'completed'));
  expect(w.events.map((e) => e.event)).toEqual(['claimed', 'completed']);
});

test('a failing payload is retried and fails for good after maxAttempts', async () => {
  const w = spawnWorker();
  const id = await enqueue({ payload: { fail: true }, maxAttempts: 2 });
  const { job, events } = await settled(id, 'failed');
  expect(job.attempt).toBe(2);
  expect(job.erroredAttempts).toBe(2);
  expect(job.lastError).toContain('the payload asked to fail');
  expect(events.filter((e) => e.type === 'claimed')).toHaveLength(2);
  expect(events.at(-1)!.type).toBe('failed');
  const failed = await until('two failed events', () => {
    const f = w.events.filter((e) => e.event === 'failed' && e.id === id);
    return f.length === 2 && f;
  });
  expect(failed.map((e) => e.status)).toEqual(['pending', 'failed']);
});

test('SIGTERM stops claiming, waits the drain timeout, then releases the lease', async () => {
  const w = spawnWorker(['--drain-timeout', '0.5']);
  const id = await enqueue({ payload: { text: 'long', sleep: 60 } });
  await until('the claim', () => w.events.some((e) => e.event === 'claimed' && e.id === id));
  w.child.kill('SIGTERM');
  const code = await Promise.race([w.exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 20_000))]);
  expect(code, w.stderr()).toBe(0);
  // The handler is told to stop (its `lost` event is set) and may report the attempt
  // abandoned before the process exits; nothing else may happen.
  expect(w.events.filter((e) => e.event !== 'abandoned').map((e) => e.event)).toEqual(['claimed', 'released', 'stopped']);
  for (const e of w.events.filter((e) => e.event === 'abandoned')) expect(e).toEqual({ event: 'abandoned', id, reason: 'worker_shutdown' });
  expect(w.events.at(-1)).toEqual({ event: 'stopped', released: [id] });
  const { job, events } = await getJob(id);
  expect(job.status).toBe('pending');
  expect(job.attempt).toBe(0);
  expect(job.lockedBy).toBeNull();
  expect(events.at(-1)!.type).toBe('released');
});

test('a lease taken away is reported lease_lost, sets the job\'s `lost` event, and the attempt is abandoned', async () => {
  const w = spawnWorker(['--concurrency', '1']);
  const id = await enqueue({ payload: { text: 'taken', sleep: 60 } });
  await until('the claim', () => w.events.some((e) => e.event === 'claimed' && e.id === id));
  const res = await fetch(`${server.url}/api/v1/jobs/${id}/requeue`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ force: true, reason: 'test takes the lease' }),
  });
  expect(res.status).toBe(200);
  // The next heartbeat is refused; the demo handler waits on `lost`, so it stops at once
  // instead of sleeping out its 60 s, and never tries to complete.
  await until('abandoned', () => w.events.some((e) => e.event === 'abandoned' && e.id === id));
  const mine = w.events.filter((e) => e.id === id).map((e) => [e.event, e.reason]);
  expect(mine.slice(0, 3)).toEqual([
    ['claimed', undefined],
    ['lease_lost', 'lease_lost'],
    ['abandoned', 'lease_lost'],
  ]);
  expect(w.events.some((e) => e.event === 'completed' || e.event === 'failed')).toBe(false);
});

test('a completion refused with 409 (the lease was taken mid-run) is logged as abandoned, and the worker goes on', async () => {
  // A --handler module whose job has its lease taken by an operator while it runs,
  // between two heartbeats, so only the completion can find out.
  writeFileSync(
    join(dir, 'taker.py'),
    [
      'import json, os, urllib.request',
      'def handle(job, lost):',
      '    if job["payload"].get("take"):',
      '        body = json.dumps({"force": True, "reason": "taken mid-run"}).encode()',
      '        req = urllib.request.Request(os.environ["LEASEHOLD_URL"] + "/api/v1/jobs/" + job["id"] + "/requeue", body,',
      '                                     {"Content-Type": "application/json"}, method="POST")',
      '        urllib.request.urlopen(req).read()',
      '    return {"done": job["payload"]["n"]}',
      '',
    ].join('\n'),
  );
  const w = spawnWorker(['--handler', 'taker:handle', '--concurrency', '1'], { cwd: dir });
  const taken = await enqueue({ payload: { n: 1, take: true }, maxAttempts: 1 });
  await until('abandoned', () => w.events.find((e) => e.event === 'abandoned' && e.id === taken));
  expect(w.events.find((e) => e.event === 'abandoned')).toMatchObject({ id: taken, reason: 'lease_lost' });
  expect(w.events.some((e) => e.event === 'completed' && e.id === taken)).toBe(false);
  // Still alive and claiming: the next job completes through the custom handler.
  const next = await enqueue({ payload: { n: 2 } });
  const { job } = await settled(next, 'completed');
  expect(job.result).toEqual({ done: 2 });
});

test('--token sends the worker token as a bearer token', async () => {
  const guarded = await startServer(
    defaultConfig({ databaseUrl: `file:${join(dir, 'token.db')}`, port: 0, workerToken: 'sesame-sesame-sesame', adminToken: 'admin-secret-admin-secret' }),
    { log: silentLogger },
  );
  try {
    const post = (path: string, body: unknown) =>
      fetch(`${guarded.url}/api/v1${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sesame-sesame-sesame' }, body: JSON.stringify(body) });
    const id = ((await (await post('/queues/py/jobs', { payload: { text: 'secret' } })).json()) as any).job.id as string;
    const spawnAt = (extra: string[]) => {
      const child = spawn('python3', [WORKER, '--url', guarded.url, '--queue', 'py', ...extra], { stdio: ['ignore', 'pipe', 'pipe'] });
      children.push(child);
      const events: Record<string, any>[] = [];
      let buffer = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        buffer += chunk.toString();
        const lines = buffer.split('\n');
        buffer = lines.pop()!;
        events.push(...lines.map((l) => JSON.parse(l)));
      });
      return events;
    };
    const without = spawnAt([]);
    await until('a refused claim', () => without.find((e) => e.event === 'error' && e.during === 'claim'));
    expect(without.find((e) => e.event === 'error')).toMatchObject({ status: 401, error: { code: 'unauthorized' } });
    const withToken = spawnAt(['--token', 'sesame-sesame-sesame']);
    await until('the completion', () => withToken.find((e) => e.event === 'completed' && e.id === id));
    const res = await fetch(`${guarded.url}/api/v1/jobs/${id}`, { headers: { authorization: 'Bearer admin-secret-admin-secret' } });
    expect(((await res.json()) as any).job).toMatchObject({ status: 'completed', result: { text: 'SECRET' } });
  } finally {
    for (const c of children) c.kill('SIGKILL');
    await guarded.close();
  }
});
