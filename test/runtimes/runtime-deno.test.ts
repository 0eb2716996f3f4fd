/**
 * The Deno entry (src/runtime/deno.ts) run by real Deno (node_modules/.bin/deno,
 * 2.9.6) as a child process, on loopback port 0 with a fresh embedded database
 * file: the native libsql addon under Deno's Node-API, the API, the reaper
 * (triggered through the API and by the interval), Deno.cron registration,
 * stale-write fencing and a clean SIGTERM.
 *
 * Deno.cron fires at most once a minute, so the test that waits for it takes
 * up to about a minute; the rest of the suite runs beside it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { FAST_LEASES, untilListening, type ServerProcess } from '../support/process-helpers.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const DENO = join(ROOT, 'node_modules', '.bin', 'deno');
const ENTRY = join(ROOT, 'src', 'runtime', 'deno.ts');
/** The documented command, minus the binary: see docs/deploy-deno.md. */
const DENO_ARGS = ['run', '-A', '--unstable-cron', ENTRY];
const FAST = FAST_LEASES;
/** An interval reaper that never fires during a test: passes come from the API (or the cron). */
const NO_INTERVAL = { LEASEHOLD_REAPER_INTERVAL_MS: '3600000' };
const WAIT_MS = 20_000;

let dir: string;
const children: ChildProcess[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-deno-'));
});
afterEach(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  children.length = 0;
  rmSync(dir, { recursive: true, force: true });
});

type Running = ServerProcess;

