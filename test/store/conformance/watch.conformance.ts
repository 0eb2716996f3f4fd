/**
 * The reads clients waiting on jobs are answered from (src/db/store/watch.ts):
 * each named job's status (and version where asked), and the named jobs
 * whole, in order, within a byte budget.
 */
import { describe, expect, test } from 'vitest';
import { DEFAULTS, T0, useBundle, type StoreBackend } from './support.ts';

export function defineWatchReads(backend: StoreBackend) {
  describe('reads for waiting clients', () => {
    const t = useBundle(backend);

    test('jobsWatchStates: the status of every named job that exists, versions only where asked; a version changes with a claim and with progress', async () => {
      const { store, pendingJob, runningJob, completedJob, failedJob, cancelledJob } = t();
      const [p, r, c, f, x] = [await pendingJob(), await runningJob(), await completedJob(), await failedJob(), await cancelledJob()];
      const states = await store.jobsWatchStates({ ids: [p.id, r.id, c.id, f.id, x.id, 999_999], versionsOf: [p.id, 999_999] });
      const byId = new Map(states.map((s) => [s.id, s]));
      expect(byId.size).toBe(5);
      expect([p, r, c, f, x].map((j) => byId.get(j.id)?.status)).toEqual(['pending', 'running', 'completed', 'failed', 'cancelled']);
      expect(byId.get(r.id)!.version).toBeUndefined();
      const pendingVersion = byId.get(p.id)!.version!;
      expect(pendingVersion).toMatch(/^pending\./);

      const [claimed] = await store.jobsClaimPending({ queue: p.queue_name, workerId: 'w9', limit: 1, now: T0 + 10, defaults: DEFAULTS });
      expect(claimed!.id).toBe(p.id);
      const [running] = await store.jobsWatchStates({ ids: [p.id], versionsOf: [p.id] });
      expect(running!.version).not.toBe(pendingVersion);
      // A heartbeat without progress keeps the version; progress changes it.
      await store.jobsHeartbeatIfOwned({ workerId: 'w9', leases: [{ id: p.id, lockToken: claimed!.lock_token! }], now: T0 + 20 });
      expect((await store.jobsWatchStates({ ids: [p.id], versionsOf: [p.id] }))[0]!.version).toBe(running!.version);
      await store.jobsHeartbeatIfOwned({ workerId: 'w9', leases: [{ id: p.id, lockToken: claimed!.lock_token!, data: '{"pct":5}' }], now: T0 + 30 });
      expect((await store.jobsWatchStates({ ids: [p.id], versionsOf: [p.id] }))[0]!.version).not.toBe(running!.version);
      expect(await store.jobsWatchStates({ ids: [] })).toEqual([]);
    });

    test('jobsGetWithinBytes: in the order named, as many as fit, always the first; unknown ids skipped', async () => {
      const { store, completedJob } = t();
      const big = 'x'.repeat(4_000);
      const jobs = [await completedJob({ result: big }), await completedJob({ result: big }), await completedJob({ result: big })];
      const [a, b, c] = jobs.map((j) => j.id) as [number, number, number];
      const all = await store.jobsGetWithinBytes({ ids: [c, 999_999, a, b], maxBytes: 1_000_000 });
      expect(all.map((j) => j.id)).toEqual([c, a, b]);
      expect(JSON.parse(all[0]!.result!)).toBe(big);
      expect(all[0]!.version).toMatch(/^completed\./);
      expect((await store.jobsGetWithinBytes({ ids: [b, a, c], maxBytes: 9_000 })).map((j) => j.id)).toEqual([b, a]);
      expect((await store.jobsGetWithinBytes({ ids: [a, b], maxBytes: 10 })).map((j) => j.id)).toEqual([a]);
      expect(await store.jobsGetWithinBytes({ ids: [], maxBytes: 10 })).toEqual([]);
    });
  });
}
