/**
 * Claim-ahead (src/worker/run-queue.ts): with fast handlers a worker holds a
 * few jobs beyond its slots, so one round trip completes and claims many
 * jobs; never more handlers at once than `concurrency`; nothing claimed ahead
 * for handlers slow against the lease; jobs waiting in line go back unstarted
 * at close(), and one whose lease was lost while it waited does not run on it.
 */
import { afterEach, expect, test } from 'vitest';
import { databaseClock } from '../../src/core/clock.ts';
import type { Config } from '../../src/core/config.ts';
import { dbTransport } from '../../src/embedded/db-transport.ts';
import { defaultConfig } from '../../src/core/config.ts';
import { silentLogger } from '../../src/core/log.ts';
import { startServer, type RunningServer } from '../../src/runtime/node.ts';
import { createWorker, httpTransport, type Transport, type Worker, type WorkerOptions } from '../../src/worker/index.ts';
import { setup, type TestBed } from '../support/helpers.ts';
import { until } from '../support/until.ts';

const FAST: Partial<Config> = { leaseMs: 1_500, heartbeatMs: 300, graceMs: 600, workerAliveMs: 900, maxReapDeferMs: 600 };
const quiet = { info() {}, warn() {}, error() {} };

const beds: TestBed[] = [];
const workers: Worker[] = [];
const servers: RunningServer[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.close({ drainTimeoutMs: 0 })));
  for (const server of servers.splice(0)) await server.close();
  for (const t of beds.splice(0)) t.close();
});

/** The in-process transport, watched: how many jobs each call completed and claimed, and how many the worker held after it. */
function watched(inner: Transport) {
  const calls: { kind: 'claim' | 'complete'; completed: number; claimed: number }[] = [];
  let held = 0;
  let peakHeld = 0;
  const transport: Transport = {
    ...inner,
    async claim(p) {
      const answer = await inner.claim(p);
      held += answer.jobs.length;
      peakHeld = Math.max(peakHeld, held);
      calls.push({ kind: 'claim', completed: 0, claimed: answer.jobs.length });
      return answer;
    },
    async complete(p) {
      const reply = await inner.complete(p);
      const completed = reply.answers.filter((a) => a.ok).length;
      held += reply.claimed.length - completed;
      peakHeld = Math.max(peakHeld, held + completed);
      calls.push({ kind: 'complete', completed, claimed: reply.claimed.length });
      return reply;
    },
  };
  return { transport, calls, peakHeld: () => peakHeld };
}

const inProcess = (t: TestBed) => dbTransport(t.engine);

async function bedWith(jobs: number) {
  const t = await setup(FAST, { realClock: databaseClock });
  beds.push(t);
  const res = await t.post('/api/v1/queues/q/jobs', { jobs: Array.from({ length: jobs }, (_, i) => ({ payload: { i } })) });
  expect(res.status).toBe(201);
  return { t, ids: (res.json.jobs as { id: string }[]).map((j) => j.id) };
}

function start(transport: Transport, options: Partial<WorkerOptions<{ i: number }>> & Pick<WorkerOptions<{ i: number }>, 'handler'>) {
  const w = createWorker<{ i: number }>({ transport, queue: 'q', pollMs: 20, maxPollMs: 50, handleSignals: false, logger: quiet, ...options });
  workers.push(w);
  return w.start();
}

test('fast handlers over HTTP: a round trip carries many more jobs than the slots, yet no more than `concurrency` handlers run at once', async () => {
  const { t } = await bedWith(400);
  const server = await startServer(defaultConfig({ ...FAST, databaseUrl: t.url, port: 0 }), { reaper: false, log: silentLogger });
  servers.push(server);
  const { transport, calls, peakHeld } = watched(httpTransport({ url: server.url }));
  const runs = new Map<number, number>();
  let running = 0;
  let peakRunning = 0;
  const w = start(transport, {
    concurrency: 4,
    claimBatch: 50,
    async handler(ctx) {
      running++;
      peakRunning = Math.max(peakRunning, running);
      runs.set(ctx.job.payload.i, (runs.get(ctx.job.payload.i) ?? 0) + 1);
      await new Promise((r) => setImmediate(r));
      running--;
    },
  });
  await until('all completed', () => w.stats.completed === 400);
  expect(peakRunning).toBe(4);
  expect([...runs.values()].every((n) => n === 1) && runs.size === 400).toBe(true);
  // Without claim-ahead each call could carry at most 4; here the busiest carries the whole batch.
  expect(Math.max(...calls.map((c) => c.claimed))).toBeGreaterThanOrEqual(20);
  expect(peakHeld()).toBeGreaterThan(4);
  // The slots and the line (at most 50), plus completions on their way (at most one batch more).
  expect(peakHeld()).toBeLessThanOrEqual(2 * 50);
  // Without it, 400 jobs at 4 a call take at least 100 calls.
  expect(calls.length).toBeLessThan(75);
});

test('claimAhead: 0 holds no more jobs than slots (the round trips each carry at most `concurrency`)', async () => {
  const { t } = await bedWith(60);
  const { transport, calls, peakHeld } = watched(inProcess(t));
  const w = start(transport, { concurrency: 4, claimAhead: 0, handler: () => null });
  await until('all completed', () => w.stats.completed === 60);
  expect(peakHeld()).toBeLessThanOrEqual(4);
  expect(Math.max(...calls.map((c) => c.claimed))).toBeLessThanOrEqual(4);
});

