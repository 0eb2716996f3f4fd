/**
 * Answers lost on the way back to the worker, for real: a loopback proxy
 * between an SDK worker (its default settings) and a real server forwards
 * the request, lets the server act, and resets the connection as the answer
 * arrives. For a completion, a completion that claims, a plain claim, a
 * heartbeat, and a claim given up while the worker closes: the job's result
 * is the worker's, no stale write or duplicate execution is recorded or
 * counted, and no job waits for the reaper (none is reaped or deferred, and
 * each finishes before its lease plus grace could have run out).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { startProxy, type Proxy } from '../../tools/chaos/proxy.ts';
import { defaultConfig } from '../../src/core/config.ts';
import { silentLogger } from '../../src/core/log.ts';
import { startServer, type RunningServer } from '../../src/runtime/node.ts';
import { createWorker, httpTransport, type Worker } from '../../src/worker/index.ts';
import { postJson } from '../support/process-helpers.ts';
import { until } from '../support/until.ts';

// The timings of the field report this reproduces; the SDK derives its own from them.
const T = { leaseMs: 6_000, heartbeatMs: 2_000, graceMs: 2_000 };

let dir: string;
let server: RunningServer;
let proxy: Proxy;
let worker: Worker | undefined;
/** Per job id: how many times its handler started. */
let runs: Map<string, number>;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-lost-answers-'));
  server = await startServer(defaultConfig({ databaseUrl: `file:${join(dir, 'q.db')}`, port: 0, ...T }), { log: silentLogger });
  const port = Number(new URL(server.url).port);
  proxy = await startProxy(() => port);
  runs = new Map();
});

