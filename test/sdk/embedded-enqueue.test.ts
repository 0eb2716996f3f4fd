/**
 * The embedded API's enqueue (src/embedded/leasehold.ts, src/engine/tick-batches.ts):
 * calls for one queue made in the same tick are stored in one transaction,
 * each caller still gets its own answer or its own error; and enqueueMany.
 * A real database file per test, opened by openLeasehold as a user opens it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterEach, expect, test } from 'vitest';
import type { Config } from '../../src/core/config.ts';
import { LeaseholdError } from '../../src/core/errors.ts';
import { openLeasehold, type Leasehold } from '../../src/embedded/leasehold.ts';
import { countTransactions } from '../support/count-transactions.ts';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

async function open(config: Partial<Config> = {}, databaseUrl?: string): Promise<Leasehold> {
  if (databaseUrl === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-embq-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    databaseUrl = `file:${join(dir, 'jobs.db')}`;
  }
  const lh = await openLeasehold({ databaseUrl, config });
  cleanups.push(() => lh.close());
  return lh;
}

async function storedJobs(lh: Leasehold, queue: string): Promise<number> {
  const row = await lh.db.get<{ n: number }>(sql`SELECT count(*) AS n FROM jobs WHERE queue_name = ${queue}`);
  return row.n;
}

/** Settles every promise; the reasons of the rejected ones, by index. */
async function settle<T>(promises: Promise<T>[]) {
  const results = await Promise.allSettled(promises);
  return {
    values: results.map((r) => (r.status === 'fulfilled' ? r.value : undefined)),
    errors: results.map((r) => (r.status === 'rejected' ? (r.reason as LeaseholdError) : undefined)),
  };
}

test('8 enqueues in flight together are one transaction: each caller gets its own job, ids consecutive in call order, one wake-up', async () => {
  const lh = await open();
  const transactions = countTransactions(lh.db);
  const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => lh.enqueue('mail', { i })));
  expect(transactions()).toBe(1);
  expect(answers.map((a) => a.job.payload)).toEqual(Array.from({ length: 8 }, (_, i) => ({ i })));
  const ids = answers.map((a) => Number(a.job.id));
  expect(ids).toEqual(Array.from({ length: 8 }, (_, i) => ids[0]! + i));
  expect(answers.every((a) => !a.deduplicated && a.job.status === 'pending' && a.job.queue === 'mail')).toBe(true);
  expect(lh.engine.claimWaiters.generation('mail')).toBe(1);
  expect(await storedJobs(lh, 'mail')).toBe(8);
  // The stored rows are what the callers were told.
  for (const a of answers) expect((await lh.getJob(a.job.id))?.payload).toEqual(a.job.payload);
});

test('calls one after another are not held back: each awaited enqueue is its own transaction', async () => {
  const lh = await open();
  const transactions = countTransactions(lh.db);
  for (let i = 0; i < 3; i++) await lh.enqueue('mail', { i });
  expect(transactions()).toBe(3);
  expect(lh.engine.claimWaiters.generation('mail')).toBe(3);
});

