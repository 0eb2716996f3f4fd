/**
 * Real worker processes (HTTP transport) against a real server on loopback:
 * killed, paused and resumed, crashing after side effects, shut down. Side
 * effects are recorded in a file outside leasehold.
 */
import { silentLogger } from '../../src/core/log.ts';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { defaultConfig, type Config } from '../../src/core/config.ts';
import { startServer, type RunningServer } from '../../src/runtime/node.ts';
import { until } from '../support/until.ts';

/** until(), saying what was seen so far when it times out. */
const untilSeen = <T>(what: string, check: Parameters<typeof until<T>>[1], timeoutMs = 20_000) => until(what, check, timeoutMs, () => `effects: ${JSON.stringify(effects())}`);

const WORKER = join(import.meta.dirname, '..', 'support', 'fixtures', 'worker-process.ts');
// Short leases so the story runs in seconds; the rules still hold (heartbeat <= lease/3,
// grace >= heartbeat), with enough slack that a loaded CI machine does not lose a lease.
const FAST: Partial<Config> = { leaseMs: 2_000, heartbeatMs: 400, graceMs: 800, workerAliveMs: 1_200, maxReapDeferMs: 600, reaperIntervalMs: 200, backoffBaseMs: 50, backoffMaxMs: 100 };

let dir: string;
let server: RunningServer;
let effectsFile: string;
const children: ChildProcess[] = [];

async function start(overrides: Partial<Config> = {}) {
  server = await startServer(defaultConfig({ ...FAST, ...overrides, databaseUrl: `file:${join(dir, 'e2e.db')}`, port: 0 }), { log: silentLogger });
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-e2e-'));
  effectsFile = join(dir, 'effects.jsonl');
});
afterEach(async () => {
  for (const c of children) {
    c.kill('SIGCONT');
    c.kill('SIGKILL');
  }
  children.length = 0;
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

interface WorkerProcess {
  child: ChildProcess;
  lines: Record<string, unknown>[];
  exited: Promise<void>;
}

function spawnWorker(env: Record<string, string> = {}): WorkerProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER], {
    env: { ...process.env, LEASEHOLD_URL: server.url, EFFECTS_FILE: effectsFile, QUEUE: 'e2e', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const w: WorkerProcess = { child, lines: [], exited: new Promise((r) => child.once('exit', () => r())) };
  let buffer = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      try {
        w.lines.push(JSON.parse(line));
      } catch {
        // not ours
      }
    }
  });
  return w;
}

const effects = () =>
  existsSync(effectsFile)
    ? readFileSync(effectsFile, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>)
    : [];


