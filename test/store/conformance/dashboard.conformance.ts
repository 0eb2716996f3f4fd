/**
 * The dashboard's section of the port (DashboardReads, src/db/store/port.ts): its
 * zombie, jobs-list and job-page reads, with the queue settings and owner
 * liveness the reaper's decision needs, on every backend.
 */
import { describe, expect, test } from 'vitest';
import { DEFAULTS, T0, useBundle, type StoreBackend } from './support.ts';

export function defineDashboardReads(backend: StoreBackend) {
  describe('dashboard reads', () => {
    const t = useBundle(backend);

    test('zombie candidates: an expired lease or a heartbeat over two intervals late, oldest expiry first; a healthy or pending job is not one', async () => {
      const { store, runningJob, pendingJob } = t();
      const late = await runningJob({ startedAt: T0 - 25_000 });
      const expired = await runningJob({ startedAt: T0 - 40_000, leaseExpiresAt: T0 - 1 });
      await runningJob();
      await pendingJob();
      const zombies = await store.jobsListZombieCandidates({ now: T0, defaults: DEFAULTS, limit: 10 });
      expect(zombies.map((j) => j.id)).toEqual([expired.id, late.id]);
      // The queue has no overrides: the defaults, and the job's own interval (at most a third of its lease).
      expect(zombies[0]).toMatchObject({ q_heartbeat_ms: 10_000, job_heartbeat_ms: 10_000, q_grace_ms: 5_000, q_max_lost_attempts: 4, q_stall_ms: null });
      expect((await store.jobsListZombieCandidates({ now: T0, defaults: DEFAULTS, limit: 1 })).map((j) => j.id)).toEqual([expired.id]);
    });

    test('a page of the jobs list: only its running jobs come back, each flagged when the zombies page lists it (150 ids: one bound parameter)', async () => {
      const { store, runningJob, pendingJob } = t();
      const expired = await runningJob({ startedAt: T0 - 40_000, leaseExpiresAt: T0 - 1 });
      const healthy = await runningJob();
      const pending = await pendingJob();
      const ids = [expired.id, healthy.id, pending.id, ...Array.from({ length: 147 }, (_, i) => 1_000_000 + i)];
      const flagged = await store.jobsRunningFlagged({ ids, now: T0, defaults: DEFAULTS });
      expect(flagged.map((j) => [j.id, j.zombie_candidate]).sort((a, b) => a[0]! - b[0]!)).toEqual([
        [expired.id, 1],
        [healthy.id, 0],
      ]);
      expect(await store.jobsRunningFlagged({ ids: [], now: T0, defaults: DEFAULTS })).toEqual([]);
    });

    test("the job page: any status, with its queue's overrides and its owner's last beat", async () => {
      const { store, runningJob, completedJob } = t();
      const running = await runningJob({ queue: 'slow' });
      await store.queueUpsertSettings({ queue: 'slow', patch: { graceMs: 9_000, heartbeatMs: 4_000, stallMs: 60_000, maxSnoozes: 7 }, now: T0 });
      await store.workerBeat({ id: 'w1', now: T0 - 1_000 });
      expect(await store.jobGetWithSettings({ id: running.id, defaults: DEFAULTS })).toMatchObject({
        id: running.id,
        status: 'running',
        q_grace_ms: 9_000,
        q_heartbeat_ms: 4_000,
        job_heartbeat_ms: 4_000,
        q_stall_ms: 60_000,
        owner_last_seen_at: T0 - 1_000,
        q_max_snoozes: 7,
        has_dependents: 0,
      });
      const done = await completedJob();
      expect(await store.jobGetWithSettings({ id: done.id, defaults: DEFAULTS })).toMatchObject({ status: 'completed', job_heartbeat_ms: null, q_grace_ms: 5_000, q_max_snoozes: 100 });
      expect(await store.jobGetWithSettings({ id: 999_999, defaults: DEFAULTS })).toBeUndefined();
    });
  });
}