test('handlers slow against the lease claim nothing ahead: the worker holds only what its slots run', async () => {
  // Lease 1.5 s: a job claimed ahead should start within 1.5 s / 8 = 187 ms;
  // two slots of 400 ms handlers cannot promise that for even one more job.
  const { t } = await bedWith(8);
  const { transport, peakHeld } = watched(inProcess(t));
  const w = start(transport, { concurrency: 2, handler: () => new Promise((r) => setTimeout(r, 400)) });
  await until('all completed', () => w.stats.completed === 8, 20_000);
  expect(peakHeld()).toBeLessThanOrEqual(2);
});

test('close() gives back the jobs waiting in line at once, unstarted, while the running one finishes', async () => {
  const { t } = await bedWith(80);
  const transport = inProcess(t);
  const started: string[] = [];
  let openGate!: () => void;
  const gate = new Promise<void>((r) => (openGate = r));
  const w = start(transport, {
    concurrency: 1,
    async handler(ctx) {
      started.push(ctx.job.id);
      // The first 20 are fast (the worker learns to claim ahead); the 21st holds the one slot.
      if (started.length === 21) await gate;
    },
  });
  const stopped = new Promise<{ released: string[] }>((r) => w.on('stopped', r));
  await until('the 21st job is running with jobs waiting behind it', () => started.length === 21 && w.stats.completed === 20 && w.running > 1);
  const closing = w.close({ drainTimeoutMs: 10_000 });
  // Given back before the running job is done: another worker can have them now.
  const count = async (where: string) => Number((await t.client.execute(`SELECT count(*) AS n FROM jobs WHERE ${where}`)).rows[0]!.n);
  await until('every job but the running one and the 20 done is pending again', async () => (await count(`status = 'pending' AND attempt_count = 0`)) === 59);
  expect(await count(`status = 'running'`)).toBe(1);
  openGate();
  await closing;
  const { released } = await stopped;
  expect(released.length).toBeGreaterThan(0);
  expect(released.filter((id) => started.includes(id))).toEqual([]);
  expect(started).toHaveLength(21);
  expect(await count(`status = 'completed'`)).toBe(21);
});

test('a job whose lease is lost while it waits in line does not run on that claim', async () => {
  const { t } = await bedWith(80);
  const transport = inProcess(t);
  const runs: { id: string; attempt: number }[] = [];
  const abandoned: { id: string; reason: string }[] = [];
  let openGate!: () => void;
  const gate = new Promise<void>((r) => (openGate = r));
  const w = start(transport, {
    concurrency: 1,
    async handler(ctx) {
      runs.push({ id: ctx.job.id, attempt: ctx.job.attempt });
      if (runs.length === 21) await gate;
    },
  });
  w.on('abandoned', ({ job, reason }) => abandoned.push({ id: job.id, reason }));
  await until('the 21st job is running with jobs waiting behind it', () => runs.length === 21 && w.stats.completed === 20 && w.running > 1);
  const held = (await t.client.execute(`SELECT id FROM jobs WHERE status = 'running' AND id != ${Number(runs[20]!.id)} LIMIT 1`)).rows;
  const victim = String(held[0]!.id);
  const requeued = await t.post(`/api/v1/jobs/${victim}/requeue`, { force: true, reason: 'test: take a waiting job back' });
  expect(requeued.status, requeued.text).toBe(200);
  await until('the worker learns its lease is gone', () => w.stats.leaseLost >= 1, 5_000);
  openGate();
  await until('every job completed', () => w.stats.completed >= 80, 20_000);
  expect(abandoned).toContainEqual({ id: victim, reason: 'lease lost before it started' });
  // It ran once, on the claim that came after the requeue.
  expect(runs.filter((r) => r.id === victim)).toEqual([{ id: victim, attempt: 2 }]);
});

test('jobs waiting in line for longer than their lease are renewed like running ones: none is lost or run twice', async () => {
  // Lease 1.5 s: the 21st job holds the one slot for 4 s while the jobs claimed ahead wait.
  const { t } = await bedWith(60);
  const runs = new Map<string, number>();
  let openGate!: () => void;
  const gate = new Promise<void>((r) => (openGate = r));
  const w = start(inProcess(t), {
    concurrency: 1,
    async handler(ctx) {
      runs.set(ctx.job.id, (runs.get(ctx.job.id) ?? 0) + 1);
      if (runs.size === 21) await gate;
    },
  });
  await until('the 21st job is running with jobs waiting behind it', () => runs.size === 21 && w.stats.completed === 20 && w.running > 1);
  const waitingIds = (await t.client.execute(`SELECT id FROM jobs WHERE status = 'running'`)).rows.map((r) => String(r.id)).filter((id) => runs.get(id) === undefined);
  expect(waitingIds.length).toBeGreaterThan(0);
  await new Promise((r) => setTimeout(r, 4_000));
  // Still theirs, past two and a half leases: the heartbeats renewed them.
  const renewed = await t.client.execute(`SELECT count(*) AS n FROM jobs WHERE status = 'running' AND lease_expires_at > (unixepoch('subsec') * 1000) AND id IN (${waitingIds.join(',')})`);
  expect(Number(renewed.rows[0]!.n)).toBe(waitingIds.length);
  openGate();
  await until('every job completed', () => w.stats.completed === 60, 20_000);
  expect(w.stats.leaseLost).toBe(0);
  expect([...runs.values()].every((n) => n === 1) && runs.size === 60).toBe(true);
});

test('a count that would stall the worker is refused when it is created, naming the option', async () => {
  const { t } = await bedWith(1);
  for (const [option, value] of [['claimAhead', -1], ['claimAhead', 1.5], ['concurrency', 0], ['claimBatch', Number.NaN]] as const) {
    expect(() => createWorker({ transport: inProcess(t), queue: 'q', handler: () => null, handleSignals: false, [option]: value })).toThrow(new RegExp(`createWorker: ${option} must be an integer of at least`));
  }
});
