/**
 * One claim answer has a size budget (LEASEHOLD_MAX_CLAIM_BYTES): a claim of
 * 100 jobs of 1 MiB answered 99 MiB in one response and held the server's
 * event loop for seconds, and a larger one failed to encode (`RangeError:
 * Invalid string length`, a 500) after its jobs were already running under a
 * token nobody got. Now a claim, and the claim riding on a completion, take
 * what fits and leave the rest pending; a worker still runs every job; an
 * in-process worker's claims keep to the same budget.
 */
import { afterEach, expect, test } from 'vitest';
import { databaseClock } from '../../src/core/clock.ts';
import { DEFAULT_MAX_CLAIM_BYTES } from '../../src/core/config.ts';
import { openLeasehold } from '../../src/embedded/leasehold.ts';
import { silentLogger } from '../../src/core/log.ts';
import { startServer } from '../../src/runtime/node.ts';
import { createWorker, httpTransport } from '../../src/worker/index.ts';
import { setup, type TestBed } from '../support/helpers.ts';
import { until } from '../support/until.ts';

const MIB = 1024 * 1024;
const beds: TestBed[] = [];
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  for (const t of beds.splice(0)) t.close();
});

/**
 * `n` pending jobs in queue q, due at `at`, each payload a JSON string of
 * exactly `bytes` bytes, written by SQL (an HTTP enqueue of each would only
 * be slower); their ids in claim order.
 */
async function pendingJobs(t: TestBed, n: number, bytes: number, at = t.clock.now() as number): Promise<number[]> {
  await t.client.execute({ sql: `INSERT INTO queues (name, created_at, updated_at) VALUES ('q', ?1, ?1)`, args: [at] });
  await t.client.execute({
    sql: `INSERT INTO jobs (queue_name, payload, max_attempts, available_at, created_at, updated_at)
      WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?1)
      SELECT 'q', '"' || substr(hex(zeroblob(?2)), 1, ?2 - 2) || '"', 5, ?3, ?3, ?3 FROM s`,
    args: [n, bytes, at],
  });
  return (await t.client.execute(`SELECT id FROM jobs ORDER BY id`)).rows.map((r) => Number(r.id));
}

const counts = async (t: TestBed) => {
  const rows = (await t.client.execute(`SELECT status, count(*) AS n, sum(lock_token IS NOT NULL) AS tokens, sum(attempt_count) AS attempts FROM jobs GROUP BY status`)).rows;
  return Object.fromEntries(rows.map((r) => [String(r.status), { n: Number(r.n), tokens: Number(r.tokens), attempts: Number(r.attempts) }]));
};

/** Bytes of payloads and checkpoints in a claim answer, as the worker receives them. */
const answered = (jobs: { payload: unknown; checkpoint?: unknown }[]) =>
  jobs.reduce((sum, j) => sum + Buffer.byteLength(JSON.stringify(j.payload)) + (j.checkpoint == null ? 0 : Buffer.byteLength(JSON.stringify(j.checkpoint))), 0);

test('a claim of 100 jobs of 1 MiB answers what fits in the default budget, and the claim riding on their completion the next ones; the rest stay pending', async () => {
  const t = await setup({});
  beds.push(t);
  expect(t.config.maxClaimBytes).toBe(DEFAULT_MAX_CLAIM_BYTES);
  const ids = await pendingJobs(t, 100, MIB);

  const res = await t.post('/api/v1/queues/q/claim', { workerId: 'w1', limit: 100 });
  expect(res.status).toBe(200);
  const jobs = res.json.jobs as { id: string; lockToken: string; payload: string }[];
  // 8 MiB holds 8 jobs of 1 MiB: in claim order (here: by id).
  expect(jobs.map((j) => Number(j.id))).toEqual(ids.slice(0, 8));
  expect(answered(jobs)).toBeLessThanOrEqual(t.config.maxClaimBytes);
  // The jobs not answered are not running under a token nobody got: untouched, for the next claim.
  expect(await counts(t)).toEqual({ running: { n: 8, tokens: 8, attempts: 8 }, pending: { n: 92, tokens: 0, attempts: 0 } });

  const next = await t.post('/api/v1/completions', {
    workerId: 'w1',
    results: jobs.map((j) => ({ id: j.id, lockToken: j.lockToken })),
    claim: { queue: 'q', limit: 100 },
  });
  expect(next.status).toBe(200);
  expect(next.json.results.every((r: { ok: boolean }) => r.ok)).toBe(true);
  expect(next.json.jobs.map((j: { id: string }) => Number(j.id))).toEqual(ids.slice(8, 16));
  expect(answered(next.json.jobs)).toBeLessThanOrEqual(t.config.maxClaimBytes);
  expect(await counts(t)).toEqual({ completed: { n: 8, tokens: 0, attempts: 8 }, running: { n: 8, tokens: 8, attempts: 8 }, pending: { n: 84, tokens: 0, attempts: 0 } });
  expect(t.errors).toEqual([]);
});

