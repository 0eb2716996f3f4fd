/**
 * leasehold/client waiting on many jobs against a real server on a loopback
 * port, with a real worker finishing them: the requests it makes follow the
 * server's wake-ups, not the jobs (waitForJob polled GET /jobs/:id per job:
 * 100 jobs took 188 requests). Also: events(), not_found and timeouts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { createClient, LeaseholdTimeoutError, type JobEvent } from '../../src/client/index.ts';
import { defaultConfig } from '../../src/core/config.ts';
import { silentLogger } from '../../src/core/log.ts';
import { startServer } from '../../src/runtime/node.ts';
import { createWorker, httpTransport } from '../../src/worker/index.ts';

const quiet = { info() {}, warn() {}, error() {} };
let dir: string;
let server: Awaited<ReturnType<typeof startServer>>;
let calls: string[];
const cleanups: (() => unknown)[] = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-client-wait-'));
  server = await startServer(defaultConfig({ databaseUrl: `file:${join(dir, 'test.db')}`, port: 0 }), { reaper: false, log: silentLogger });
  calls = [];
});
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A client whose every request is counted, by method and path. */
function client() {
  const counting = (input: RequestInfo | URL, init?: RequestInit) => {
    calls.push(`${init?.method ?? 'GET'} ${new URL(String(input)).pathname}`);
    return fetch(input, init);
  };
  return createClient<{ double: { payload: { n: number }; result: { doubled: number } } }>({ url: server.url, fetch: counting as typeof fetch });
}

function startWorker(handler: (n: number) => Promise<unknown> | unknown = (n) => ({ doubled: n * 2 })) {
  const worker = createWorker<{ n: number }>({
    transport: httpTransport({ url: server.url }),
    queue: 'double',
    concurrency: 10,
    handleSignals: false,
    logger: quiet,
    handler: (ctx) => handler(ctx.job.payload.n),
  }).start();
  cleanups.push(() => worker.close());
  return worker;
}

const waits = () => calls.filter((c) => c === 'POST /api/v1/jobs/wait').length;
const reads = () => calls.filter((c) => c.startsWith('GET /api/v1/jobs/')).length;

test('waitForJobs on 100 jobs a worker finishes one by one takes a handful of requests, not one per job', async () => {
  const c = client();
  const jobs = await c.enqueueMany('double', Array.from({ length: 100 }, (_, n) => ({ payload: { n } })));
  calls = [];
  startWorker(async (n) => {
    await new Promise((r) => setTimeout(r, 5));
    return { doubled: n * 2 };
  });
  const done = await c.waitForJobs(jobs);
  expect(done.map((j) => j.status)).toEqual(jobs.map(() => 'completed'));
  expect(done.map((j) => j.result?.doubled)).toEqual(jobs.map((_, n) => n * 2));
  expect(reads()).toBe(0);
  expect(waits()).toBeLessThanOrEqual(3);
});

test('waitForJob calls made together share one request per wake-up: 100 jobs finished in one completion are one wait', async () => {
  const c = client();
  const jobs = await c.enqueueMany('double', Array.from({ length: 100 }, (_, n) => ({ payload: { n } })));
  calls = [];
  const waiting = Promise.all(jobs.map((job) => c.waitForJob(job, { timeoutMs: 20_000 })));
  // All 100 finished in one statement by a worker of another language (plain HTTP).
  const post = async (path: string, body: unknown) => (await fetch(`${server.url}/api/v1${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json() as Promise<any>;
  const { jobs: claimed } = await post('/queues/double/claim', { workerId: 'py', limit: 100 });
  expect(claimed).toHaveLength(100);
  await post('/completions', { workerId: 'py', results: claimed.map((j: any) => ({ id: j.id, lockToken: j.lockToken, result: { doubled: j.payload.n * 2 } })) });
  const done = await waiting;
  expect(done.map((j) => j.id)).toEqual(jobs.map((j) => j.id));
  expect(done.every((j) => j.status === 'completed')).toBe(true);
  expect(reads()).toBe(0);
  expect(waits()).toBeLessThanOrEqual(2);
});

test('events: each job from its state now through active and progress to completed, then the iteration ends', async () => {
  const c = client();
  const job = await c.enqueue('double', { n: 21 });
  const seen: JobEvent[] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const worker = createWorker<{ n: number }>({
    transport: httpTransport({ url: server.url }),
    queue: 'double',
    handleSignals: false,
    logger: quiet,
    async handler(ctx) {
      await ctx.heartbeat({ pct: 50 });
      await gate;
      return { doubled: ctx.job.payload.n * 2 };
    },
  });
  cleanups.push(() => worker.close());
  const iterating = (async () => {
    for await (const e of c.events([job])) {
      seen.push(e);
      if (e.type === 'waiting') worker.start();
      if (e.type === 'progress') release();
    }
  })();
  await iterating;
  expect(seen.map((e) => e.type)).toEqual(['waiting', 'active', 'progress', 'completed']);
  const last = seen.at(-1)!;
  expect(last.job?.result).toEqual({ doubled: 42 });
  expect(reads()).toBe(0);
});

test('a job no one has is not_found, for waitForJob, waitForJobs and events; timeouts are LeaseholdTimeoutError', async () => {
  const c = client();
  await expect(c.waitForJob('987654')).rejects.toMatchObject({ status: 404, code: 'not_found' });
  const job = await c.enqueue('double', { n: 1 });
  await expect(c.waitForJobs([job, '987654'])).rejects.toMatchObject({ code: 'not_found' });
  const events: string[] = [];
  for await (const e of c.events(['987654'])) events.push(e.type);
  expect(events).toEqual(['removed']);
  await expect(c.waitForJob(job, { timeoutMs: 300 })).rejects.toBeInstanceOf(LeaseholdTimeoutError);
  await expect(c.waitForJobs([job], { timeoutMs: 300 })).rejects.toBeInstanceOf(LeaseholdTimeoutError);
  const stop = new AbortController();
  const waiting = c.waitForJobs([job], { signal: stop.signal });
  stop.abort(new Error('gave up'));
  await expect(waiting).rejects.toThrow('gave up');
});
