/**
 * Single-job enqueue requests that the server reads in one event-loop turn
 * share one transaction (src/engine/tick-batches.ts), so independent producers
 * (other languages, curl, many processes, each sending one job) share
 * commits. Each request still gets its own answer or its own error, as if it
 * had been alone.
 */
import { afterEach, expect, test } from 'vitest';
import { setup, type TestBed, appOn } from '../support/helpers.ts';
import { countTransactions } from '../support/count-transactions.ts';

let t: TestBed;
afterEach(() => {
  expect(t.errors).toEqual([]);
  t.close();
});

const post = (app: { request: TestBed['app']['request'] }, queue: string, body: unknown) =>
  app.request(`/api/v1/queues/${queue}/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

test('20 requests at once: one transaction, each its own job, in request order; a bad one is refused alone', async () => {
  t = await setup();
  const commits = countTransactions(t.db);
  const bodies = Array.from({ length: 20 }, (_, i) => (i === 7 ? { payload: 1, priority: 'high' } : { payload: { n: i } }));
  const answers = await Promise.all(bodies.map((b) => post(t.app, 'q', b)));
  const json = await Promise.all(answers.map((a) => a.json() as Promise<any>));
  expect(answers.map((a) => a.status)).toEqual(bodies.map((_, i) => (i === 7 ? 400 : 201)));
  expect(json[7].error.field).toBe('priority');
  expect(commits()).toBe(1);
  const good = json.filter((_, i) => i !== 7);
  expect(good.map((j) => j.job.payload.n)).toEqual(bodies.map((_, i) => i).filter((i) => i !== 7));
  const ids = good.map((j) => Number(j.job.id));
  expect(ids).toEqual(ids.map((_, k) => ids[0]! + k));
  expect(Number((await t.client.execute('SELECT count(*) AS n FROM jobs')).rows[0]!.n)).toBe(19);
});

test('the same idempotency key twice in one batch: the first creates, the second is deduplicated onto it', async () => {
  t = await setup();
  const [a, b] = await Promise.all([post(t.app, 'q', { payload: 'first', idempotencyKey: 'k' }), post(t.app, 'q', { payload: 'second', idempotencyKey: 'k' })]);
  expect([a.status, b.status]).toEqual([201, 200]);
  const [ja, jb] = [(await a.json()) as any, (await b.json()) as any];
  expect(jb).toMatchObject({ deduplicated: true, job: { id: ja.job.id, payload: 'first' } });
});

test('a new queue past LEASEHOLD_MAX_QUEUES refuses every request of its batch; another queue in the same turn is stored', async () => {
  t = await setup({ maxQueues: 1 });
  expect((await post(t.app, 'a', { payload: 0 })).status).toBe(201);
  const answers = await Promise.all([post(t.app, 'b', { payload: 1 }), post(t.app, 'a', { payload: 2 }), post(t.app, 'b', { payload: 3 })]);
  expect(answers.map((a) => a.status)).toEqual([409, 201, 409]);
  expect(((await answers[0]!.json()) as any).error).toMatchObject({ code: 'conflict', field: 'queue' });
  expect((await t.client.execute("SELECT queue_name, count(*) AS n FROM jobs GROUP BY 1")).rows.map((r) => [r.queue_name, Number(r.n)])).toEqual([['a', 2]]);
});

test('requests one after another each commit in their own turn; with batchEnqueues off (Workers) concurrent ones do too', async () => {
  t = await setup();
  const commits = countTransactions(t.db);
  for (let i = 0; i < 3; i++) expect((await post(t.app, 'q', { payload: i })).status).toBe(201);
  expect(commits()).toBe(3);
  const unbatched = appOn({ db: t.db, config: t.config, clock: t.clock, log: t.log, batchEnqueues: false });
  const answers = await Promise.all(Array.from({ length: 5 }, (_, i) => post(unbatched, 'q', { payload: i })));
  expect(answers.map((a) => a.status)).toEqual([201, 201, 201, 201, 201]);
  expect(commits()).toBe(8);
});
