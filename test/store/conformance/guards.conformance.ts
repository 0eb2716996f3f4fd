/**
 * The owner's guard on every write a worker makes (heartbeat, extend,
 * checkpoint, complete, fail, release, effects): a wrong token, a wrong
 * owner, a job taken back after its lease expired, a passed deadline and an
 * unknown id are each refused, change nothing, and (but for the unknown id)
 * leave a `stale_write_rejected` event that names the write and why.
 */
import { describe, expect, test } from 'vitest';
import type { JobStore } from '../../../src/db/store/port.ts';
import { DEFAULTS, RULES, T0, useBundle, type StoreBackend } from './support.ts';

type Ref = { id: number; lockToken: string };

/** Every owned write, by the name its refusal event carries, as one call by `workerId` at `now`. */
const writes: Record<string, (s: JobStore, workerId: string, r: Ref, now: number) => Promise<{ ok: boolean; reason?: string; status?: string; cause?: string }>> = {
  heartbeat: async (s, w, r, now) => (await s.jobsHeartbeatIfOwned({ workerId: w, leases: [r], now }))[0]!,
  extend: async (s, w, r, now) => (await s.jobsHeartbeatIfOwned({ workerId: w, leases: [r], leaseMs: 60_000, now }))[0]!,
  checkpoint: async (s, w, r, now) => (await s.jobCheckpointIfOwned({ workerId: w, ...r, checkpoint: '{}', now }))[0]!,
  complete: async (s, w, r, now) => (await s.jobsCompleteIfOwned({ workerId: w, results: [r], now }))[0]!,
  fail: async (s, w, r, now) => (await s.jobFailIfOwned({ workerId: w, ...r, error: 'e', retryable: true, now, defaults: DEFAULTS }))[0]!,
  release: async (s, w, r, now) => (await s.jobsReleaseIfOwned({ workerId: w, leases: [r], reason: 'shutdown', now }))[0]!,
  report_duplicate: (s, w, r, now) => s.duplicateReportIfOwned({ workerId: w, jobId: r.id, lockToken: r.lockToken, key: 'payment-1', now }),
};

/** Writes that keep the job, refused past its deadline; complete and fail are accepted until the reaper takes it. */
const KEEPS_THE_JOB = ['heartbeat', 'extend', 'checkpoint', 'release'];