test('checkpoints count against the budget: a job released with its checkpoint is answered with it, within the budget', async () => {
  // A lowered budget (a server setting) keeps the data small: 64 KiB, payloads of 16 KiB, checkpoints of 16 KiB.
  const t = await setup({ maxClaimBytes: 64 * 1024, maxPayloadBytes: 32 * 1024 });
  beds.push(t);
  await pendingJobs(t, 10, 16 * 1024);
  const checkpoint = 'c'.repeat(16 * 1024 - 2);
  const first = await t.claim('q', 'w1', { limit: 10 });
  expect(first).toHaveLength(4);
  for (const j of first) {
    expect((await t.post(`/api/v1/jobs/${j.id}/checkpoint`, { workerId: 'w1', lockToken: j.lockToken, checkpoint })).status).toBe(200);
  }
  expect((await t.post('/api/v1/releases', { workerId: 'w1', leases: first.map((j) => ({ id: j.id, lockToken: j.lockToken })) })).status).toBe(200);

  // Released jobs are due again at once, first in claim order; with their checkpoints each is 32 KiB.
  const again = await t.claim('q', 'w2', { limit: 10 });
  expect(again.map((j) => j.id)).toEqual(first.slice(0, 2).map((j) => j.id));
  expect(again.every((j) => j.checkpoint === checkpoint)).toBe(true);
  expect(answered(again as never)).toBeLessThanOrEqual(64 * 1024);
});

test('a worker runs every job, each claim (its own or riding on a completion) taking what fits', async () => {
  const budget = 64 * 1024;
  const t = await setup({ maxClaimBytes: budget, maxPayloadBytes: 32 * 1024 }, { realClock: databaseClock });
  beds.push(t);
  await pendingJobs(t, 60, 10_000, Date.now() - 1_000);
  const server = await startServer({ ...t.config, port: 0, host: '127.0.0.1' }, { reaper: false, log: silentLogger });
  cleanups.push(() => server.close());

  // What each claim answered, read off the wire.
  const claims: { jobs: number; bytes: number }[] = [];
  const recordingFetch: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    if (/\/claim$|\/completions$/.test(String(input)) && res.ok) {
      const body = (await res.clone().json()) as { jobs?: { payload: unknown }[] };
      if (body.jobs?.length) claims.push({ jobs: body.jobs.length, bytes: answered(body.jobs) });
    }
    return res;
  };
  const seen = new Set<string>();
  const worker = createWorker({
    transport: httpTransport({ url: server.url, fetch: recordingFetch }),
    queue: 'q',
    concurrency: 20,
    handleSignals: false,
    logger: silentLogger,
    handler: ({ job }) => {
      seen.add(job.id);
      return null;
    },
  });
  cleanups.push(() => worker.close({ drainTimeoutMs: 0 }));
  worker.start();
  const completed = async () => Number((await t.client.execute(`SELECT count(*) AS n FROM jobs WHERE status = 'completed'`)).rows[0]!.n);
  await until('all 60 completed', async () => (await completed()) === 60, 15_000);
  expect(seen.size).toBe(60);
  // Six jobs of 10,000 bytes fit in 64 KiB: no answer held more, and claims did fill up to it.
  expect(claims.every((c) => c.bytes <= budget && c.jobs <= 6)).toBe(true);
  expect(claims.some((c) => c.jobs === 6)).toBe(true);
  expect(claims.reduce((n, c) => n + c.jobs, 0)).toBe(60);
});

test("in process, a worker's claim (its own, or riding on a completion) keeps to the embedding's budget", async () => {
  const t = await setup({});
  beds.push(t);
  const lh = await openLeasehold({ databaseUrl: t.url, config: { maxClaimBytes: 64 * 1024, maxPayloadBytes: 32 * 1024 } });
  cleanups.push(() => lh.close());
  const ids = (await lh.enqueueMany('q', Array.from({ length: 14 }, () => ({ payload: 'x'.repeat(9_998) })))).map((e) => e.job.id);
  const { jobs: first } = await lh.transport.claim({ queue: 'q', workerId: 'w1', limit: 14 });
  expect(first.map((j) => j.id)).toEqual(ids.slice(0, 6));
  const { answers, claimed } = await lh.transport.complete({ workerId: 'w1', results: first.map((j) => ({ id: j.id, lockToken: j.lockToken })), claim: { queue: 'q', limit: 14 } });
  expect(answers.every((a) => a.ok)).toBe(true);
  expect(claimed.map((j) => j.id)).toEqual(ids.slice(6, 12));
});
