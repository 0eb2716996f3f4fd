/**
 * Sizes past the smallest backend's limits: D1 binds at most 100 parameters
 * per statement, so a read or write over many ids must not bind one
 * parameter per id.
 */
import { describe, expect, test } from 'vitest';
import { DEFAULTS, RULES_AND_DEFAULTS, T0, useBundle, type StoreBackend } from './support.ts';

const MANY = 150;

export function defineLimits(backend: StoreBackend) {
  describe('many ids in one call', () => {
    const t = useBundle(backend);

    test(`workersHeldJobs for ${MANY} workers (the workers page lists up to 500)`, async () => {
      const { store, runningJob } = t();
      const ids = Array.from({ length: MANY }, (_, i) => `w${i}`);
      await runningJob({ workerId: 'w7' });
      const held = await store.workersHeldJobs({ workerIds: ids, now: T0 });
      expect([...held.entries()]).toEqual([['w7', { held: 1, expired: 0 }]]);
    });

    test(`a bulk requeue dry run over ${MANY} jobs the reaper would take`, async () => {
      const { store, runningJob } = t();
      const jobs = [];
      for (let i = 0; i < MANY; i++) jobs.push(await runningJob({ workerId: 'dead', leaseExpiresAt: T0 - DEFAULTS.graceMs - 1 }));
      const preview = await store.jobsBulkPreview({ kind: 'requeue', queue: undefined, status: 'running', now: T0, limit: MANY, rules: RULES_AND_DEFAULTS });
      expect(preview.map((r) => r.id)).toEqual(jobs.map((j) => j.id));
      expect(await store.jobsBulkAct({ kind: 'requeue', queue: undefined, status: 'running', actor: 'admin', reason: null, now: T0, limit: MANY, rules: RULES_AND_DEFAULTS })).toHaveLength(MANY);
    });

    test(`one heartbeat, completion and enqueue of ${MANY} jobs`, async () => {
      const { store, runningJob } = t();
      const jobs = [];
      for (let i = 0; i < MANY; i++) jobs.push(await runningJob());
      const leases = jobs.map((j) => ({ id: j.id, lockToken: j.lock_token }));
      expect((await store.jobsHeartbeatIfOwned({ workerId: 'w1', leases, now: T0 + 1 })).every((o) => o.ok)).toBe(true);
      expect((await store.jobsCompleteIfOwned({ workerId: 'w1', results: leases, now: T0 + 2 })).every((o) => o.ok)).toBe(true);
      const inserted = await store.jobsInsert({ queue: 'bulk', jobs: Array.from({ length: MANY }, (_, i) => ({ payload: { i } })), actor: null, now: T0, defaults: DEFAULTS });
      expect(inserted).toHaveLength(MANY);
    });
  });
}
