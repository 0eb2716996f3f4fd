/**
 * The kept pending/running counts (live_counts, drizzle/0014), the kept
 * minutes of delayed jobs (due_later_counts, drizzle/0016) and the ready
 * count derived from them stay equal to a COUNT(*) of the jobs table across
 * every transition: enqueue (one, bulk, delayed, deduplicated), claim,
 * complete, fail (retried and final), release, cancel, operator retry and
 * requeue, the reaper, and retention pruning.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { createStore } from '../../src/db/store/create-store.ts';
import { runMaintenancePass } from '../../src/maintenance/pass.ts';
import { pruneOnce } from '../../src/maintenance/prune.ts';
import { setup, type TestBed } from '../support/helpers.ts';

const api = '/api/v1';
let t: TestBed;
afterEach(() => t?.close());

type Counts = Record<string, number>;

async function kept(): Promise<Counts> {
  const r = await t.client.execute('SELECT queue_name, status, jobs FROM live_counts WHERE jobs <> 0 ORDER BY 1, 2');
  return Object.fromEntries(r.rows.map((row) => [`${row.queue_name}/${row.status}`, Number(row.jobs)]));
}

async function counted(): Promise<Counts> {
  const r = await t.client.execute("SELECT queue_name, status, count(*) AS n FROM jobs WHERE status IN ('pending', 'running') GROUP BY 1, 2 ORDER BY 1, 2");
  return Object.fromEntries(r.rows.map((row) => [`${row.queue_name}/${row.status}`, Number(row.n)]));
}

async function keptLater(): Promise<Counts> {
  const r = await t.client.execute('SELECT queue_name, minute_at, jobs FROM due_later_counts ORDER BY 1, 2');
  return Object.fromEntries(r.rows.map((row) => [`${row.queue_name}/${row.minute_at}`, Number(row.jobs)]));
}

async function countedLater(): Promise<Counts> {
  const r = await t.client.execute(
    "SELECT queue_name, available_at - available_at % 60000 AS minute_at, count(*) AS n FROM jobs WHERE status = 'pending' AND available_at > created_at GROUP BY 1, 2 ORDER BY 1, 2",
  );
  return Object.fromEntries(r.rows.map((row) => [`${row.queue_name}/${row.minute_at}`, Number(row.n)]));
}

/** What GET /queues answers against a COUNT(*) of the same table at the same clock. */
async function expectHealthExact() {
  expect(await kept()).toEqual(await counted());
  // No row for an emptied minute, none missing, none off by one.
  expect(await keptLater()).toEqual(await countedLater());
  const now = t.clock.now() as number;
  const res = await t.get(`${api}/queues`);
  expect(res.status).toBe(200);
  for (const q of res.json.queues as { name: string; ready: number; counts: { pending: number; running: number } }[]) {
    const r = await t.client.execute({
      sql: `SELECT sum(status = 'pending') AS pending, sum(status = 'running') AS running, sum(status = 'pending' AND available_at <= ?2) AS ready,
              min(CASE WHEN status = 'pending' AND available_at <= ?2 THEN available_at END) AS oldest FROM jobs WHERE queue_name = ?1`,
      args: [q.name, now],
    });
    const row = r.rows[0]!;
    expect({ queue: q.name, pending: q.counts.pending, running: q.counts.running, ready: q.ready }).toEqual({
      queue: q.name,
      pending: Number(row.pending ?? 0),
      running: Number(row.running ?? 0),
      ready: Number(row.ready ?? 0),
    });
  }
}

async function claim(queue: string, workerId: string, limit = 1) {
  return t.claim(queue, workerId, { limit });
}

