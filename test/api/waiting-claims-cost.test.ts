/**
 * What waiting claims cost the server: parked claims run no statement of
 * their own (one shared read per queue per interval looks for work), an
 * enqueue wakes as many of them as it added jobs, and their number is
 * bounded per server and per token with a 429 that says when to come back.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { CLAIM_REPOLL_MS } from '../../src/engine/claim-waiters.ts';
import { databaseClock } from '../../src/core/clock.ts';
import type { Config } from '../../src/core/config.ts';
import { silentLogger } from '../../src/core/log.ts';
import { openLibsql } from '../../src/runtime/libsql.ts';
import { startServer } from '../../src/runtime/node.ts';
import { httpTransport } from '../../src/worker/index.ts';
import { countTransactions } from '../support/count-transactions.ts';
import { setup, type TestBed, appOn } from '../support/helpers.ts';
import { until } from '../support/until.ts';

const beds: TestBed[] = [];
afterEach(() => {
  for (const t of beds.splice(0)) {
    t.engine.claimWaiters.close();
    t.close();
  }
});

async function bed(overrides: Partial<Config> = {}) {
  const t = await setup(overrides, { realClock: databaseClock });
  beds.push(t);
  return t;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function claim(t: TestBed, workerId: string, waitMs: number, token?: string) {
  return t.app.request('/api/v1/queues/q/claim', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ workerId, waitMs }),
  });
}

/** Counts the reads of the shared look: the one statement that counts claimable jobs. */
function countLooks(t: TestBed): () => number {
  const real = t.db.all.bind(t.db);
  let looks = 0;
  (t.db as { all: unknown }).all = (query: Parameters<typeof real>[0]) => {
    const chunks = (query as unknown as { queryChunks?: unknown[] }).queryChunks;
    const text = chunks ? JSON.stringify(chunks) : '';
    if (text.includes('SELECT count(*) AS n FROM (')) looks++;
    return real(query);
  };
  return () => looks;
}

