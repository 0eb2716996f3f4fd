/**
 * The durable histograms (drizzle/0022, src/core/histograms.ts), on every
 * backend: each claim counts its queue wait, each accepted lease renewal the
 * time since the claim's previous one, each completion its run time, once,
 * inside the statement that made it; refused writes and other queues count
 * nothing, and the metrics snapshot adds the stored buckets up.
 */
import { describe, expect, test } from 'vitest';
import { HISTOGRAMS } from '../../../src/core/histograms.ts';
import { DEFAULTS, RULES, T0, useBundle, type StoreBackend } from './support.ts';

const CONFIG = { ...DEFAULTS, workerAliveMs: RULES.workerAliveMs };

export function defineHistograms(backend: StoreBackend) {
  describe('durable histograms', () => {
    const t = useBundle(backend);

    const histogramsOf = async (queue: string, now: number) =>
      (await t().store.metricsSnapshot({ now, config: CONFIG })).queues.find((q) => q.queue === queue)!.histograms;
    /** The cumulative count at `leMs` (null: +Inf). */
    const at = (h: { buckets: { leMs: number | null; count: number }[] }, leMs: number | null) => h.buckets.find((b) => b.leMs === leMs)!.count;

    test('queue wait at each claim, every renewal of the claim, run time at completion; a refused renewal counts nothing', async () => {
      const { store } = t();
      // Enqueued at T0; one due later (a delay): its wait counts from when it became due.
      await store.jobsInsert({ queue: 'q', jobs: [{ payload: {} }, { payload: {}, delayMs: 60_000 }], actor: null, now: T0, defaults: DEFAULTS });
      const [first] = await store.jobsClaimPending({ queue: 'q', workerId: 'w', limit: 1, now: T0 + 400, defaults: DEFAULTS });
      const [late] = await store.jobsClaimPending({ queue: 'q', workerId: 'w', limit: 1, now: T0 + 60_000 + 7, defaults: DEFAULTS });
      expect([first, late].every(Boolean)).toBe(true);

      // Renewals of the first claim: 4.6 s after the claim, then 12 s after that (a checkpoint renews too).
      await store.jobsHeartbeatIfOwned({ workerId: 'w', leases: [{ id: first!.id, lockToken: first!.lock_token! }], now: T0 + 5_000 });
      await store.jobCheckpointIfOwned({ workerId: 'w', id: first!.id, lockToken: first!.lock_token!, checkpoint: '{}', now: T0 + 17_000 });
      // A stale token's renewal is refused, and is no interval.
      expect((await store.jobsHeartbeatIfOwned({ workerId: 'w', leases: [{ id: first!.id, lockToken: 'f'.repeat(32) }], now: T0 + 18_000 }))[0]!.ok).toBe(false);
      // Completed 19.6 s after its claim.
      expect((await store.jobsCompleteIfOwned({ workerId: 'w', results: [{ id: first!.id, lockToken: first!.lock_token!, data: null }], now: T0 + 20_000 }))[0]!.ok).toBe(true);
      // Completed again (a repeat of the same write): answered as stored, not counted again.
      await store.jobsCompleteIfOwned({ workerId: 'w', results: [{ id: first!.id, lockToken: first!.lock_token!, data: null }], now: T0 + 21_000 });

      const h = await histogramsOf('q', T0 + 70_000);
      expect(h.queue_wait).toMatchObject({ count: 2, sumMs: 400 + 7 });
      expect([at(h.queue_wait, 10), at(h.queue_wait, 250), at(h.queue_wait, 500), at(h.queue_wait, null)]).toEqual([1, 1, 2, 2]);
      expect(h.heartbeat_interval).toMatchObject({ count: 2, sumMs: 4_600 + 12_000 });
      expect([at(h.heartbeat_interval, 3_000), at(h.heartbeat_interval, 5_000), at(h.heartbeat_interval, 10_000), at(h.heartbeat_interval, 15_000)]).toEqual([0, 1, 1, 2]);
      expect(h.runtime).toMatchObject({ count: 1, sumMs: 19_600 });
      expect([at(h.runtime, 10_000), at(h.runtime, 30_000), at(h.runtime, null)]).toEqual([0, 1, 1]);
      // Every bound is there, cumulative, ending at +Inf = count.
      for (const name of ['runtime', 'queue_wait', 'heartbeat_interval'] as const) {
        expect(h[name].buckets.map((b) => b.leMs)).toEqual([...HISTOGRAMS[name].boundsMs, null]);
        expect(h[name].buckets.at(-1)!.count).toBe(h[name].count);
      }
    });

    test('a new claim of the same job counts from its own claim; a queue never claimed reports zeros', async () => {
      const { store } = t();
      await store.jobsInsert({ queue: 'q', jobs: [{ payload: {} }], actor: null, now: T0, defaults: DEFAULTS });
      await store.jobsInsert({ queue: 'idle', jobs: [{ payload: {} }], actor: null, now: T0, defaults: DEFAULTS });
      const [a] = await store.jobsClaimPending({ queue: 'q', workerId: 'w', limit: 1, now: T0, defaults: DEFAULTS });
      await store.jobsHeartbeatIfOwned({ workerId: 'w', leases: [{ id: a!.id, lockToken: a!.lock_token! }], now: T0 + 1_000 });
      // Released (back to pending, in its old place), claimed again 30 s later, renewed 2 s after that claim.
      // The release kept its due time (T0): its wait counts from its last renewal (T0 + 1 s), not from T0.
      expect((await store.jobsReleaseIfOwned({ workerId: 'w', leases: [{ id: a!.id, lockToken: a!.lock_token! }], reason: 'shutdown', now: T0 + 2_000 }))[0]!.ok).toBe(true);
      const [b] = await store.jobsClaimPending({ queue: 'q', workerId: 'w2', limit: 1, now: T0 + 32_000, defaults: DEFAULTS });
      await store.jobsHeartbeatIfOwned({ workerId: 'w2', leases: [{ id: b!.id, lockToken: b!.lock_token! }], now: T0 + 34_000 });

      const h = await histogramsOf('q', T0 + 40_000);
      expect(h.queue_wait).toMatchObject({ count: 2, sumMs: 0 + 31_000 });
      expect(h.heartbeat_interval).toMatchObject({ count: 2, sumMs: 1_000 + 2_000 });
      expect(h.runtime.count).toBe(0);
      const idle = await histogramsOf('idle', T0 + 40_000);
      for (const name of ['runtime', 'queue_wait', 'heartbeat_interval'] as const) {
        expect(idle[name].count).toBe(0);
        expect(idle[name].sumMs).toBe(0);
        expect(idle[name].buckets.every((x) => x.count === 0)).toBe(true);
      }
    });
  });
}
