/**
 * The queue features on every backend: max_running and rate limits
 * (both counted inside the claim statement), uniqueWhile, and schedules
 * firing each due occurrence once (schedulesOnce over the bundle's store).
 */
import { sql } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import type { Config } from '../../../src/core/config.ts';
import { schedulesOnce } from '../../../src/maintenance/schedules.ts';
import { DEFAULTS, T0, useBundle, type StoreBackend } from './support.ts';

/** What schedulesOnce reads of the config: the queue defaults and the queue cap. */
const CONFIG = { ...DEFAULTS, maxQueues: 1_000 } as unknown as Config;

export function defineQueueFeatures(backend: StoreBackend) {
  describe('queue features', () => {
    const t = useBundle(backend);
    const claim = (workerId: string, limit: number, now = t().clock.now()) =>
      t().store.jobsClaimPending({ queue: 'q', workerId, limit, now, defaults: DEFAULTS });
    const running = async () => (await t().db.all<{ id: number }>(sql`SELECT id FROM jobs WHERE status = 'running'`)).length;
    const fivePending = async () => {
      for (let i = 0; i < 5; i++) await t().pendingJob({ payload: { i } });
    };

    test('maxRunning 2: claims from several workers never leave more than 2 running; completing one frees one slot', async () => {
      const { store } = t();
      await fivePending();
      await store.queueUpsertSettings({ queue: 'q', patch: { maxRunning: 2 }, now: T0 });
      const first = await claim('w1', 5);
      expect(first).toHaveLength(2);
      expect(await claim('w2', 5)).toHaveLength(0);
      expect(await claim('w3', 1)).toHaveLength(0);
      expect(await running()).toBe(2);
      const [done] = await store.jobsCompleteIfOwned({ workerId: 'w1', results: [{ id: first[0]!.id, lockToken: first[0]!.lock_token! }], now: T0 + 1 });
      expect(done!.ok).toBe(true);
      expect(await claim('w2', 5, T0 + 2)).toHaveLength(1);
      expect(await claim('w3', 5, T0 + 3)).toHaveLength(0);
      expect(await running()).toBe(2);
    });

    test('queueClaimableCount says what a claim could take now, without taking it: due jobs, within maxRunning, the rate window and the cap, none while paused', async () => {
      const { store, pendingJob } = t();
      const count = (cap: number, now = T0) => store.queueClaimableCount({ queue: 'q', cap, now });
      await fivePending();
      await pendingJob({ availableAt: T0 + 60_000 });
      expect(await count(100)).toBe(5);
      expect(await count(3)).toBe(3);
      expect(await running()).toBe(0);
      await store.queueUpsertSettings({ queue: 'q', patch: { maxRunning: 2 }, now: T0 });
      expect(await count(100)).toBe(2);
      await claim('w1', 2);
      expect(await count(100)).toBe(0);
      // The window counts claims made under the limit: two of its three.
      await store.queueUpsertSettings({ queue: 'q', patch: { maxRunning: null, rateLimit: { max: 3, windowMs: 60_000 } }, now: T0 });
      expect(await count(100)).toBe(3);
      expect(await claim('w2', 2)).toHaveLength(2);
      expect(await count(100)).toBe(1);
      await store.queueUpsertSettings({ queue: 'q', patch: { paused: true }, now: T0 });
      expect(await count(100)).toBe(0);
      expect(await store.queueClaimableCount({ queue: 'nobody', cap: 10, now: T0 })).toBe(0);
    });

    test('rateLimit 3 per minute: at most 3 claims in the window, claims go on in the next one', async () => {
      const { store, clock } = t();
      await fivePending();
      await store.queueUpsertSettings({ queue: 'q', patch: { rateLimit: { max: 3, windowMs: 60_000 } }, now: T0 });
      expect(await claim('w1', 2)).toHaveLength(2);
      expect(await claim('w2', 5, T0 + 1_000)).toHaveLength(1);
      expect(await claim('w3', 5, T0 + 59_999)).toHaveLength(0);
      expect(await running()).toBe(3);
      clock.set(T0 + 60_000);
      expect(await claim('w1', 5)).toHaveLength(2);
      expect(await running()).toBe(5);
    });

    test("uniqueWhile 'active': deduplicated while pending, a new job once the first completed", async () => {
      const { store } = t();
      const enqueue = (now: number) =>
        store.jobsInsert({ queue: 'q', jobs: [{ payload: {}, idempotencyKey: 'k', uniqueWhile: 'active' }], actor: null, now, defaults: DEFAULTS });
      const [a] = await enqueue(T0);
      expect(a!.deduplicated).toBe(false);
      const [again] = await enqueue(T0 + 1);
      expect(again).toMatchObject({ deduplicated: true, job: { id: a!.job.id } });
      const [c] = await claim('w1', 1, T0 + 2);
      expect(c!.id).toBe(a!.job.id);
      await store.jobsCompleteIfOwned({ workerId: 'w1', results: [{ id: c!.id, lockToken: c!.lock_token! }], now: T0 + 3 });
      const [fresh] = await enqueue(T0 + 4);
      expect(fresh!.deduplicated).toBe(false);
      expect(fresh!.job.id).not.toBe(a!.job.id);
      expect(fresh!.job.status).toBe('pending');
    });

    test("uniqueWhile 'retained' (the default): the finished job keeps being returned", async () => {
      const { store } = t();
      const enqueue = (now: number) => store.jobsInsert({ queue: 'q', jobs: [{ payload: {}, idempotencyKey: 'k' }], actor: null, now, defaults: DEFAULTS });
      const [a] = await enqueue(T0);
      const [c] = await claim('w1', 1, T0 + 1);
      await store.jobsCompleteIfOwned({ workerId: 'w1', results: [{ id: c!.id, lockToken: c!.lock_token! }], now: T0 + 2 });
      const [again] = await enqueue(T0 + 3);
      expect(again).toMatchObject({ deduplicated: true, job: { id: a!.job.id, status: 'completed' } });
      expect(await t().count('jobs')).toBe(1);
    });

    describe('schedules', () => {
      const every = (name: string) =>
        t().store.scheduleCreate({ name, queue: 'ticks', cron: null, timeZone: null, intervalMs: 60_000, payload: { n: name }, jobOptions: {}, paused: false, nextRunAt: T0 + 60_000, now: T0 });
      const keys = async () => (await t().db.all<{ k: string }>(sql`SELECT schedule_name || '@' || occurrence_at AS k FROM jobs ORDER BY id`)).map((r) => r.k);

      test('an interval schedule enqueues one job per due occurrence', async () => {
        const { store, clock } = t();
        expect(await every('tick')).toBeDefined();
        expect(await schedulesOnce(store, clock.now(), CONFIG)).toMatchObject({ enqueued: 0 });
        for (let i = 1; i <= 3; i++) {
          clock.set(T0 + i * 60_000 + 5_000);
          expect(await schedulesOnce(store, clock.now(), CONFIG)).toEqual({ enqueued: 1, alreadyEnqueued: 0, missedSkipped: 0, missedCountCapped: false, errors: [] });
          expect(await schedulesOnce(store, clock.now(), CONFIG)).toMatchObject({ enqueued: 0, alreadyEnqueued: 0 });
        }
        expect(await keys()).toEqual([1, 2, 3].map((i) => `tick@${T0 + i * 60_000}`));
      });

      test('two passes at the same instant make one job', async () => {
        const { store, clock } = t();
        await every('both');
        clock.set(T0 + 60_000);
        const reports = await Promise.all([schedulesOnce(store, clock.now(), CONFIG), schedulesOnce(store, clock.now(), CONFIG)]);
        expect(reports.every((r) => r.errors.length === 0)).toBe(true);
        expect(reports.reduce((s, r) => s + r.enqueued, 0)).toBe(1);
        expect(await t().count('jobs')).toBe(1);
      });

      test("policies: overlap 'skip' skips while the previous occurrence's job is pending; catchUp 'all' fills its window; each skip is a row and a counter", async () => {
        const { store, clock } = t();
        await store.scheduleCreate({ name: 'busy', queue: 'ticks', cron: null, timeZone: null, intervalMs: 60_000, payload: null, jobOptions: {}, paused: false, nextRunAt: T0 + 60_000, overlap: 'skip', now: T0 });
        await store.scheduleCreate({ name: 'fill', queue: 'ticks', cron: null, timeZone: null, intervalMs: 60_000, payload: null, jobOptions: {}, paused: false, nextRunAt: T0 + 60_000, catchUp: 'all', catchUpWindowMs: 120_000, now: T0 });
        expect(await store.schedulesNextDueAt()).toBe(T0 + 60_000);
        clock.set(T0 + 60_000);
        expect(await schedulesOnce(store, clock.now(), CONFIG)).toMatchObject({ enqueued: 2, errors: [] });
        clock.set(T0 + 5 * 60_000 + 1);
        const report = await schedulesOnce(store, clock.now(), CONFIG);
        // busy: 2..4 missed (latest policy), 5 skipped for overlap; fill: 2 and 3 before its window, 4 and 5 run.
        expect(report).toMatchObject({ enqueued: 2, missedSkipped: 3 + 2, overlapSkipped: 1, errors: [] });
        expect(await keys()).toEqual([`busy@${T0 + 60_000}`, `fill@${T0 + 60_000}`, ...[4, 5].map((i) => `fill@${T0 + i * 60_000}`)]);
        expect(await store.scheduleGet({ name: 'busy' })).toMatchObject({ skipped_missed: 3, skipped_overlap: 1, next_run_at: T0 + 6 * 60_000 });
        expect(await store.scheduleGet({ name: 'fill' })).toMatchObject({ skipped_missed: 2, skipped_overlap: 0, next_run_at: T0 + 6 * 60_000 });
        const skips = await store.scheduleSkipsList({ limit: 10 });
        expect(skips.map((k) => [k.schedule_name, k.reason, k.count]).sort()).toEqual([['busy', 'missed', 3], ['busy', 'overlap', 1], ['fill', 'missed', 2]]);
        expect(await store.scheduleDelete({ name: 'busy' })).toBe(true);
        expect((await store.scheduleSkipsList({ name: 'busy', limit: 10 })).length).toBe(0);
      });

      test('after a long gap only the latest missed occurrence runs, once', async () => {
        const { store, clock } = t();
        await every('gap');
        clock.set(T0 + 10 * 60_000 + 45_000); // occurrences at 1..10 minutes are due
        expect(await schedulesOnce(store, clock.now(), CONFIG)).toMatchObject({ enqueued: 1, missedSkipped: 9, errors: [] });
        expect(await schedulesOnce(store, clock.now(), CONFIG)).toMatchObject({ enqueued: 0 });
        expect(await keys()).toEqual([`gap@${T0 + 10 * 60_000}`]);
      });
    });
  });

  describe('the queue cap counts queues in use; a queue is deleted only when empty', () => {
    const t = useBundle(backend);
    const BY = { actor: 'Ada', role: 'admin', credential: 'default', source: 'api', client: null } as const;
    const enqueue = (queue: string, maxQueues = 2) => t().store.jobsInsert({ queue, jobs: [{ payload: 1 }], actor: 'api', now: T0, defaults: DEFAULTS, maxQueues });
    const rows = async (table: string, queue: string) =>
      (await t().db.all<{ n: number }>(sql`SELECT count(*) AS n FROM ${sql.raw(table)} WHERE ${sql.raw(table === 'queues' ? 'name' : 'queue_name')} = ${queue}`))[0]!.n;

    test('an empty row does not count; filling it again must fit under the cap', async () => {
      await enqueue('a');
      await enqueue('b');
      await expect(enqueue('c')).rejects.toMatchObject({ code: 'conflict', field: 'queue' });
      await t().db.run(sql`DELETE FROM jobs WHERE queue_name = 'a'`);
      expect(await rows('queues', 'a')).toBe(1);
      await enqueue('c');
      await expect(enqueue('a')).rejects.toMatchObject({ code: 'conflict' });
      expect(await rows('jobs', 'a')).toBe(0);
    });

    test('the guarded delete refuses a queue that holds a job, deletes it (and its bookkeeping, audited) once empty', async () => {
      const { store, db } = t();
      const [first] = await enqueue('q');
      const job = first!.job;
      const audit = { by: BY, action: 'queue.delete' as const, queue: 'q', target: 'queue q', now: T0 };
      // The delete's own guard, not only the check before it: a job landed in between.
      expect(await store.queueDeleteIfUnused({ queue: 'q', also: { audit } })).toBe(false);
      expect(await rows('queues', 'q')).toBe(1);
      expect(await rows('live_counts', 'q')).toBe(1);
      expect(await rows('operator_audit', 'q')).toBe(0);
      expect(await store.queueBlockers({ queue: 'q' })).toEqual({ exists: true, pending: 1, running: 0, finished: 0, schedules: [] });
      await db.run(sql`DELETE FROM jobs WHERE id = ${job.id}`);
      expect(await store.queueDeleteIfUnused({ queue: 'q', also: { audit } })).toBe(true);
      expect(await rows('queues', 'q')).toBe(0);
      expect(await rows('live_counts', 'q')).toBe(0);
      expect(await rows('operator_audit', 'q')).toBe(1);
      expect(await store.queueDeleteIfUnused({ queue: 'q', also: { audit } })).toBe(false);
      expect(await store.queueBlockers({ queue: 'q' })).toMatchObject({ exists: false });
    });
  });
}