describe('waiting claims', () => {
  test('40 claims parked on an empty queue write nothing while they wait, and share one look per interval', async () => {
    const t = await bed();
    const commits = countTransactions(t.db);
    const looks = countLooks(t);
    const claims = Array.from({ length: 40 }, (_, i) => claim(t, `w${i}`, 1_500));
    await until('every claim to wait', () => t.engine.claimWaiters.waiting === 40);
    const afterFirstClaims = commits();
    const looksBefore = looks();
    const sleptFrom = performance.now();
    await sleep(1_000);
    // On a loaded machine the sleep can run long: the bound is per interval actually waited.
    const slept = performance.now() - sleptFrom;
    // Each claim made its first claim (a write: it registers the worker) and
    // nothing since; on the old code every claim claimed again every 250 ms.
    expect(commits()).toBe(afterFirstClaims);
    expect(afterFirstClaims).toBe(40);
    // About one look per 250 ms for the queue, however many claims wait on it.
    expect(looks() - looksBefore).toBeGreaterThanOrEqual(2);
    expect(looks() - looksBefore).toBeLessThanOrEqual(Math.ceil(slept / CLAIM_REPOLL_MS) + 2);
    const answers = await Promise.all(claims);
    expect(answers.every((a) => a.status === 200)).toBe(true);
  });

  test('one enqueue wakes one of 20 waiting claims; the others keep waiting', async () => {
    const t = await bed();
    const claims = Array.from({ length: 20 }, (_, i) => claim(t, `w${i}`, 5_000));
    await until('every claim to wait', () => t.engine.claimWaiters.waiting === 20);
    const commits = countTransactions(t.db);
    const job = await t.enqueue('q');
    const first = await Promise.race(claims.map(async (c) => (await c).json() as Promise<{ jobs: { id: string }[] }>));
    expect(first.jobs.map((j) => j.id)).toEqual([job.id]);
    await sleep(CLAIM_REPOLL_MS * 2);
    // The enqueue's own commit and one claim: not twenty claims racing for one job.
    expect(commits()).toBeLessThanOrEqual(3);
    expect(t.engine.claimWaiters.waiting).toBe(19);
  });

  test('a delayed job wakes no waiting claim when it is enqueued: nothing is claimable yet', async () => {
    const t = await bed();
    const claims = Array.from({ length: 5 }, (_, i) => claim(t, `w${i}`, 2_000));
    await until('every claim to wait', () => t.engine.claimWaiters.waiting === 5);
    const commits = countTransactions(t.db);
    await t.enqueue('q', { payload: {}, delayMs: 60_000 });
    await sleep(CLAIM_REPOLL_MS);
    // The enqueue's own commit, and no claim woken to find nothing.
    expect(commits()).toBe(1);
    expect(t.engine.claimWaiters.waiting).toBe(5);
    t.engine.claimWaiters.close();
    await Promise.all(claims);
  });

  test('a job enqueued by another server wakes as many waiting claims as there are jobs, through the shared look', async () => {
    const t = await bed();
    const claims = Array.from({ length: 10 }, (_, i) => claim(t, `w${i}`, 5_000));
    await until('every claim to wait', () => t.engine.claimWaiters.waiting === 10);
    // Another server on the same database: this server's waiters hear nothing of it.
    const other = await openLibsql(t.url);
    const otherApp = appOn({ db: other.db, config: t.config, clock: databaseClock, log: silentLogger });
    const res = await otherApp.request('/api/v1/queues/q/jobs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jobs: [{ payload: 1 }, { payload: 2 }] }) });
    expect(res.status).toBe(201);
    other.close();
    await until('two claims to take the two jobs', () => t.engine.claimWaiters.waiting === 8);
    await sleep(CLAIM_REPOLL_MS * 2);
    expect(t.engine.claimWaiters.waiting).toBe(8);
    t.engine.claimWaiters.close();
    await Promise.all(claims);
    expect(Number((await t.client.execute("SELECT count(*) AS n FROM jobs WHERE status = 'running'")).rows[0]!.n)).toBe(2);
  });

  test('a queue at its maxRunning is not woken by the look: claims wait without claiming', async () => {
    const t = await bed();
    expect((await t.call('PATCH', '/api/v1/queues/q/settings', { maxRunning: 1 })).status).toBe(200);
    await t.enqueue('q');
    await t.enqueue('q');
    expect((await claim(t, 'busy', 0)).status).toBe(200);
    const commits = countTransactions(t.db);
    const claims = Array.from({ length: 5 }, (_, i) => claim(t, `w${i}`, 1_200));
    await until('every claim to wait', () => t.engine.claimWaiters.waiting === 5);
    await sleep(800);
    // Five first claims, then nothing: a job is pending but the queue is full.
    expect(commits()).toBe(5);
    await Promise.all(claims);
  });
});

describe('bounds', () => {
  test('past LEASEHOLD_MAX_WAITING_CLAIMS a claim that finds nothing gets 429 with Retry-After; a claim that finds work still gets it', async () => {
    const t = await bed({ maxWaitingClaims: 3 });
    const waiting = [claim(t, 'a', 3_000), claim(t, 'b', 3_000), claim(t, 'c', 3_000)];
    await until('three claims to wait', () => t.engine.claimWaiters.waiting === 3);
    const refused = await claim(t, 'd', 3_000);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    const body = (await refused.json()) as { error: { code: string; field: string; message: string } };
    expect(body.error).toMatchObject({ code: 'too_many_requests', field: 'waitMs' });
    expect(body.error.message).toContain('LEASEHOLD_MAX_WAITING_CLAIMS');
    // Without waitMs nothing parks, so nothing is refused.
    expect((await claim(t, 'e', 0)).status).toBe(200);
    t.engine.claimWaiters.close();
    await Promise.all(waiting);
  });

  test('per token: one named token cannot take every waiting slot', async () => {
    const t = await bed({ workerTokens: 'alpha:alpha-token-0123456789,beta:beta-token-0123456789', workerToken: 'plain-worker-token-0123', maxWaitingClaimsPerToken: 2 });
    const alpha = [claim(t, 'a1', 3_000, 'alpha-token-0123456789'), claim(t, 'a2', 3_000, 'alpha-token-0123456789')];
    await until('alpha to hold two waiting claims', () => t.engine.claimWaiters.waiting === 2);
    const third = await claim(t, 'a3', 3_000, 'alpha-token-0123456789');
    expect(third.status).toBe(429);
    expect(((await third.json()) as { error: { message: string } }).error.message).toContain('LEASEHOLD_MAX_WAITING_CLAIMS_PER_TOKEN');
    const beta = claim(t, 'b1', 3_000, 'beta-token-0123456789');
    await until('beta to wait too', () => t.engine.claimWaiters.waiting === 3);
    const enqueued = await t.call('POST', '/api/v1/queues/q/jobs', { payload: {} }, { authorization: 'Bearer plain-worker-token-0123' });
    expect(enqueued.status).toBe(201);
    const first = await Promise.race([...alpha, beta].map(async (a) => ((await (await a).json()) as { jobs: { id: string }[] }).jobs.map((j) => j.id)));
    expect(first).toEqual([enqueued.json.job.id]);
    t.engine.claimWaiters.close();
    await Promise.all([...alpha, beta]);
  });

  test("the SDK's transport reads the 429 as 'nothing now, come back after Retry-After'", async () => {
    const t = await bed({ maxWaitingClaims: 1 });
    const server = await startServer({ ...t.config, port: 0, host: '127.0.0.1' }, { reaper: false, log: silentLogger });
    try {
      const transport = httpTransport({ url: server.url });
      const stop = new AbortController();
      const holding = transport.claim({ queue: 'q', workerId: 'w1', limit: 1, waitMs: 3_000, signal: stop.signal });
      await sleep(500);
      const answer = await transport.claim({ queue: 'q', workerId: 'w2', limit: 1, waitMs: 3_000 });
      expect(answer.jobs).toEqual([]);
      expect(answer.retryAfterMs).toBe(1_000);
      stop.abort();
      await holding.catch(() => undefined);
    } finally {
      await server.close().catch(() => undefined);
    }
  });
});
