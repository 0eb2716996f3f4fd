/**
 * Operator actions, single and bulk: cancel (pending only), retry (failed or
 * cancelled only, with a fresh attempt budget), and the bulk requeue that
 * follows the reaper unless forced. Each refusal names the job's status and
 * changes nothing; each action records who did it and why.
 */
import { describe, expect, test } from 'vitest';
import { DEFAULTS, RULES_AND_DEFAULTS, T0, useBundle, type StoreBackend } from './support.ts';

export function defineOperator(backend: StoreBackend) {
  describe('operator actions', () => {
    const t = useBundle(backend);

    test('cancel: pending -> cancelled with who and why; any other status is a conflict that changes nothing', async () => {
      const { store, scheduledJob, runningJob, completedJob, row, events } = t();
      const job = await scheduledJob(60_000);
      expect(await store.jobCancelIfPending({ id: job.id, actor: 'admin', reason: 'duplicate', now: T0 })).toMatchObject({ ok: true, job: { status: 'cancelled', cancelled_at: T0, finished_at: T0 } });
      expect((await events(job.id)).at(-1)).toMatchObject({ type: 'cancelled', reason: 'duplicate', actor: 'admin', from_status: 'pending', to_status: 'cancelled' });
      for (const other of [await runningJob(), await completedJob()]) {
        const before = await row(other.id);
        expect(await store.jobCancelIfPending({ id: other.id, actor: 'admin', reason: null, now: T0 })).toEqual({ ok: false, reason: 'conflict', status: other.status });
        expect(await row(other.id)).toEqual(before);
      }
      expect(await store.jobCancelIfPending({ id: 123_456, actor: 'admin', reason: null, now: T0 })).toEqual({ ok: false, reason: 'not_found' });
    });

    test('retry: failed or cancelled -> pending now with a fresh attempt budget; pending or running is a conflict', async () => {
      const { store, failedJob, cancelledJob, pendingJob, events } = t();
      const failed = await failedJob({ attempt: 3, erroredAttempts: 2, lostAttempts: 1, finishedAt: T0 - 5_000 });
      const o = await store.jobRetryIfFinishedUnsuccessfully({ id: failed.id, actor: 'admin', reason: 'fixed the bug', now: T0 });
      expect(o).toMatchObject({ ok: true, job: { status: 'pending', available_at: T0, attempt_count: 0, errored_attempts: 0, lost_attempts: 0, failed_at: null, finished_at: null } });
      expect((await events(failed.id)).at(-1)).toMatchObject({ type: 'retried_by_operator', reason: 'fixed the bug', from_status: 'failed', to_status: 'pending' });
      const cancelled = await cancelledJob();
      expect(await store.jobRetryIfFinishedUnsuccessfully({ id: cancelled.id, actor: 'admin', reason: null, now: T0 })).toMatchObject({ ok: true, job: { status: 'pending', cancelled_at: null } });
      const pending = await pendingJob();
      expect(await store.jobRetryIfFinishedUnsuccessfully({ id: pending.id, actor: 'admin', reason: null, now: T0 })).toEqual({ ok: false, reason: 'conflict', status: 'pending' });
      expect(await events(pending.id)).toEqual([]);
    });

    test('bulk retry and cancel: at most `limit` jobs of the filter, lowest id first, counted and previewed alike', async () => {
      const { store, failedJob, pendingJob, events } = t();
      const f = [await failedJob(), await failedJob(), await failedJob({ queue: 'other' })];
      const filter = { kind: 'retry' as const, queue: 'q', status: 'failed' as const };
      expect(await store.jobsBulkMatching({ ...filter, now: T0, max: 100, rules: RULES_AND_DEFAULTS })).toBe(2);
      expect((await store.jobsBulkPreview({ ...filter, now: T0, limit: 1, rules: RULES_AND_DEFAULTS })).map((r) => r.id)).toEqual([f[0]!.id]);
      expect(await store.jobsBulkAct({ ...filter, actor: 'admin', reason: 'bulk', now: T0, limit: 1, rules: RULES_AND_DEFAULTS })).toEqual([f[0]!.id]);
      expect(await store.jobsBulkAct({ ...filter, queue: undefined, actor: 'admin', reason: 'bulk', now: T0, limit: 10, rules: RULES_AND_DEFAULTS })).toEqual([f[1]!.id, f[2]!.id]);
      expect((await events(f[2]!.id)).at(-1)).toMatchObject({ type: 'retried_by_operator', reason: 'bulk', actor: 'admin' });

      const p = [await pendingJob(), await pendingJob()];
      expect(await store.jobsBulkAct({ kind: 'cancel', queue: 'q', status: 'pending', actor: 'admin', reason: null, now: T0, limit: 10, rules: RULES_AND_DEFAULTS })).toEqual(
        // The retried jobs are pending too now: all of them go.
        [f[0]!.id, f[1]!.id, p[0]!.id, p[1]!.id],
      );
      expect(await store.jobsBulkAct({ kind: 'cancel', queue: 'q', status: 'pending', actor: 'admin', reason: null, now: T0, limit: 0, rules: RULES_AND_DEFAULTS })).toEqual([]);
    });

    test('a bulk kind that does not act on the status is refused', async () => {
      const { store } = t();
      await expect(store.jobsBulkAct({ kind: 'cancel', queue: undefined, status: 'failed', actor: 'admin', reason: null, now: T0, limit: 10, rules: RULES_AND_DEFAULTS })).rejects.toThrow(/does not act on failed/);
    });

    test('bulk requeue takes only what the reaper would take now; with force, every running job', async () => {
      const { store, runningJob, row, events } = t();
      await store.workerBeat({ id: 'alive', now: T0 });
      const dead = await runningJob({ workerId: 'dead', leaseExpiresAt: T0 - DEFAULTS.graceMs - 1 });
      const deferred = await runningJob({ workerId: 'alive', leaseExpiresAt: T0 - DEFAULTS.graceMs - 1 });
      const live = await runningJob({ workerId: 'alive' });
      const filter = { kind: 'requeue' as const, queue: undefined, status: 'running' as const };
      expect(await store.jobsBulkMatching({ ...filter, now: T0, max: 100, rules: RULES_AND_DEFAULTS })).toBe(1);
      expect((await store.jobsBulkPreview({ ...filter, now: T0, limit: 10, rules: RULES_AND_DEFAULTS })).map((r) => r.id)).toEqual([dead.id]);
      expect(await store.jobsBulkAct({ ...filter, actor: 'admin', reason: null, now: T0, limit: 10, rules: RULES_AND_DEFAULTS })).toEqual([dead.id]);
      expect(await row(dead.id)).toMatchObject({ status: 'pending', lost_attempts: 1, lock_token: null });
      expect((await events(dead.id)).at(-1)).toMatchObject({ type: 'requeued_by_operator', actor: 'admin' });
      expect((await row(deferred.id)).status).toBe('running');

      expect(await store.jobsBulkMatching({ ...filter, force: true, now: T0, max: 100, rules: RULES_AND_DEFAULTS })).toBe(2);
      expect(await store.jobsBulkAct({ ...filter, force: true, actor: 'admin', reason: 'drain', now: T0, limit: 10, rules: RULES_AND_DEFAULTS })).toEqual([deferred.id, live.id]);
      expect((await events(live.id)).at(-1)).toMatchObject({ type: 'force_requeued_by_operator', reason: 'drain' });
    });
  });
}