test('kept counts equal COUNT(*) after a mix of every transition, the reaper and pruning', async () => {
  t = await setup({ retentionMs: 60_000, leaseMs: 5_000, graceMs: 1_000, workerAliveMs: 1_000, maxReapDeferMs: 1_000, backoffBaseMs: 1_000, backoffMaxMs: 1_000 });
  await expectHealthExact();

  for (let i = 0; i < 6; i++) await t.enqueue('a', { payload: { i }, priority: i % 3 });
  await t.enqueue('a', { payload: {}, idempotencyKey: 'k' });
  await t.enqueue('a', { payload: {}, idempotencyKey: 'k' }); // deduplicated: no new row
  await t.post(`${api}/queues/b/jobs`, { jobs: [{ payload: 1 }, { payload: 2 }, { payload: 3, delayMs: 30_000 }] });
  await t.enqueue('b', { payload: {}, delayMs: 500 });
  // Delays over several minutes, for the minutes summed from the kept rows.
  for (const delayMs of [70_000, 130_000, 130_500, 3_600_000]) await t.enqueue('c', { payload: { delayMs }, delayMs });
  await expectHealthExact();

  const claimedA = await claim('a', 'w1', 4);
  const claimedB = await claim('b', 'w2', 2);
  await expectHealthExact();

  // complete, fail retryable (back to pending, later), fail final, release
  expect((await t.post(`${api}/jobs/${claimedA[0]!.id}/complete`, { workerId: 'w1', lockToken: claimedA[0]!.lockToken })).status).toBe(200);
  expect((await t.post(`${api}/jobs/${claimedA[1]!.id}/fail`, { workerId: 'w1', lockToken: claimedA[1]!.lockToken, error: 'boom', retryable: true })).status).toBe(200);
  expect((await t.post(`${api}/jobs/${claimedA[2]!.id}/fail`, { workerId: 'w1', lockToken: claimedA[2]!.lockToken, error: 'bad', retryable: false })).status).toBe(200);
  expect((await t.post(`${api}/jobs/${claimedA[3]!.id}/release`, { workerId: 'w1', lockToken: claimedA[3]!.lockToken, reason: 'shutting down' })).status).toBe(200);
  await expectHealthExact();

  // operator: cancel a pending job, retry the failed one, force-requeue a running one
  const pendingA = (await t.client.execute("SELECT id FROM jobs WHERE queue_name = 'a' AND status = 'pending' ORDER BY id LIMIT 1")).rows[0]!.id;
  expect((await t.post(`${api}/jobs/${pendingA}/cancel`, { reason: 'not needed' })).status).toBe(200);
  expect((await t.post(`${api}/jobs/${claimedA[2]!.id}/retry`, { reason: 'fixed' })).status).toBe(200);
  expect((await t.post(`${api}/jobs/${claimedB[0]!.id}/requeue`, { reason: 'stuck', force: true })).status).toBe(200);
  await expectHealthExact();

  // time passes: the delayed jobs and the retry become due, and the
  // remaining lease expires and is reaped
  t.clock.advance(2_000);
  await expectHealthExact();
  await claim('b', 'w3', 1);
  t.clock.advance(10_000);
  const report = await runMaintenancePass(t.db, t.clock.now(), t.config);
  expect(report.requeued.length + report.failed.length + report.deferred.length).toBeGreaterThan(0);
  await expectHealthExact();
  t.clock.advance(10_000);
  await runMaintenancePass(t.db, t.clock.now(), t.config);
  await expectHealthExact();

  // the clock walks through the delayed minutes: each read splits the kept
  // minutes from the one counted in the index at a different point
  for (let i = 0; i < 5; i++) {
    t.clock.advance(31_000);
    await expectHealthExact();
  }
  // a due delayed job claimed, and one deleted with its queue's pending jobs by an operator's cancel
  expect(await claim('c', 'w5', 1)).toHaveLength(1);
  const later = (await t.client.execute("SELECT id FROM jobs WHERE queue_name = 'c' AND status = 'pending' ORDER BY available_at DESC LIMIT 1")).rows[0]!.id;
  expect((await t.post(`${api}/jobs/${later}/cancel`, { reason: 'not needed' })).status).toBe(200);
  await expectHealthExact();

  // drain everything that is due, finish it, and prune past retention
  for (;;) {
    const jobs = await claim('a', 'w4', 10);
    jobs.push(...(await claim('b', 'w4', 10)));
    if (jobs.length === 0) break;
    for (const j of jobs) await t.post(`${api}/jobs/${j.id}/complete`, { workerId: 'w4', lockToken: j.lockToken });
  }
  await expectHealthExact();
  t.clock.advance(120_000);
  const pruned = await pruneOnce(createStore(t.db), t.clock.now() as number, t.config);
  expect(pruned.jobs).toBeGreaterThan(0);
  await expectHealthExact();
});

test('the migration backfills the counts of jobs that were there before it', async () => {
  t = await setup();
  for (let i = 0; i < 3; i++) await t.enqueue('a');
  await claim('a', 'w1');
  // As if the triggers had never run: the migration's backfill statement rebuilds it.
  await t.client.execute('DELETE FROM live_counts');
  await t.client.execute(
    "INSERT INTO live_counts (queue_name, status, jobs) SELECT queue_name, status, count(*) FROM jobs WHERE status IN ('pending', 'running') GROUP BY queue_name, status",
  );
  expect(await kept()).toEqual({ 'a/pending': 2, 'a/running': 1 });
  await expectHealthExact();
});

test("0016's backfill rebuilds the kept minutes of delayed jobs that were there before it", async () => {
  t = await setup();
  for (const delayMs of [0, 5_000, 70_000, 70_001, 3_600_000]) await t.enqueue('a', { payload: {}, delayMs });
  const before = await keptLater();
  expect(Object.values(before).reduce((a, b) => a + b, 0)).toBe(4);
  await t.client.execute('DELETE FROM due_later_counts');
  // The migration's last statement, as written in the file.
  const statements = readFileSync(join(import.meta.dirname, '..', '..', 'drizzle', '0016_due_later_counts.sql'), 'utf8').split('--> statement-breakpoint');
  await t.client.execute(statements.at(-1)!);
  expect(await keptLater()).toEqual(before);
  await expectHealthExact();
});
