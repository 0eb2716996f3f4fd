/**
 * A bulk enqueue larger than ENQUEUE_CHUNK is stored one chunk at a time (the
 * event loop is free between chunks): every job there, in input order, with
 * idempotency keys deduplicated across chunk boundaries; a bad job anywhere
 * or a refused new queue stores nothing; a failure part-way says how far it got.
 */
import { afterEach, expect, test } from 'vitest';
import { defaultConfig } from '../../src/core/config.ts';
import { ENQUEUE_CHUNK } from '../../src/db/db.ts';
import { jobsInsert } from '../../src/db/store/enqueue.ts';
import { EnqueuePartlyStored } from '../../src/db/store/port.ts';
import { setup, type TestBed } from '../support/helpers.ts';

let t: TestBed;
afterEach(() => t?.close());

const count = async (sql: string) => Number((await t.client.execute(sql)).rows[0]![0]);

test('1,234 jobs (three chunks): all stored, answered and claimed in input order, keys deduplicated across chunks', async () => {
  t = await setup();
  expect(ENQUEUE_CHUNK).toBeLessThan(1234 / 2);
  const before = await t.enqueue('big', { payload: 'earlier', idempotencyKey: 'known' });
  const jobs = Array.from({ length: 1234 }, (_, i) => ({ payload: { i }, idempotencyKey: `k-${i}` }));
  jobs[700]!.idempotencyKey = 'k-10'; // the same key as jobs[10], one chunk later
  jobs[1200]!.idempotencyKey = 'known'; // a key already in the queue
  const res = await t.post('/api/v1/queues/big/jobs', { jobs });
  expect(res.status).toBe(201);
  const answer = res.json.jobs as { id: string; idempotencyKey: string; deduplicated: boolean }[];
  expect(answer).toHaveLength(1234);
  expect(answer.map((j) => j.idempotencyKey)).toEqual(jobs.map((j) => j.idempotencyKey));
  expect(answer[700]).toMatchObject({ id: answer[10]!.id, deduplicated: true });
  expect(answer[1200]).toMatchObject({ id: before.id, deduplicated: true });
  const fresh = answer.filter((j) => !j.deduplicated).map((j) => Number(j.id));
  expect(fresh).toHaveLength(1232);
  expect(fresh).toEqual([...fresh].sort((a, b) => a - b));
  expect(await count(`SELECT count(*) FROM jobs WHERE queue_name = 'big'`)).toBe(1233);

  // Workers get them in input order.
  const claimed = await t.claim('big', 'w1', { limit: 100 });
  expect(claimed.map((j) => j.payload)).toEqual(['earlier', ...jobs.slice(0, 99).map((j) => j.payload)]);
});

test('a bad job late in a large bulk, or a new queue past the cap, stores nothing', async () => {
  t = await setup({ maxQueues: 2 });
  const jobs = Array.from({ length: 1100 }, (_, i) => ({ payload: { i } })) as Record<string, unknown>[];
  jobs[1050] = { payload: 1, priority: 'high' };
  const bad = await t.post('/api/v1/queues/q1/jobs', { jobs });
  expect(bad.status).toBe(400);
  expect(bad.json.error.field).toBe('jobs[1050].priority');
  expect(await count('SELECT count(*) FROM jobs')).toBe(0);

  await t.enqueue('q1');
  await t.enqueue('q2');
  const refused = await t.post('/api/v1/queues/q3/jobs', { jobs: Array.from({ length: 1100 }, (_, i) => ({ payload: { i } })) });
  expect(refused.status).toBe(409);
  expect(await count('SELECT count(*) FROM jobs')).toBe(2);
  expect(await count(`SELECT count(*) FROM queues WHERE name = 'q3'`)).toBe(0);
});

test('a failure part-way keeps the chunks before it and says how many; sending the bulk again with its keys stores only the rest', async () => {
  t = await setup();
  // A real refusal from the database at jobs[700] (the second chunk).
  await t.client.execute(`CREATE TRIGGER refuse_700 BEFORE INSERT ON jobs WHEN NEW.payload ->> '$.i' = 700 BEGIN SELECT RAISE(ABORT, 'refused for the test'); END`);
  const jobs = Array.from({ length: 1100 }, (_, i) => ({ payload: { i }, idempotencyKey: `k-${i}` }));
  const params = { queue: 'q', jobs, actor: 'test', now: t.clock.now(), defaults: defaultConfig() };
  const err = await jobsInsert(t.db, params).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(EnqueuePartlyStored);
  expect((err as EnqueuePartlyStored).stored).toBe(ENQUEUE_CHUNK);
  expect((err as EnqueuePartlyStored).note).toContain(`the first ${ENQUEUE_CHUNK} of 1100 jobs were stored`);
  expect(await count('SELECT count(*) FROM jobs')).toBe(ENQUEUE_CHUNK);

  await t.client.execute('DROP TRIGGER refuse_700');
  const again = await jobsInsert(t.db, params);
  expect(again.filter((e) => e.deduplicated)).toHaveLength(ENQUEUE_CHUNK);
  expect(await count('SELECT count(*) FROM jobs')).toBe(1100);
});
