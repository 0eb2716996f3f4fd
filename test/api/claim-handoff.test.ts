/**
 * An enqueue runs the claims waiting for its jobs in its own transaction
 * (src/engine/claim-handoff.ts): one commit stores the job and hands it to
 * the waiting claim, which is answered from it, instead of the enqueue's
 * commit, a wake-up and the claim's own commit. The claim is the claim
 * statement the woken claim would have run, so a paused queue, a rate limit
 * and a refused enqueue leave the claim waiting with nothing taken.
 */
import { afterEach, expect, test } from 'vitest';
import { databaseClock } from '../../src/core/clock.ts';
import type { Config } from '../../src/core/config.ts';
import { dbTransport } from '../../src/embedded/db-transport.ts';
import { createWorker, type Worker } from '../../src/worker/index.ts';
import { countTransactions } from '../support/count-transactions.ts';
import { setup, type TestBed } from '../support/helpers.ts';
import { until } from '../support/until.ts';

const beds: TestBed[] = [];
const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.close({ drainTimeoutMs: 0 })));
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

type ClaimAnswer = { jobs: { id: string; lockToken: string }[] };

/** A claim over HTTP that waits up to `waitMs`; resolves with its answer and when it came. */
async function waitingClaim(t: TestBed, workerId: string, body: Record<string, unknown> = {}) {
  const res = await t.app.request('/api/v1/queues/q/claim', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ workerId, waitMs: 5_000, ...body }),
  });
  expect(res.status).toBe(200);
  return { answer: (await res.json()) as ClaimAnswer, at: performance.now() };
}

async function row(t: TestBed, id: string) {
  const { rows } = await t.client.execute({ sql: 'SELECT status, locked_by, attempt_count FROM jobs WHERE id = ?', args: [Number(id)] });
  const r = rows[0]!;
  return { status: String(r.status), locked_by: r.locked_by === null ? null : String(r.locked_by), attempt_count: Number(r.attempt_count) };
}

test('an enqueue to a queue with a waiting claim stores the job and hands it to the claim in one transaction, the claim answered first', async () => {
  const t = await bed();
  const claim = waitingClaim(t, 'w1');
  await until('the claim to wait', () => t.engine.claimWaiters.waiting === 1);
  const commits = countTransactions(t.db);
  const job = await t.enqueue('q', { payload: { n: 1 } });
  const enqueuedAt = performance.now();
  const { answer, at } = await claim;
  expect(answer.jobs.map((j) => j.id)).toEqual([job.id]);
  // One commit for both: before, the enqueue's and then the woken claim's.
  expect(commits()).toBe(1);
  expect(at).toBeLessThanOrEqual(enqueuedAt);
  expect(await row(t, job.id)).toEqual({ status: 'running', locked_by: 'w1', attempt_count: 1 });
  // The claim is audited as any claim: its event names the worker.
  expect((await t.events(job.id)).filter((e) => e.type === 'claimed').map((e) => e.workerId)).toEqual(['w1']);
  // The handed lease is a real one: its token completes the job.
  const done = await t.post(`/api/v1/jobs/${job.id}/complete`, { workerId: 'w1', lockToken: answer.jobs[0]!.lockToken, result: { ok: true } });
  expect(done.status).toBe(200);
  expect(t.engine.claimWaiters.waiting).toBe(0);
});

test('a bulk of 2 jobs is handed to the two claims that waited longest, each taking one; the third keeps waiting', async () => {
  const t = await bed();
  const first = waitingClaim(t, 'w1', { limit: 1 });
  await until('w1 to wait', () => t.engine.claimWaiters.waiting === 1);
  const second = waitingClaim(t, 'w2', { limit: 1 });
  await until('w2 to wait', () => t.engine.claimWaiters.waiting === 2);
  const third = waitingClaim(t, 'w3', { limit: 1, waitMs: 600 });
  await until('w3 to wait', () => t.engine.claimWaiters.waiting === 3);
  const commits = countTransactions(t.db);
  const bulk = await t.post('/api/v1/queues/q/jobs', { jobs: [{ payload: { n: 1 } }, { payload: { n: 2 } }] });
  expect(bulk.status).toBe(201);
  const ids = (bulk.json.jobs as { id: string }[]).map((j) => j.id);
  const [a, b] = [(await first).answer, (await second).answer];
  expect([...a.jobs, ...b.jobs].map((j) => j.id).sort()).toEqual([...ids].sort());
  expect(a.jobs).toHaveLength(1);
  expect(b.jobs).toHaveLength(1);
  expect(commits()).toBe(1);
  expect(t.engine.claimWaiters.waiting).toBe(1);
  expect((await third).answer.jobs).toEqual([]);
});