function startDeno(env: Record<string, string> = {}, args: string[] = []): Promise<Running> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('LEASEHOLD_'))) as Record<string, string>;
  const child = spawn(DENO, [...DENO_ARGS, '--port', '0', ...args], {
    cwd: ROOT,
    env: { ...base, NO_COLOR: '1', LEASEHOLD_DATABASE_URL: `file:${join(dir, 'leasehold.db')}`, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  return untilListening(child, 'deno', WAIT_MS);
}

async function call(base: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${base}/api/v1${path}`, {
    method,
    headers: method === 'GET' ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as any };
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, ms = WAIT_MS): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('serves on port 0 with the embedded database: enqueue, claim, heartbeat, complete', async () => {
  const s = await startDeno(FAST);
  expect(s.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  expect(s.url).not.toMatch(/:0$/);
  // Deno.cron registered (with --unstable-cron) and nothing complained.
  expect(s.output()).toContain(`Deno.cron 'leasehold reaper' (* * * * *)`);

  const health = await fetch(`${s.url}/healthz`);
  expect(health.status).toBe(200);
  expect(await health.json()).toMatchObject({ ok: true });

  const enq = await call(s.url, 'POST', '/queues/email/jobs', { payload: { to: 'ada@example.com' }, idempotencyKey: 'welcome-ada' });
  expect(enq.status).toBe(201);
  const dup = await call(s.url, 'POST', '/queues/email/jobs', { payload: { to: 'ada@example.com' }, idempotencyKey: 'welcome-ada' });
  expect(dup.json).toMatchObject({ deduplicated: true, job: { id: enq.json.job.id } });

  const claim = await call(s.url, 'POST', '/queues/email/claim', { workerId: 'w1', limit: 10 });
  expect(claim.status).toBe(200);
  expect(claim.json.jobs).toHaveLength(1);
  const job = claim.json.jobs[0];
  expect(job).toMatchObject({ id: enq.json.job.id, payload: { to: 'ada@example.com' }, heartbeatIntervalMs: 300 });

  const beat = await call(s.url, 'POST', `/jobs/${job.id}/heartbeat`, { workerId: 'w1', lockToken: job.lockToken });
  expect(beat.status).toBe(200);
  expect(Date.parse(beat.json.leaseExpiresAt)).toBeGreaterThanOrEqual(Date.parse(job.leaseExpiresAt));

  const done = await call(s.url, 'POST', `/jobs/${job.id}/complete`, { workerId: 'w1', lockToken: job.lockToken, result: { sent: true } });
  expect(done.status).toBe(200);
  expect(done.json.job).toMatchObject({ status: 'completed' });

  const detail = await call(s.url, 'GET', `/jobs/${job.id}`);
  expect(detail.json.events.map((e: any) => e.type)).toEqual(expect.arrayContaining(['enqueued', 'claimed', 'completed']));
  expect(detail.json.events.at(-1)).toMatchObject({ type: 'completed' });
});

test('a producer waits on jobs server-side (POST /jobs/wait): a completion answers it; at SIGTERM an open wait answers at once', async () => {
  const s = await startDeno(FAST);
  const { json: a } = await call(s.url, 'POST', '/queues/w/jobs', { payload: 1 });
  const { json: b } = await call(s.url, 'POST', '/queues/w/jobs', { payload: 2 });
  const waited = call(s.url, 'POST', '/jobs/wait', { jobs: [{ id: a.job.id }], waitMs: 30_000 });
  const { json: claimed } = await call(s.url, 'POST', '/queues/w/claim', { workerId: 'w1' });
  await call(s.url, 'POST', `/jobs/${claimed.jobs[0].id}/complete`, { workerId: 'w1', lockToken: claimed.jobs[0].lockToken, result: 'done' });
  expect((await waited).json.jobs.map((j: any) => [j.job.id, j.job.status, j.job.result])).toEqual([[a.job.id, 'completed', 'done']]);

  const open = call(s.url, 'POST', '/jobs/wait', { jobs: [{ id: b.job.id }], waitMs: 30_000 });
  await sleep(200);
  s.child.kill('SIGTERM');
  const answered = await Promise.race([open, sleep(10_000).then(() => 'still waiting')]);
  expect(answered).toMatchObject({ status: 200, json: { jobs: [], missing: [], more: false } });
});

test('reaper pass through the API: an abandoned lease is requeued and the stale worker gets 409', async () => {
  const s = await startDeno({ ...FAST, ...NO_INTERVAL });
  const { json: enq } = await call(s.url, 'POST', '/queues/q/jobs', { payload: { n: 1 } });
  const { json: claimed } = await call(s.url, 'POST', '/queues/q/claim', { workerId: 'stale', limit: 1 });
  const job = claimed.jobs[0];
  expect(job.id).toBe(enq.job.id);

  // A pass before lease + grace leaves it alone.
  const early = await call(s.url, 'POST', '/reaper/run');
  expect(early.status).toBe(200);
  expect(early.json.requeued).toEqual([]);

  // The worker stops heartbeating: wait past lease (1.5 s) + grace (0.3 s), liveness (0.6 s) long gone.
  await sleep(2_200);
  const reap = await waitFor('a reaper pass to requeue the job', async () => {
    const r = await call(s.url, 'POST', '/reaper/run');
    return r.json.requeued.length ? r : (await sleep(200), undefined);
  });
  expect(reap.json.requeued).toEqual([{ id: job.id, reason: 'reaped_due_to_expired_lease' }]);

  const detail = await call(s.url, 'GET', `/jobs/${job.id}`);
  expect(detail.json.job).toMatchObject({ status: 'pending', lostAttempts: 1 });
  expect(detail.json.events.at(-1)).toMatchObject({ type: 'reaped', reason: 'reaped_due_to_expired_lease', workerId: 'stale' });

  // The stale worker's writes are fenced off.
  const late = await call(s.url, 'POST', `/jobs/${job.id}/complete`, { workerId: 'stale', lockToken: job.lockToken, result: { late: true } });
  expect(late.status).toBe(409);
  expect(late.json.error.code).toBe('lease_lost');
  const lateBeat = await call(s.url, 'POST', `/jobs/${job.id}/heartbeat`, { workerId: 'stale', lockToken: job.lockToken });
  expect(lateBeat.status).toBe(409);

  // Another worker takes it (after the short backoff) with a new token and a higher fencing token.
  const again = await waitFor('the requeued job to be claimable', async () => {
    const r = await call(s.url, 'POST', '/queues/q/claim', { workerId: 'fresh', limit: 1 });
    return r.json.jobs.length ? r.json.jobs[0] : (await sleep(50), undefined);
  });
  expect(again.id).toBe(job.id);
  expect(again.lockToken).not.toBe(job.lockToken);
  expect(Number(again.fencingToken)).toBeGreaterThan(Number(job.fencingToken));
  const ok = await call(s.url, 'POST', `/jobs/${job.id}/complete`, { workerId: 'fresh', lockToken: again.lockToken });
  expect(ok.status).toBe(200);
});

test('the in-process interval reaps without being asked, within seconds', async () => {
  const s = await startDeno({ ...FAST, LEASEHOLD_REAPER_INTERVAL_MS: '200' });
  const { json: enq } = await call(s.url, 'POST', '/queues/q/jobs', { payload: {} });
  const { json: claimed } = await call(s.url, 'POST', '/queues/q/claim', { workerId: 'gone', limit: 1 });
  const job = claimed.jobs[0];
  const started = Date.now();
  const detail = await waitFor('the interval reaper to requeue the job', async () => {
    const r = await call(s.url, 'GET', `/jobs/${enq.job.id}`);
    return r.json.events.some((e: any) => e.type === 'reaped') ? r.json : undefined;
  });
  const tookMs = Date.now() - started;
  expect(detail.events.find((e: any) => e.type === 'reaped')).toMatchObject({ reason: 'reaped_due_to_expired_lease', workerId: 'gone' });
  // lease 1.5 s + grace 0.3 s + one interval, with slack for a loaded machine.
  expect(tookMs).toBeLessThan(6_000);
  await waitFor('the interval pass to be logged', async () => (s.output().includes('reaper (interval): requeued 1') ? true : undefined), 2_000);
  const late = await call(s.url, 'POST', `/jobs/${job.id}/complete`, { workerId: 'gone', lockToken: job.lockToken });
  expect(late.status).toBe(409);
});

test('SIGTERM closes the server and the database and exits 0', async () => {
  const s = await startDeno(FAST);
  await call(s.url, 'POST', '/queues/q/jobs', { payload: {} });
  s.child.kill('SIGTERM');
  const code = await Promise.race([s.exited, sleep(WAIT_MS).then(() => 'timeout')]);
  expect(code, s.output()).toBe(0);
  expect(s.output()).toContain('leasehold: SIGTERM, shutting down');
  expect(s.output()).not.toMatch(/error/i);

  // The file is intact and reopens: the job is still there.
  const again = await startDeno(FAST);
  const list = await call(again.url, 'GET', '/jobs?queue=q');
  expect(list.json.jobs).toHaveLength(1);
  again.child.kill('SIGINT');
  expect(await Promise.race([again.exited, sleep(WAIT_MS).then(() => 'timeout')])).toBe(0);
});

test('a configuration that breaks a rule stops the start with exit code 2', async () => {
  const err = await startDeno({ ...FAST, LEASEHOLD_HEARTBEAT_MS: '1000' }).then(
    () => undefined,
    (e: Error) => e,
  );
  expect(err?.message).toMatch(/exited with 2/);
  expect(err?.message).toContain('LEASEHOLD_HEARTBEAT_MS must be at most half the lease');
});

test(
  'Deno.cron alone reaps at the next minute boundary (slow: up to ~65 s)',
  async () => {
    const s = await startDeno({ ...FAST, ...NO_INTERVAL });
    const { json: enq } = await call(s.url, 'POST', '/queues/q/jobs', { payload: {} });
    await call(s.url, 'POST', '/queues/q/claim', { workerId: 'gone', limit: 1 });
    const detail = await waitFor(
      'Deno.cron to requeue the job',
      async () => {
        const r = await call(s.url, 'GET', `/jobs/${enq.job.id}`);
        return r.json.events.some((e: any) => e.type === 'reaped') ? r.json : (await sleep(400), undefined);
      },
      70_000,
    );
    expect(detail.events.find((e: any) => e.type === 'reaped')).toMatchObject({ reason: 'reaped_due_to_expired_lease' });
    expect(s.output()).toContain('reaper (cron): requeued 1');
  },
  90_000,
);
