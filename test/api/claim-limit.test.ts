/**
 * A claim's limit is a ceiling: one above the server's
 * LEASEHOLD_MAX_CLAIM_BATCH gets at most that many jobs instead of a 400,
 * so a worker whose claimBatch suits a bigger server still gets work (before,
 * every claim of such a worker was refused and it retried forever).
 */
import { afterEach, expect, test } from 'vitest';
import { databaseClock } from '../../src/core/clock.ts';
import { startServer } from '../../src/runtime/node.ts';
import { silentLogger } from '../../src/core/log.ts';
import { createWorker, httpTransport } from '../../src/worker/index.ts';
import { setup, type TestBed } from '../support/helpers.ts';
import { until } from '../support/until.ts';

const beds: TestBed[] = [];
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  for (const t of beds.splice(0)) t.close();
});

async function bedWithJobs(maxClaimBatch: number, jobs: number) {
  const t = await setup({ maxClaimBatch }, { realClock: databaseClock });
  beds.push(t);
  const res = await t.post('/api/v1/queues/q/jobs', { jobs: Array.from({ length: jobs }, (_, n) => ({ payload: { n } })) });
  expect(res.status).toBe(201);
  return t;
}

test('a claim or a completion asking for more than the server allows gets the server maximum', async () => {
  const t = await bedWithJobs(5, 20);
  const claimed = await t.post('/api/v1/queues/q/claim', { workerId: 'w1', limit: 50 });
  expect(claimed.status).toBe(200);
  expect(claimed.json.jobs).toHaveLength(5);
  const next = await t.post('/api/v1/completions', {
    workerId: 'w1',
    results: claimed.json.jobs.map((j: { id: string; lockToken: string }) => ({ id: j.id, lockToken: j.lockToken })),
    claim: { queue: 'q', limit: 1_000 },
  });
  expect(next.status).toBe(200);
  expect(next.json.results.every((r: { ok: boolean }) => r.ok)).toBe(true);
  expect(next.json.jobs).toHaveLength(5);
  // What is still refused: a limit that is no count at all.
  for (const limit of [0, -1, 2.5, '10']) {
    const bad = await t.post('/api/v1/queues/q/claim', { workerId: 'w1', limit });
    expect(bad.status).toBe(400);
    expect(bad.json.error.field).toBe('limit');
  }
  const running = await t.client.execute(`SELECT count(*) AS n FROM jobs WHERE status = 'running'`);
  expect(Number(running.rows[0]!.n)).toBe(5);
});

test('a worker whose claimBatch is above the server maximum runs every job instead of being refused on every claim', async () => {
  const t = await bedWithJobs(10, 60);
  const server = await startServer({ ...t.config, port: 0, host: '127.0.0.1' }, { reaper: false, log: silentLogger });
  cleanups.push(() => server.close());
  let done = 0;
  const worker = createWorker({
    transport: httpTransport({ url: server.url }),
    queue: 'q',
    concurrency: 2,
    claimBatch: 400,
    handleSignals: false,
    logger: silentLogger,
    handler: () => {
      done++;
      return null;
    },
  });
  cleanups.push(() => worker.close({ drainTimeoutMs: 0 }));
  worker.start();
  // Stored, not only run: a completion goes to the server after its handler returns.
  const completed = async () => Number((await t.client.execute(`SELECT count(*) AS n FROM jobs WHERE status = 'completed'`)).rows[0]!.n);
  await until('all 60 completed', async () => (await completed()) === 60, 10_000);
  expect(done).toBe(60);
});