async function api(path: string, body?: unknown) {
  const res = await fetch(`${server.url}/api/v1${path}`, body === undefined ? {} : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return (await res.json()) as any;
}

const enqueue = async (payload: unknown, extra: Record<string, unknown> = {}) => (await api('/queues/e2e/jobs', { payload, ...extra })).job.id as string;
const job = (id: string) => api(`/jobs/${id}`) as Promise<{ job: { status: string; attempt: number; lostAttempts: number; result: unknown }; events: { type: string; reason: string | null; workerId: string | null }[] }>;

test('a worker killed with SIGKILL mid-job: the job is reaped and completed by another worker, once', async () => {
  await start();
  const id = await enqueue({ sleepMs: 1_000 });
  const a = spawnWorker();
  await untilSeen('A started the job', () => effects().some((e) => e.what === 'start'));
  a.child.kill('SIGKILL');
  await a.exited;
  const b = spawnWorker();
  await untilSeen('completed', async () => (await job(id)).job.status === 'completed');
  const { job: final, events } = await job(id);
  expect(final).toMatchObject({ attempt: 2, lostAttempts: 1, result: { by: b.child.pid } });
  expect(events.filter((e) => e.type === 'completed')).toHaveLength(1);
  expect(events.find((e) => e.type === 'reaped')?.reason).toBe('reaped_due_to_expired_lease');
  expect(effects().filter((e) => e.what === 'done').map((e) => e.pid)).toEqual([b.child.pid]);
});

test('a worker paused past its lease (SIGSTOP): the job completes elsewhere; after SIGCONT the old handler is aborted and its completion refused', async () => {
  await start();
  const id = await enqueue({ sleepMs: 1_500, ignoreSignal: true });
  const a = spawnWorker();
  await untilSeen('A started the job', () => effects().some((e) => e.what === 'start'));
  a.child.kill('SIGSTOP');
  const b = spawnWorker();
  await untilSeen('B completed it', async () => (await job(id)).job.status === 'completed');
  a.child.kill('SIGCONT');
  await untilSeen('A gave up its attempt', () => a.lines.some((l) => l.event === 'abandoned'));
  expect(a.lines.some((l) => l.event === 'aborted')).toBe(true);
  const { job: final, events } = await job(id);
  expect(final.result).toEqual({ by: b.child.pid });
  expect(events.filter((e) => e.type === 'completed')).toHaveLength(1);
  // A's late writes were refused by the token, and recorded.
  expect(events.some((e) => e.type === 'stale_write_rejected' && e.workerId !== null)).toBe(true);
  // A's handler saw its signal aborted by the time it finished.
  expect(effects().find((e) => e.what === 'done' && e.pid === a.child.pid)?.signalAborted).toBe(true);
});

test('a handler stuck on I/O while the heartbeat keeps going is ended by its deadline', async () => {
  await start();
  const id = await enqueue({ hangIo: true }, { timeoutMs: 1_500, maxAttempts: 1 });
  const a = spawnWorker();
  await untilSeen('failed', async () => (await job(id)).job.status === 'failed');
  await untilSeen('A saw the abort', () => a.lines.some((l) => l.event === 'aborted'));
  expect(a.lines.find((l) => l.event === 'aborted')?.reason).toBe('deadline_exceeded');
  const { events } = await job(id);
  // The heartbeat kept the lease, so no reap for an expired lease happened.
  expect(events.some((e) => e.reason === 'reaped_due_to_expired_lease')).toBe(false);
});

test('once() applies its side effect exactly once when the process crashes after it and the job is retried', async () => {
  await start();
  const id = await enqueue({ onceThenCrash: true });
  const a = spawnWorker();
  await a.exited;
  spawnWorker();
  await untilSeen('completed', async () => (await job(id)).job.status === 'completed');
  expect(effects().filter((e) => e.what === 'charge')).toHaveLength(1);
  expect(effects().filter((e) => e.what === 'start').map((e) => e.attempt)).toEqual([1, 2]);
});

test('attempt 2 starts from the checkpoint attempt 1 saved before it crashed', async () => {
  await start();
  const id = await enqueue({ checkpointThenCrash: true });
  const a = spawnWorker();
  await a.exited;
  spawnWorker();
  await untilSeen('completed', async () => (await job(id)).job.status === 'completed');
  expect(effects().filter((e) => e.what === 'start').map((e) => [e.attempt, e.checkpoint])).toEqual([
    [1, null],
    [2, { step: 2 }],
  ]);
});

test('graceful shutdown (SIGTERM) releases leases and the job runs again without waiting for expiry', async () => {
  // A long lease: if the job waited for expiry, this test would time out.
  await start({ leaseMs: 60_000, heartbeatMs: 1_000, graceMs: 1_000, workerAliveMs: 2_000 });
  const id = await enqueue({ sleepMs: 30_000 });
  const a = spawnWorker({ DRAIN_MS: '200' });
  await untilSeen('A started the job', () => effects().some((e) => e.what === 'start'));
  a.child.kill('SIGTERM');
  await a.exited;
  expect(a.lines.find((l) => l.event === 'stopped')?.released).toEqual([id]);
  expect(a.lines.find((l) => l.event === 'aborted')?.reason).toBe('shutdown');
  const after = await job(id);
  expect(after.job).toMatchObject({ status: 'pending', attempt: 0 });
  expect(after.events.at(-1)).toMatchObject({ type: 'released', reason: 'worker_shutdown' });
  await api(`/jobs/${id}/cancel`, { reason: 'test over' });
});

test('the heartbeat loop keeps the lease of a job running several times longer than the lease', async () => {
  await start();
  const id = await enqueue({ sleepMs: 6_500 });
  spawnWorker();
  await untilSeen('completed', async () => (await job(id)).job.status === 'completed');
  const { job: final, events } = await job(id);
  expect(final).toMatchObject({ attempt: 1, lostAttempts: 0 });
  expect(events.map((e) => e.type), JSON.stringify(events)).toEqual(['enqueued', 'claimed', 'completed']);
});