afterEach(async () => {
  await worker?.close({ drainTimeoutMs: 0 });
  worker = undefined;
  await proxy.close();
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

const quiet = { info() {}, warn() {}, error() {} };

/** A worker with the SDK's defaults, talking through the proxy; `run` is the handler's body. */
function startWorker(run: (job: { id: string; payload: unknown }) => Promise<unknown>) {
  const w = createWorker({
    transport: httpTransport({ url: `http://127.0.0.1:${proxy.port}` }),
    queue: 'q',
    workerId: 'cut-off',
    handleSignals: false,
    logger: quiet,
    async handler(ctx) {
      runs.set(ctx.job.id, (runs.get(ctx.job.id) ?? 0) + 1);
      return run(ctx.job);
    },
  });
  const seen = { completed: [] as string[], abandoned: [] as string[] };
  w.on('completed', (e) => seen.completed.push(e.job.id));
  w.on('abandoned', (e) => seen.abandoned.push(`${e.job.id}: ${e.reason}`));
  worker = w.start();
  return seen;
}

async function enqueue(payload: unknown): Promise<string> {
  const res = await postJson(`${server.url}/api/v1/queues/q/jobs`, { payload });
  expect(res.status).toBe(201);
  return res.json.job.id as string;
}

async function job(id: string) {
  const res = await fetch(`${server.url}/api/v1/jobs/${id}`);
  return (await res.json()) as { job: Record<string, any>; events: { type: string; reason: string | null; at: string }[] };
}

/**
 * The job is the worker's and ran once: completed with its result on the
 * first attempt, no attempt lost, never reaped, deferred or refused, and
 * done before its lease plus grace could have run out.
 */
async function expectDoneByTheWorker(id: string, result: unknown) {
  const { job: j, events } = await job(id);
  expect(j).toMatchObject({ status: 'completed', result, attempt: 1, lostAttempts: 0, erroredAttempts: 0 });
  const types = events.map((e) => e.type);
  for (const bad of ['stale_write_rejected', 'duplicate_execution', 'reaped', 'reap_deferred']) expect(types).not.toContain(bad);
  const claimedAt = Date.parse(events.find((e) => e.type === 'claimed')!.at);
  expect(Date.parse(j.completedAt) - claimedAt).toBeLessThan(T.leaseMs + T.graceMs);
  expect(runs.get(id)).toBe(1);
}

/** Nothing refused or run twice, as /metrics counts it. */
async function expectNothingCounted() {
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  for (const name of ['leasehold_stale_writes_rejected_total', 'leasehold_duplicate_executions_total']) {
    for (const m of metrics.matchAll(new RegExp(`^${name}\\{[^}]*\\} (\\d+)$`, 'gm'))) expect(Number(m[1]), name).toBe(0);
  }
}

test('a completion whose answer was lost is sent again and answered as stored: completed, not abandoned, no stale write', async () => {
  const id = await enqueue('one');
  const seen = startWorker(async () => {
    proxy.dropAnswers((head) => head.startsWith('POST /api/v1/completions'), 1);
    return 'the worker\'s result';
  });
  await until('the completion reported', () => seen.completed.length + seen.abandoned.length > 0);
  expect(proxy.stats.answersDropped).toBe(1);
  expect(seen).toEqual({ completed: [id], abandoned: [] });
  await expectDoneByTheWorker(id, "the worker's result");
  await expectNothingCounted();
  expect(worker!.stats).toMatchObject({ completed: 1, abandoned: 0, leaseLost: 0 });
});

test('a completion that claims, whose answer was lost: the completion stands and the jobs it claimed run, under the same tokens, without the reaper', async () => {
  // How the SDK's defaults make a completion claim: once handlers are known
  // to be quick, jobs are claimed ahead, and a completion refills the room it
  // frees while jobs still wait in line (its claim loop stays out of that).
  // The first completion that carries a claim, while jobs are still pending,
  // has its answer dropped.
  const ids: string[] = [];
  for (let i = 0; i < 20; i++) ids.push(await enqueue(i));
  proxy.dropAnswers((head) => head.startsWith('POST /api/v1/completions') && head.includes('"claim":{'), 1);
  const seen = startWorker(async (j) => {
    await new Promise((r) => setTimeout(r, 100));
    return `done ${String(j.payload)}`;
  });
  await until('every job reported', () => seen.completed.length + seen.abandoned.length >= ids.length, 30_000);
  expect(proxy.stats.answersDropped).toBe(1);
  expect(seen.abandoned).toEqual([]);
  for (const [i, id] of ids.entries()) await expectDoneByTheWorker(id, `done ${i}`);
  // The jobs that completion claimed came to the worker in the answer to it, sent again.
  const replayed = [];
  for (const id of ids) if ((await job(id)).events.some((e) => e.type === 'claim_replayed')) replayed.push(id);
  expect(replayed.length).toBeGreaterThan(0);
  await expectNothingCounted();
});

test('a claim whose answer was lost is sent again with its claim id: the worker gets the job it took, no job waits for the reaper', async () => {
  proxy.dropAnswers((head) => head.startsWith('POST /api/v1/queues/q/claim'), 1);
  const id = await enqueue('claimed');
  const seen = startWorker(async () => 'ran once');
  await until('the job completed', () => seen.completed.length > 0, 30_000);
  expect(proxy.stats.answersDropped).toBe(1);
  await expectDoneByTheWorker(id, 'ran once');
  expect((await job(id)).events.map((e) => e.type)).toEqual(['enqueued', 'claimed', 'claim_replayed', 'completed']);
  await expectNothingCounted();
});

test('a heartbeat whose answer was lost: the next one renews, and the job completes with the worker\'s result', async () => {
  const id = await enqueue('long');
  const seen = startWorker(async () => {
    // Armed once the job runs: the next heartbeats call is this job's renewal.
    proxy.dropAnswers((head) => head.startsWith('POST /api/v1/heartbeats'), 1);
    await until('the renewal dropped', () => proxy.stats.answersDropped === 1, 10_000);
    // One more heartbeat interval: the renewal after the lost one gets through.
    await new Promise((r) => setTimeout(r, T.heartbeatMs + 500));
    return 'kept its lease';
  });
  await until('the job completed', () => seen.completed.length + seen.abandoned.length > 0, 30_000);
  expect(seen.abandoned).toEqual([]);
  await expectDoneByTheWorker(id, 'kept its lease');
  await expectNothingCounted();
  expect(worker!.stats).toMatchObject({ leaseLost: 0, heartbeatFailures: 1 });
});

test('a claim given up without its answer (the worker closes) gives its job back at once: pending, no attempt counted, no reaper', async () => {
  proxy.dropAnswers((head) => head.startsWith('POST /api/v1/queues/q/claim'), 1);
  const id = await enqueue('never received');
  startWorker(async () => 'must not run');
  await until('the claim answer dropped', () => proxy.stats.answersDropped === 1);
  await worker!.close({ drainTimeoutMs: 0 });
  worker = undefined;
  const { job: j, events } = await job(id);
  expect(j).toMatchObject({ status: 'pending', attempt: 0, lostAttempts: 0, lockedBy: null });
  expect(events.at(-1)).toMatchObject({ type: 'released', reason: 'claim_answer_lost' });
  expect(runs.size).toBe(0);
  await expectNothingCounted();
});