export function defineGuards(backend: StoreBackend) {
  describe('the owner guard', () => {
    const t = useBundle(backend);

    for (const [write, call] of Object.entries(writes)) {
      test(`${write} with a wrong lock token is refused, changes nothing, and is recorded`, async () => {
        const { store, runningJob, row, events } = t();
        const job = await runningJob();
        const before = await row(job.id);
        const o = await call(store, 'w1', { id: job.id, lockToken: 'not-the-token' }, T0 + 1_000);
        expect(o).toEqual({ id: job.id, ok: false, reason: 'lease_lost', status: 'running' });
        expect(await row(job.id)).toEqual(before);
        expect((await events(job.id)).at(-1)).toMatchObject({
          type: 'stale_write_rejected', reason: write, from_status: 'running', to_status: 'running', worker_id: 'w1', actor: 'w1', attempt: 1, at: T0 + 1_000,
          message: "lock token is not the current claim's",
        });
      });

      test(`${write} with the right token from another worker is refused and names the owner`, async () => {
        const { store, runningJob, row, events } = t();
        const job = await runningJob({ workerId: 'owner' });
        const before = await row(job.id);
        const o = await call(store, 'intruder', { id: job.id, lockToken: job.lock_token }, T0 + 1_000);
        expect(o).toMatchObject({ ok: false, reason: 'lease_lost', status: 'running' });
        expect(await row(job.id)).toEqual(before);
        expect((await events(job.id)).at(-1)).toMatchObject({ type: 'stale_write_rejected', reason: write, worker_id: 'intruder', message: 'the claim belongs to worker owner' });
      });

      test(`${write} after the job was taken back and claimed again (attempt N's token on attempt N+1) is refused`, async () => {
        const { store, runningJob, row, events } = t();
        const old = await runningJob({ startedAt: T0 - 120_000 });
        // The reaper took it (lease long past grace, owner unknown) and w2 claimed it.
        const { take } = await store.jobsGetReapCandidates({ now: T0, limit: 10, defaults: DEFAULTS, rules: { workerAliveMs: 1, maxReapDeferMs: 1 } });
        expect(take.map((c) => c.id)).toEqual([old.id]);
        await store.jobsReapIfUnchanged({ now: T0, defaults: DEFAULTS, writes: [{ candidate: take[0]!, decision: { action: 'requeue', cause: 'lost', reason: 'reaped_due_to_expired_lease', why: 'test', takesAt: T0 } }] });
        const [next] = await store.jobsClaimPending({ queue: 'q', workerId: 'w2', limit: 1, now: T0 + 60_000, defaults: DEFAULTS });
        const before = await row(old.id);
        const o = await call(store, 'w1', { id: old.id, lockToken: old.lock_token }, T0 + 61_000);
        expect(o).toMatchObject({ ok: false, reason: 'lease_lost', status: 'running' });
        expect(await row(old.id)).toEqual(before);
        expect(before).toMatchObject({ locked_by: 'w2', lock_token: next!.lock_token, lease_epoch: 2 });
        expect((await events(old.id)).at(-1)).toMatchObject({ type: 'stale_write_rejected', reason: write, worker_id: 'w1', message: "lock token is not the current claim's" });
      });

      test(`${write} to a job that is no longer running is refused with its status`, async () => {
        const { store, runningJob, events } = t();
        const job = await runningJob();
        // Completed with a result: a completion without one is another outcome, not a repeat (lost-answers.conformance.ts).
        await store.jobsCompleteIfOwned({ workerId: 'w1', results: [{ id: job.id, lockToken: job.lock_token, data: '"first"' }], now: T0 });
        const o = await call(store, 'w1', { id: job.id, lockToken: job.lock_token }, T0 + 1);
        expect(o).toMatchObject({ ok: false, reason: 'lease_lost', status: 'completed' });
        expect((await events(job.id)).at(-1)).toMatchObject({ type: 'stale_write_rejected', reason: write, from_status: 'completed', message: 'job is completed' });
      });

      test(`${write} to an unknown id is not_found and records nothing`, async () => {
        const { store, count } = t();
        const events = await count('events');
        expect(await call(store, 'w1', { id: 424242, lockToken: 'x' }, T0)).toEqual({ id: 424242, ok: false, reason: 'not_found' });
        expect(await count('events')).toBe(events);
      });

      test(`${write} by the owner after its lease expired, before the reaper took the job, is still its own`, async () => {
        const { store, runningJob } = t();
        const job = await runningJob({ leaseExpiresAt: T0 - 60_000, startedAt: T0 - 90_000 });
        const o = await call(store, 'w1', { id: job.id, lockToken: job.lock_token }, T0);
        expect(o).toMatchObject({ ok: true });
      });

      const keeps = KEEPS_THE_JOB.includes(write);
      test(`${write} past the attempt's deadline is ${keeps ? 'refused (deadline_exceeded)' : 'accepted until the reaper takes the job'}`, async () => {
        const { store, runningJob, row, events } = t();
        const job = await runningJob({ startedAt: T0 - 10_000, deadlineAt: T0 - 1_000, leaseExpiresAt: T0 + 20_000 });
        const before = await row(job.id);
        const o = await call(store, 'w1', { id: job.id, lockToken: job.lock_token }, T0);
        if (keeps) {
          expect(o).toMatchObject({ ok: false, reason: 'lease_lost', status: 'running', cause: 'deadline_exceeded' });
          expect(await row(job.id)).toEqual(before);
          expect((await events(job.id)).at(-1)).toMatchObject({ type: 'stale_write_rejected', reason: write, message: 'deadline_exceeded: the attempt passed its deadline 1000 ms ago' });
        } else {
          expect(o).toMatchObject({ ok: true });
        }
      });
    }

    test('after the reaper took a job at its deadline, every write from its old owner says deadline_exceeded', async () => {
      const { store, runningJob, events } = t();
      const job = await runningJob({ startedAt: T0 - 10_000, deadlineAt: T0 - 1_000 });
      const { take } = await store.jobsGetReapCandidates({ now: T0, limit: 10, defaults: DEFAULTS, rules: { workerAliveMs: 1, maxReapDeferMs: 1 } });
      await store.jobsReapIfUnchanged({ now: T0, defaults: DEFAULTS, writes: [{ candidate: take[0]!, decision: { action: 'requeue', cause: 'deadline', reason: 'deadline_exceeded', why: 'test', takesAt: T0 } }] });
      for (const call of Object.values(writes)) {
        expect(await call(store, 'w1', { id: job.id, lockToken: job.lock_token }, T0 + 1)).toMatchObject({ ok: false, reason: 'lease_lost', status: 'pending', cause: 'deadline_exceeded' });
      }
      expect((await events(job.id)).at(-1)).toMatchObject({ type: 'stale_write_rejected', message: 'deadline_exceeded: job is pending, taken back by the reaper at its deadline' });
    });

    test('a batch is judged per job: the owned ones are written, the stale ones refused and recorded', async () => {
      const { store, runningJob, row, events } = t();
      const mine = await runningJob();
      const stolen = await runningJob({ workerId: 'w2' });
      const outcomes = await store.jobsHeartbeatIfOwned({ workerId: 'w1', leases: [{ id: mine.id, lockToken: mine.lock_token }, { id: stolen.id, lockToken: stolen.lock_token }, { id: 999_999, lockToken: 'x' }], now: T0 + 5_000 });
      expect(outcomes).toMatchObject([{ id: mine.id, ok: true }, { id: stolen.id, ok: false, reason: 'lease_lost' }, { id: 999_999, ok: false, reason: 'not_found' }]);
      expect((await row(mine.id)).lease_expires_at).toBe(T0 + 5_000 + DEFAULTS.leaseMs);
      expect((await row(stolen.id)).lease_expires_at).toBe(T0 + DEFAULTS.leaseMs);
      expect((await events(stolen.id)).at(-1)).toMatchObject({ type: 'stale_write_rejected', reason: 'heartbeat' });
    });

    test('a refused write from a worker nobody knows leaves the workers table as it was; an owner\'s write touches its row', async () => {
      const { store, runningJob, count } = t();
      const job = await runningJob({ workerId: 'w1' });
      await store.jobsHeartbeatIfOwned({ workerId: 'stranger', leases: [{ id: job.id, lockToken: 'nope' }], now: T0 });
      expect(await count('workers')).toBe(0);
      await store.jobsHeartbeatIfOwned({ workerId: 'w1', leases: [{ id: job.id, lockToken: job.lock_token }], now: T0 + 2_000 });
      expect(await store.workersList({ sinceMs: 0, limit: 10 })).toMatchObject([{ id: 'w1', last_seen_at: T0 + 2_000 }]);
    });

    test('effects: a stale worker can neither start nor finish an effect', async () => {
      const { store, runningJob, row } = t();
      const job = await runningJob();
      const ref = { jobId: job.id, key: 'send', workerId: 'w1', now: T0 };
      expect(await store.effectStartIfOwned({ ...ref, lockToken: 'stale' })).toEqual({ kind: 'lease_lost', status: 'running' });
      expect(await store.effectStartIfOwned({ ...ref, lockToken: job.lock_token })).toEqual({ kind: 'run' });
      expect(await store.effectFinishIfOwned({ ...ref, lockToken: 'stale', result: '1' })).toEqual({ kind: 'lease_lost', status: 'running' });
      expect(await store.effectFinishIfOwned({ ...ref, workerId: 'w2', lockToken: job.lock_token, result: '1' })).toEqual({ kind: 'lease_lost', status: 'running' });
      expect(await store.effectStartIfOwned({ ...ref, jobId: 777_777, lockToken: 'x' })).toEqual({ kind: 'not_found' });
      expect((await row(job.id)).status).toBe('running');
    });

    test('steps: the result and its checkpoint land together; the next claim finds done and uncertain steps, and each uncertain one is an event', async () => {
      const { store, runningJob, row, events } = t();
      const old = await runningJob({ startedAt: T0 - 120_000 });
      const mine = { jobId: old.id, workerId: 'w1', lockToken: old.lock_token };
      expect(await store.effectStartIfOwned({ ...mine, key: 'step:charge', now: T0 - 110_000 })).toEqual({ kind: 'run' });
      expect(await store.effectStartIfOwned({ ...mine, key: 'step:send', now: T0 - 100_000 })).toEqual({ kind: 'run' });
      // A stale finish with a checkpoint writes neither.
      expect(await store.effectFinishIfOwned({ ...mine, lockToken: 'stale', key: 'step:charge', result: '"x"', checkpoint: '{"bad":1}', now: T0 - 105_000 })).toMatchObject({ kind: 'lease_lost' });
      expect((await row(old.id)).checkpoint).toBeNull();
      expect(await store.effectFinishIfOwned({ ...mine, key: 'step:charge', result: '"ch_1"', checkpoint: '{"charged":true}', now: T0 - 105_000 })).toEqual({ kind: 'done', result: '"ch_1"' });
      expect((await row(old.id)).checkpoint).toBe('{"charged":true}');
      expect(await store.stepsListIfOwned({ ...mine, now: T0 - 104_000 })).toEqual({
        kind: 'ok',
        steps: [
          { name: 'charge', state: 'done', attempt: 1, result: '"ch_1"', uncertain: false },
          { name: 'send', state: 'started', attempt: 1, result: null, uncertain: false },
        ],
      });
      // The reaper takes it back; w2 claims attempt 2.
      const { take } = await store.jobsGetReapCandidates({ now: T0, limit: 10, defaults: DEFAULTS, rules: { workerAliveMs: 1, maxReapDeferMs: 1 } });
      await store.jobsReapIfUnchanged({ now: T0, defaults: DEFAULTS, writes: [{ candidate: take[0]!, decision: { action: 'requeue', cause: 'lost', reason: 'reaped_due_to_expired_lease', why: 'test', takesAt: T0 } }] });
      const [next] = await store.jobsClaimPending({ queue: 'q', workerId: 'w2', limit: 1, now: T0 + 60_000, defaults: DEFAULTS });
      expect(await store.stepsListIfOwned({ ...mine, now: T0 + 61_000 })).toEqual({ kind: 'lease_lost', status: 'running' });
      expect((await events(old.id)).filter((e) => e.type === 'step_uncertain')).toEqual([]);
      expect(await store.stepsListIfOwned({ jobId: old.id, workerId: 'w2', lockToken: next!.lock_token!, now: T0 + 61_000 })).toEqual({
        kind: 'ok',
        steps: [
          { name: 'charge', state: 'done', attempt: 1, result: '"ch_1"', uncertain: false },
          { name: 'send', state: 'started', attempt: 1, result: null, uncertain: true },
        ],
      });
      expect((await events(old.id)).filter((e) => e.type === 'step_uncertain')).toMatchObject([
        { reason: 'send', worker_id: 'w2', attempt: 2, at: T0 + 61_000, message: 'step send was started on attempt 1 by worker w1 and never recorded done: it may or may not have run, the handler decides' },
      ]);
      expect(await store.stepsListIfOwned({ jobId: 999_999, workerId: 'w2', lockToken: 'x', now: T0 })).toEqual({ kind: 'not_found' });
    });

    test('a duplicate reported by the owner is an event with its key and counted; a stale report is neither, and the job is left as it was', async () => {
      const { store, runningJob, row, events } = t();
      const job = await runningJob();
      const before = await row(job.id);
      const ref = { jobId: job.id, workerId: 'w1', lockToken: job.lock_token };
      expect(await store.duplicateReportIfOwned({ ...ref, key: 'payment-1', now: T0 + 1_000 })).toMatchObject({ id: job.id, ok: true });
      expect(await store.duplicateReportIfOwned({ ...ref, key: 'payment-2', now: T0 + 2_000 })).toMatchObject({ ok: true });
      expect(await store.duplicateReportIfOwned({ ...ref, lockToken: 'stale', key: 'payment-3', now: T0 + 3_000 })).toMatchObject({ ok: false, reason: 'lease_lost' });
      expect(await row(job.id)).toEqual(before);
      expect((await events(job.id)).filter((e) => e.type === 'duplicate_reported')).toMatchObject([
        { reason: 'payment-1', worker_id: 'w1', actor: 'w1', attempt: 1, at: T0 + 1_000, message: 'the handler found "payment-1" already done downstream on attempt 1' },
        { reason: 'payment-2', at: T0 + 2_000 },
      ]);
      const q = (await store.metricsSnapshot({ now: T0 + 3_000, config: { ...DEFAULTS, workerAliveMs: RULES.workerAliveMs } })).queues.find((x) => x.queue === 'q')!;
      expect(q.duplicatesReported).toEqual({ total: 2, lastHour: 2, last5m: 2 });
    });
  });
}