test('on a paused queue the enqueue claims nothing for the waiting claim: the job stays pending and the claim keeps waiting', async () => {
  const t = await bed();
  expect((await t.post('/api/v1/queues/q/pause')).status).toBe(200);
  const claim = waitingClaim(t, 'w1', { waitMs: 800 });
  await until('the claim to wait', () => t.engine.claimWaiters.waiting === 1);
  const job = await t.enqueue('q');
  await until('the claim to wait again', () => t.engine.claimWaiters.waiting === 1);
  expect((await row(t, job.id)).status).toBe('pending');
  expect((await claim).answer.jobs).toEqual([]);
  expect((await row(t, job.id)).status).toBe('pending');
});

test("a rate limit holds the handed claim as it holds any claim: past the window's one start, the job stays pending", async () => {
  const t = await bed();
  expect((await t.call('PATCH', '/api/v1/queues/q/settings', { rateLimit: { max: 1, windowMs: 60_000 } })).status).toBe(200);
  const first = waitingClaim(t, 'w1');
  await until('the claim to wait', () => t.engine.claimWaiters.waiting === 1);
  const one = await t.enqueue('q');
  expect((await first).answer.jobs.map((j) => j.id)).toEqual([one.id]);
  const second = waitingClaim(t, 'w2', { waitMs: 800 });
  await until('the second claim to wait', () => t.engine.claimWaiters.waiting === 1);
  const two = await t.enqueue('q');
  expect((await second).answer.jobs).toEqual([]);
  expect((await row(t, two.id)).status).toBe('pending');
});

test('an enqueue refused after its transaction (a new queue past LEASEHOLD_MAX_QUEUES) still answers the claims it carried: they keep waiting, nothing claimed', async () => {
  const t = await bed({ maxQueues: 1 });
  await t.enqueue('other');
  const claim = waitingClaim(t, 'w1', { waitMs: 800 });
  await until('the claim to wait', () => t.engine.claimWaiters.waiting === 1);
  const refused = await t.post('/api/v1/queues/q/jobs', { payload: {} });
  expect(refused.status).toBe(409);
  await until('the claim to wait again', () => t.engine.claimWaiters.waiting === 1);
  expect((await claim).answer.jobs).toEqual([]);
  expect(t.errors).toEqual([]);
});

test('an enqueue whose transaction fails (the database refuses writes) stores and claims nothing, and the claim it carried is not left hanging: it claims again and answers the fault', async () => {
  const t = await bed();
  const claim = t.app.request('/api/v1/queues/q/claim', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ workerId: 'w1', waitMs: 5_000 }) });
  await until('the claim to wait', () => t.engine.claimWaiters.waiting === 1);
  // SQLite itself refuses every write on this connection, the store's own.
  await t.client.execute('PRAGMA query_only = 1');
  const failed = await t.post('/api/v1/queues/q/jobs', { payload: { n: 1 } });
  expect(failed.status).toBe(503);
  // Answered at once, not at its waitMs: its own claim met the same refusal.
  const answer = await claim;
  expect(answer.status).toBe(503);
  await t.client.execute('PRAGMA query_only = 0');
  expect(t.engine.claimWaiters.waiting).toBe(0);
  const { rows } = await t.client.execute("SELECT count(*) AS n FROM jobs WHERE status = 'running'");
  expect(Number(rows[0]!.n)).toBe(0);
  expect(Number((await t.client.execute('SELECT count(*) AS n FROM jobs')).rows[0]!.n)).toBe(0);
  t.errors.length = 0; // the refused writes were logged as the storage faults they are
});

test('in process: an embedded enqueue hands its job to an idle worker in the enqueue transaction', async () => {
  const t = await bed();
  const ran: unknown[] = [];
  const worker = createWorker({ transport: dbTransport(t.engine), queue: 'q', handler: (ctx) => void ran.push(ctx.job.payload), handleSignals: false, logger: { info() {}, warn() {}, error() {} } });
  workers.push(worker);
  worker.start();
  await until('the worker to wait for work', () => t.engine.claimWaiters.waiting === 1);
  const commits = countTransactions(t.db);
  const { job } = await t.engine.enqueue('q', { payload: { n: 7 } }, 'embedded');
  await until('the handler to run', () => ran.length === 1);
  expect(ran).toEqual([{ n: 7 }]);
  // The enqueue (with the claim) and the completion, which claims for its freed slot: no separate claim.
  await until('the job to complete', async () => (await row(t, String(job.id))).status === 'completed');
  expect(commits()).toBe(2);
});
