/**
 * What shows a zombie the reaper cannot see, on every backend: the last
 * completed maintenance pass (recorded by the pass, read with the running
 * jobs and those past lease + grace at the moment of the read), and suspect
 * jobs (heartbeating far past the runtime learned from their queue's
 * completed jobs) in the dashboard's reads and the metrics snapshot.
 */
import { describe, expect, test } from 'vitest';
import { DEFAULTS, RULES, T0, useBundle, type StoreBackend } from './support.ts';

const CONFIG = { ...DEFAULTS, workerAliveMs: RULES.workerAliveMs };

export function defineMaintenanceWatch(backend: StoreBackend) {
  describe('maintenance watch and suspect jobs', () => {
    const t = useBundle(backend);

    test('no pass recorded: the running jobs and those past lease + grace are read at the time given, each with its queue grace', async () => {
      const { store, runningJob, pendingJob } = t();
      await store.queueUpsertSettings({ queue: 'patient', patch: { graceMs: 60_000 }, now: T0 });
      const past = await runningJob({ startedAt: T0 - 40_000, leaseExpiresAt: T0 - DEFAULTS.graceMs - 1 });
      await runningJob({ startedAt: T0 - 40_000, leaseExpiresAt: T0 - 1_000 }); // expired, inside the grace
      await runningJob({ queue: 'patient', startedAt: T0 - 40_000, leaseExpiresAt: T0 - 10_000 }); // inside its queue's grace
      await runningJob();
      await pendingJob();
      expect(await store.maintenanceWatch({ now: T0, defaults: DEFAULTS })).toMatchObject({
        now: T0,
        lastStartedAt: null,
        lastCompletedAt: null,
        passes: 0,
        runningJobs: 4,
        expiredLeases: 1,
      });
      // The same rows a minute later: every lease is past its grace.
      expect(await store.maintenanceWatch({ now: T0 + 60_001, defaults: DEFAULTS })).toMatchObject({ runningJobs: 4, expiredLeases: 4 });
      expect((await store.metricsSnapshot({ now: T0, config: CONFIG })).queues.find((q) => q.queue === 'q')!.running.expiredPastGrace).toBe(1);
      expect(past.id).toBeGreaterThan(0);
    });

    test('each pass records its start and completion; the newest completion wins and every pass counts', async () => {
      const { store } = t();
      await store.maintenancePassRecord({ startedAt: T0 - 100, now: T0 });
      expect(await store.maintenanceWatch({ now: T0 + 5, defaults: DEFAULTS })).toMatchObject({ lastStartedAt: T0 - 100, lastCompletedAt: T0, passes: 1 });
      // A slower pass that completed earlier, recorded later: the time does not go back.
      await store.maintenancePassRecord({ startedAt: T0 - 500, now: T0 - 200 });
      expect(await store.maintenanceWatch({ now: T0 + 5, defaults: DEFAULTS })).toMatchObject({ lastStartedAt: T0 - 100, lastCompletedAt: T0, passes: 2 });
      await store.maintenancePassRecord({ startedAt: T0 + 1_000, now: T0 + 1_000 });
      const snapshot = await store.metricsSnapshot({ now: T0 + 2_000, config: CONFIG });
      expect(snapshot.maintenance).toEqual({ lastStartedAt: T0 + 1_000, lastCompletedAt: T0 + 1_000, passes: 3 });
    });

    test("the owner check's refused answers are counted by reason, outside every queue, and only ever grow", async () => {
      const { store, runningJob } = t();
      await runningJob();
      expect((await store.metricsSnapshot({ now: T0, config: CONFIG })).ownerCheckRefused).toEqual({});
      await store.ownerCheckRefusalsAdd({ byReason: { redirect: 2, too_large: 0 } });
      await store.ownerCheckRefusalsAdd({ byReason: { redirect: 1, too_large: 1 } });
      await store.ownerCheckRefusalsAdd({ byReason: {} });
      const snapshot = await store.metricsSnapshot({ now: T0, config: CONFIG });
      expect(snapshot.ownerCheckRefused).toEqual({ redirect: 3, too_large: 1 });
      // No queue appears for them.
      expect(snapshot.queues.map((q) => q.queue)).toEqual(['q']);
    });

    test("suspect: a live job running past max(3 x p99 of the queue's completed runtimes, lease), in the zombies, jobs-list and job-page reads and the snapshot", async () => {
      const { store, runningJob, completedJob, failedJob } = t();
      // Learned: three completed in 20 s (p99 20 s: threshold max(60 s, lease 30 s) = 60 s). A failed one that ran an hour is not learned from.
      for (let i = 0; i < 3; i++) await completedJob({ startedAt: T0 - 120_000 - i, finishedAt: T0 - 100_000 - i });
      await failedJob({ startedAt: T0 - 3_000_000, finishedAt: T0 - 1_000 });
      const suspect = await runningJob({ startedAt: T0 - 61_000, lastHeartbeatAt: T0 - 1_000, leaseExpiresAt: T0 + 29_000 });
      const slow = await runningJob({ startedAt: T0 - 50_000, lastHeartbeatAt: T0 - 1_000, leaseExpiresAt: T0 + 29_000 });
      // Another queue, nothing completed: 10 leases (300 s).
      const unlearned = await runningJob({ queue: 'new', startedAt: T0 - 200_000, lastHeartbeatAt: T0 - 1_000, leaseExpiresAt: T0 + 200_000 });

      const zombies = await store.jobsListZombieCandidates({ now: T0, defaults: DEFAULTS, limit: 10 });
      expect(zombies.map((j) => j.id)).toEqual([suspect.id]);
      expect(zombies[0]).toMatchObject({ suspect_after_ms: 60_000, suspect_basis: expect.stringContaining('max(3 x p99 runtime 20 s, lease 30 s)') });

      const flagged = await store.jobsRunningFlagged({ ids: [suspect.id, slow.id, unlearned.id], now: T0, defaults: DEFAULTS });
      expect(flagged.map((j) => [j.id, j.zombie_candidate, j.suspect_after_ms]).sort((a, b) => a[0]! - b[0]!)).toEqual([
        [suspect.id, 1, 60_000],
        [slow.id, 0, 60_000],
        [unlearned.id, 0, 300_000],
      ]);
      expect(await store.jobGetWithSettings({ id: suspect.id, defaults: DEFAULTS, now: T0 })).toMatchObject({ suspect_after_ms: 60_000 });
      expect(await store.jobGetWithSettings({ id: suspect.id, defaults: DEFAULTS })).toMatchObject({ suspect_after_ms: null });
      // The thresholds alone (what the dashboard shares across polls), and the reads given them instead of reading them.
      const thresholds = await store.suspectThresholds({ now: T0, defaults: DEFAULTS });
      expect(thresholds.map((x) => [x.queue, x.afterMs]).sort()).toEqual([
        ['new', 300_000],
        ['q', 60_000],
      ]);
      expect((await store.jobsListZombieCandidates({ now: T0, defaults: DEFAULTS, limit: 10, suspects: thresholds })).map((j) => j.id)).toEqual([suspect.id]);
      expect(await store.jobsListZombieCandidates({ now: T0, defaults: DEFAULTS, limit: 10, suspects: [] })).toEqual([]);

      const snapshot = await store.metricsSnapshot({ now: T0, config: CONFIG });
      const q = snapshot.queues.find((x) => x.queue === 'q')!;
      expect(q.running.suspect).toEqual({ count: 1, ids: [String(suspect.id)], afterMs: 60_000, basis: expect.stringContaining('p99') });
      expect(snapshot.queues.find((x) => x.queue === 'new')!.running.suspect).toMatchObject({ count: 0, ids: [], afterMs: 300_000 });

      // Past its own threshold the unlearned one is suspect too (its worker kept renewing); a job whose lease lapsed is a zombie, not a suspect.
      const later = T0 + 100_001;
      const after = await store.jobsListZombieCandidates({ now: later, defaults: DEFAULTS, limit: 10 });
      expect(after.find((j) => j.id === unlearned.id)).toMatchObject({ suspect_after_ms: 300_000 });
      expect((await store.metricsSnapshot({ now: later, config: CONFIG })).queues.find((x) => x.queue === 'new')!.running.suspect.count).toBe(1);
      expect((await store.metricsSnapshot({ now: later, config: CONFIG })).queues.find((x) => x.queue === 'q')!.running.suspect.count).toBe(0);
    });
  });
}