test('close() right after enqueues that were not awaited still stores them, as when each call wrote at once', async () => {
  const lh = await open();
  const pending = [lh.enqueue('a', { n: 1 }), lh.enqueue('b', { n: 2 }), lh.enqueue('a', { n: 3 })];
  lh.close();
  const answers = await Promise.all(pending);
  expect(answers.map((a) => a.job.payload)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
  const again = await open({}, lh.config.databaseUrl);
  expect([await storedJobs(again, 'a'), await storedJobs(again, 'b')]).toEqual([2, 1]);
});

test('one batch per queue: two queues in the same tick are two transactions, each job in its own queue', async () => {
  const lh = await open();
  const transactions = countTransactions(lh.db);
  const answers = await Promise.all([lh.enqueue('a', 1), lh.enqueue('b', 2), lh.enqueue('a', 3), lh.enqueue('b', 4)]);
  expect(transactions()).toBe(2);
  expect(answers.map((a) => [a.job.queue, a.job.payload])).toEqual([
    ['a', 1],
    ['b', 2],
    ['a', 3],
    ['b', 4],
  ]);
  expect([await storedJobs(lh, 'a'), await storedJobs(lh, 'b')]).toEqual([2, 2]);
});

test('1,200 calls in one tick go 500 per transaction, ids in call order across the batches', async () => {
  const lh = await open();
  const transactions = countTransactions(lh.db);
  const answers = await Promise.all(Array.from({ length: 1200 }, (_, i) => lh.enqueue('bulk', { i })));
  expect(transactions()).toBe(3);
  expect(answers.map((a) => (a.job.payload as { i: number }).i)).toEqual(Array.from({ length: 1200 }, (_, i) => i));
  const ids = answers.map((a) => Number(a.job.id));
  expect(ids).toEqual([...ids].sort((x, y) => x - y));
  expect(new Set(ids).size).toBe(1200);
  expect(lh.engine.claimWaiters.generation('bulk')).toBe(3);
});

test('a bad call among good ones rejects alone, with its LeaseholdError; the others are stored in one transaction', async () => {
  const lh = await open();
  const transactions = countTransactions(lh.db);
  const { values, errors } = await settle([
    lh.enqueue('mail', { n: 0 }),
    lh.enqueue('mail', { n: 1 }, { priority: 5000 }),
    lh.enqueue('mail', { n: 2 }),
    lh.enqueue('mail', { big: 10n }),
    lh.enqueue('mail', { n: 4 }, { runAt: 'tomorrow' }),
    lh.enqueue('bad queue!', { n: 5 }),
    lh.enqueue('mail', { n: 6 }),
  ]);
  expect(errors.map((e) => e && [e.constructor.name, e.code, e.field])).toEqual([
    undefined,
    ['LeaseholdError', 'invalid_request', 'priority'],
    undefined,
    ['LeaseholdError', 'invalid_request', 'payload'],
    ['LeaseholdError', 'invalid_request', 'runAt'],
    ['LeaseholdError', 'invalid_request', 'queue'],
    undefined,
  ]);
  expect(errors[3]!.message).toMatch(/^payload must be JSON-serialisable: .*BigInt/);
  expect(values.filter(Boolean).map((v) => v!.job.payload)).toEqual([{ n: 0 }, { n: 2 }, { n: 6 }]);
  expect(transactions()).toBe(1);
  expect(await storedJobs(lh, 'mail')).toBe(3);
});

test('the same idempotency key twice in one batch: the first creates, the later ones are deduplicated onto it, as one after another', async () => {
  const calls = (lh: Leasehold) =>
    [
      () => lh.enqueue('mail', { to: 'ada', n: 1 }, { idempotencyKey: 'welcome-ada' }),
      () => lh.enqueue('mail', { to: 'bob' }, { idempotencyKey: 'welcome-bob' }),
      () => lh.enqueue('mail', { to: 'ada', n: 2 }, { idempotencyKey: 'welcome-ada' }),
      () => lh.enqueue('mail', { to: 'ada', n: 3 }, { idempotencyKey: 'welcome-ada' }),
    ] as const;
  const shape = (a: Awaited<ReturnType<Leasehold['enqueue']>>) => ({ id: a.job.id, key: a.job.idempotencyKey, payload: a.job.payload, deduplicated: a.deduplicated });

  const together = await open();
  const transactions = countTransactions(together.db);
  const batched = (await Promise.all(calls(together).map((call) => call()))).map(shape);
  expect(transactions()).toBe(1);

  const apart = await open();
  const sequential = [];
  for (const call of calls(apart)) sequential.push(shape(await call()));

  expect(batched).toEqual(sequential);
  expect(batched.map((b) => b.deduplicated)).toEqual([false, false, true, true]);
  expect(batched[2]).toEqual({ ...batched[0], deduplicated: true });
  expect(await storedJobs(together, 'mail')).toBe(2);
  // Only the batch that created jobs wakes claims; one of duplicates alone wakes none.
  expect(together.engine.claimWaiters.generation('mail')).toBe(1);
  await Promise.all([together.enqueue('mail', {}, { idempotencyKey: 'welcome-ada' }), together.enqueue('mail', {}, { idempotencyKey: 'welcome-bob' })]);
  expect(together.engine.claimWaiters.generation('mail')).toBe(1);
});

test('a new queue past maxQueues rejects every caller of its batch with the clear error; a batch for an existing queue in the same tick is stored', async () => {
  const lh = await open({ maxQueues: 1 });
  await lh.enqueue('existing', {});
  const { values, errors } = await settle([lh.enqueue('new', { n: 1 }), lh.enqueue('existing', { n: 2 }), lh.enqueue('new', { n: 3 })]);
  for (const i of [0, 2]) {
    expect(errors[i]).toBeInstanceOf(LeaseholdError);
    expect(errors[i]).toMatchObject({ code: 'conflict', field: 'queue' });
    expect(errors[i]!.message).toMatch(/there is no queue named "new" in use and leasehold already has 1 queues \(LEASEHOLD_MAX_QUEUES\).*nothing was stored/);
  }
  expect(values[1]?.job.payload).toEqual({ n: 2 });
  expect(await storedJobs(lh, 'new')).toBe(0);
  expect(await storedJobs(lh, 'existing')).toBe(2);
});

test('enqueueMany: one answer per item in order, 500 per transaction, duplicates within the list deduplicated', async () => {
  const lh = await open();
  const transactions = countTransactions(lh.db);
  const items = Array.from({ length: 1200 }, (_, i) => ({ payload: { i }, idempotencyKey: `k-${i}`, priority: i % 3 }));
  items[900]!.idempotencyKey = 'k-10'; // a later chunk
  items[11]!.idempotencyKey = 'k-10'; // the same chunk
  const answers = await lh.enqueueMany('many', items);
  expect(transactions()).toBe(3);
  expect(answers.map((a) => a.job.payload)).toEqual(items.map((item, i) => ([11, 900].includes(i) ? { i: 10 } : item.payload)));
  expect(answers.map((a) => a.job.priority)).toEqual(items.map((item, i) => ([11, 900].includes(i) ? 10 % 3 : item.priority)));
  expect(answers.filter((a) => a.deduplicated).map((a) => a.job.id)).toEqual([answers[10]!.job.id, answers[10]!.job.id]);
  expect(await storedJobs(lh, 'many')).toBe(1198);
  expect(lh.engine.claimWaiters.generation('many')).toBe(1);
});

test('enqueueMany checks every item first: an error names jobs[i].field and nothing is stored', async () => {
  const lh = await open();
  const transactions = countTransactions(lh.db);
  const items: { payload: unknown; priority?: number; delayMs?: number; runAt?: string }[] = Array.from({ length: 800 }, (_, i) => ({ payload: { i } }));
  items[700] = { payload: {}, priority: 1.5 };
  await expect(lh.enqueueMany('many', items)).rejects.toMatchObject({ name: 'LeaseholdError', code: 'invalid_request', field: 'jobs[700].priority' });
  items[700] = { payload: {}, delayMs: 5, runAt: '2030-01-01T00:00:00Z' };
  await expect(lh.enqueueMany('many', items)).rejects.toMatchObject({ field: 'jobs[700].runAt' });
  items[700] = { payload: { n: 1n } };
  await expect(lh.enqueueMany('many', items)).rejects.toThrow(/^jobs\[700\]\.payload must be JSON-serialisable/);
  await expect(lh.enqueueMany('bad queue!', [{ payload: 1 }])).rejects.toMatchObject({ field: 'queue' });
  expect(await lh.enqueueMany('many', [])).toEqual([]);
  expect(transactions()).toBe(0);
  expect(await storedJobs(lh, 'many')).toBe(0);
});

test('key modes through the embedded API: calls of one tick with one debounce key are one job with the last payload; a bad window is refused alone', async () => {
  const lh = await open();
  const { values, errors } = await settle([
    lh.enqueue('index', { edit: 1 }, { idempotencyKey: 'doc-7', uniqueWhile: 'debounce', debounceMs: 2000 }),
    lh.enqueue('index', { edit: 2 }, { idempotencyKey: 'doc-7', uniqueWhile: 'debounce', debounceMs: 2000 }),
    lh.enqueue('index', { edit: 3 }, { idempotencyKey: 'doc-7', uniqueWhile: 'debounce' }),
  ]);
  expect(errors[2]).toMatchObject({ code: 'invalid_request', field: 'debounceMs' });
  expect(values.slice(0, 2).map((a) => [a!.job.id, a!.replaced])).toEqual([[values[0]!.job.id, false], [values[0]!.job.id, true]]);
  expect(await lh.getJob(values[0]!.job.id)).toMatchObject({ payload: { edit: 2 }, uniqueWhile: 'debounce', replacedCount: 1 });
  expect(await storedJobs(lh, 'index')).toBe(1);
  const many = await lh.enqueueMany('index', [
    { payload: 'a', idempotencyKey: 'tick', uniqueWhile: 'throttle', throttleMs: 60_000 },
    { payload: 'b', idempotencyKey: 'tick', uniqueWhile: 'throttle', throttleMs: 60_000 },
  ]);
  expect(many.map((a) => [a.job.id, a.deduplicated, a.job.payload])).toEqual([[many[0]!.job.id, false, 'a'], [many[0]!.job.id, true, 'a']]);
});
