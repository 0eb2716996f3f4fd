/**
 * After the clock the leases use stepped back (src/db/store/clock-step.ts),
 * on every backend: the database shows it (a sighting, a pass or a hold later
 * than now), the pass's rebase moves each running job renewed "in the
 * future" onto the clock as it is now (its lease and deadline counted from
 * now, its token untouched) in bounded statements, then the evidence, and a
 * renewal rebases its own row: no lease counts as ending later than its last
 * renewal plus what that renewal granted, measured on the new clock.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { rebaseAfterStepBackOnce } from '../../../src/maintenance/clock-step-back.ts';
import { DEFAULTS, T0, useBundle, type StoreBackend } from './support.ts';

const STEP = 300_000;
const config = { heartbeatMs: DEFAULTS.heartbeatMs, graceMs: DEFAULTS.graceMs, reaperBatchSize: 2 };

export function defineClockStep(backend: StoreBackend) {
  describe('after the clock stepped back', () => {
    const t = useBundle(backend);

    test('nothing is moved on a clock that only went forward', async () => {
      const { store, runningJob, row } = t();
      const job = await runningJob({ workerId: 'w1' });
      await store.jobsHeartbeatIfOwned({ workerId: 'w1', leases: [{ id: job.id, lockToken: job.lock_token }], now: T0 + 5_000 });
      await store.maintenancePassRecord({ startedAt: T0 + 5_000, now: T0 + 5_000 });
      expect(await store.clockLatestRecorded({ now: T0 + 6_000 })).toEqual({ latest: T0 + 5_000, now: T0 + 6_000 });
      expect(await rebaseAfterStepBackOnce(store, T0 + 6_000, T0 + 6_000, config)).toBeUndefined();
      expect(await row(job.id)).toMatchObject({ lease_expires_at: T0 + 5_000 + DEFAULTS.leaseMs, last_heartbeat_at: T0 + 5_000 });
    });

    test("the pass moves every job renewed before the step onto the new clock, in bounded statements, then the evidence; the token and live renewals stay", async () => {
      const { store, runningJob, row, db } = t();
      // Three jobs of a worker that died right after its last beat at T0 (an extended lease among them), one renewed 10 s before.
      const beat = T0;
      const jobs = [
        await runningJob({ workerId: 'dead', startedAt: beat - 60_000, lastHeartbeatAt: beat, leaseExpiresAt: beat + DEFAULTS.leaseMs }),
        await runningJob({ workerId: 'dead', startedAt: beat - 60_000, lastHeartbeatAt: beat, leaseExpiresAt: beat + 120_000 }),
        await runningJob({ workerId: 'dead', startedAt: beat - 60_000, lastHeartbeatAt: beat - 10_000, leaseExpiresAt: beat - 10_000 + DEFAULTS.leaseMs }),
      ];
      await store.workerBeat({ id: 'dead', now: beat });
      const before = await Promise.all(jobs.map((j) => row(j.id)));
      // The clock steps 5 minutes back; the first pass comes 1 s later.
      const now = beat - STEP + 1_000;
      const report = await rebaseAfterStepBackOnce(store, now, now, config);
      expect(report).toEqual({ stepMs: STEP - 1_000, jobs: 3, more: false });
      const after = await Promise.all(jobs.map((j) => row(j.id)));
      for (const [i, a] of after.entries()) {
        const b = before[i]!;
        const shift = b.last_heartbeat_at! - now;
        expect(a).toMatchObject({
          status: 'running',
          lock_token: b.lock_token,
          last_heartbeat_at: now,
          // What the last renewal granted, counted from now.
          lease_expires_at: now + (b.lease_expires_at! - b.last_heartbeat_at!),
          deadline_at: b.deadline_at! - shift,
          started_at: b.started_at! - shift,
        });
      }
      expect(after.map((a) => a.lease_expires_at! - now)).toEqual([DEFAULTS.leaseMs, 120_000, DEFAULTS.leaseMs]);
      // The evidence went with it: the next pass finds nothing, and a sighting no longer looks alive for 5 minutes.
      expect((await store.clockLatestRecorded({ now })).latest).toBe(now);
      expect(await rebaseAfterStepBackOnce(store, now + 5_000, now + 5_000, config)).toBeUndefined();
      const [seen] = await db.all<{ last_seen_at: number }>(sql`SELECT last_seen_at FROM workers WHERE id = 'dead'`);
      expect(Number(seen!.last_seen_at)).toBe(now);
    });

    test("a renewal after the step counts its lease from now, not from the clock that was ahead; a hold begun before the step keeps only its length", async () => {
      const { store, runningJob, row } = t();
      const job = await runningJob({ workerId: 'w1', startedAt: T0, leaseExpiresAt: T0 + 200_000 });
      const now = T0 - STEP;
      const [ok] = await store.jobsHeartbeatIfOwned({ workerId: 'w1', leases: [{ id: job.id, lockToken: job.lock_token }], now });
      expect(ok).toMatchObject({ ok: true });
      // Its extension (200 s from the renewal at T0) is kept, counted from now.
      expect(await row(job.id)).toMatchObject({ last_heartbeat_at: now, lease_expires_at: now + 200_000, started_at: now, deadline_at: now + DEFAULTS.timeoutMs });
      // A later renewal on a clock moving forward: as before.
      await store.jobsHeartbeatIfOwned({ workerId: 'w1', leases: [{ id: job.id, lockToken: job.lock_token }], now: now + 5_000 });
      expect(await row(job.id)).toMatchObject({ last_heartbeat_at: now + 5_000, lease_expires_at: now + 200_000 });

      await store.reaperHoldBegin({ now: T0, holdMs: 15_000, gapMs: null, cause: 'the server just started' });
      expect(await rebaseAfterStepBackOnce(store, now + 6_000, now + 6_000, config)).toMatchObject({ jobs: 0, more: false });
      expect(await store.reaperHoldRead({ now: now + 6_000 })).toMatchObject({ beganAt: now + 6_000, holdUntil: now + 6_000 + 15_000 });
    });
  });
}
