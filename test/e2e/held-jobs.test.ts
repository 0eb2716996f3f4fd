/**
 * Checked from outside: a job with onLost 'hold' whose worker process is
 * killed mid-job is never run twice without a person. A real server on
 * loopback, real worker processes (HTTP transport), SIGKILL: the reaper
 * holds the job, a live worker polling the queue does not get it however
 * many maintenance passes go by, and once an operator releases it (with a
 * reason) it runs exactly once more.
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

const WORKER = join(import.meta.dirname, '..', 'support', 'fixtures', 'worker-process.ts');
// Short leases so the story runs in seconds, with the SDK's timings derived from them (as worker-processes.test.ts).
const FAST: Partial<Config> = { leaseMs: 2_000, heartbeatMs: 400, graceMs: 800, workerAliveMs: 1_200, maxReapDeferMs: 600, reaperIntervalMs: 200, backoffBaseMs: 50, backoffMaxMs: 100 };

let dir: string;
let server: RunningServer;
let effectsFile: string;
const children: ChildProcess[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-e2e-held-'));
  effectsFile = join(dir, 'effects.jsonl');
});
afterEach(async () => {
  for (const c of children) c.kill('SIGKILL');
  children.length = 0;
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

function spawnWorker(): { child: ChildProcess; exited: Promise<void> } {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER], {
    env: { ...process.env, LEASEHOLD_URL: server.url, EFFECTS_FILE: effectsFile, QUEUE: 'charges' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(child);
  return { child, exited: new Promise((r) => child.once('exit', () => r())) };
}

const effects = () =>
  existsSync(effectsFile)
    ? readFileSync(effectsFile, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>)
    : [];
const untilSeen = <T>(what: string, check: Parameters<typeof until<T>>[1], timeoutMs = 20_000) => until(what, check, timeoutMs, () => `effects: ${JSON.stringify(effects())}`);

async function api(method: string, path: string, body?: unknown) {
  const res = await fetch(`${server.url}/api/v1${path}`, { method, headers: { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  return { status: res.status, json: (await res.json()) as any };
}
const job = async (id: string) => (await api('GET', `/jobs/${id}`)).json as { job: Record<string, any>; events: { type: string; reason: string | null }[] };
const passes = async () => (await api('GET', '/metrics')).json.maintenance.passes as number;

test("a worker killed mid-job with onLost 'hold': the job is held, not run again by a live worker, until an operator releases it; then it runs once", async () => {
  server = await startServer(defaultConfig({ ...FAST, databaseUrl: `file:${join(dir, 'e2e.db')}`, port: 0 }), { log: silentLogger });
  const id = (await api('POST', '/queues/charges/jobs', { payload: { sleepMs: 1_000 }, onLost: 'hold' })).json.job.id as string;
  const a = spawnWorker();
  await untilSeen('A started the job', () => effects().some((e) => e.what === 'start'));
  a.child.kill('SIGKILL');
  await a.exited;
  // B polls the queue the whole time.
  const b = spawnWorker();
  await untilSeen('held by the reaper', async () => (await job(id)).job.heldAt !== null);
  const held = await job(id);
  expect(held.job).toMatchObject({ status: 'pending', attempt: 1, lostAttempts: 0, lostAttempt: { worker: expect.any(String), attempt: 1 } });
  expect(held.events.find((e) => e.type === 'held')?.reason).toBe('lost_attempt_held');
  // Many more maintenance passes, B polling meanwhile: nobody runs it again.
  const from = await passes();
  await untilSeen('ten more maintenance passes', async () => (await passes()) >= from + 10);
  expect(effects().filter((e) => e.what === 'start')).toHaveLength(1);
  expect((await job(id)).job).toMatchObject({ status: 'pending', attempt: 1 });
  const released = await api('POST', `/jobs/${id}/held/release`, { reason: 'the charge never reached the bank' });
  expect(released.status).toBe(200);
  await untilSeen('completed', async () => (await job(id)).job.status === 'completed');
  const { job: final, events } = await job(id);
  expect(final).toMatchObject({ attempt: 2, result: { by: b.child.pid } });
  expect(effects().filter((e) => e.what === 'start').map((e) => e.attempt)).toEqual([1, 2]);
  expect(effects().filter((e) => e.what === 'done').map((e) => e.pid)).toEqual([b.child.pid]);
  expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['held', 'released_by_operator']));
});
