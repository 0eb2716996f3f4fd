/**
 * The reaper's hold (src/db/store/reaper-hold.ts) and what it changes, on
 * every backend: one row whose later end wins, read with every reap candidate
 * (the reaper's, the operator's requeue, the dashboard's rows) so decideReap
 * judges it; every take of an expired lease restates "no hold in force" in its
 * WHERE, so a hold begun after the read wins; deadlines still apply. And the
 * operator's requeue does what the reaper would: a job whose budget is spent
 * is failed for good, single and bulk.
 */
import { describe, expect, test } from 'vitest';
import { decideReap } from '../../../src/core/reaper.ts';
import { DEFAULTS, RULES, RULES_AND_DEFAULTS, T0, useBundle, type StoreBackend } from './support.ts';
import type { ReapWrite } from '../../../src/db/store/port.ts';

/** Past the grace and past the longest deferral. */
const OVERDUE_A_LOT = DEFAULTS.graceMs + RULES.maxReapDeferMs + 1_000;

export function defineReaperHold(backend: StoreBackend) {
  describe("the reaper's hold", () => {
    const t = useBundle(backend);

    test('begin and read: on the clock given, the later end wins with its cause, and an ended hold is not in force', async () => {
      const { store } = t();
      expect(await store.reaperHoldRead({ now: T0 })).toBeNull();
      expect(await store.reaperHoldBegin({ now: T0, holdMs: 15_000, gapMs: null, cause: 'the server just started' })).toEqual({ holdUntil: T0 + 15_000, beganAt: T0, gapMs: null, cause: 'the server just started' });
      expect(await store.reaperHoldBegin({ now: T0 + 1_000, holdMs: 5_000, gapMs: 7_000, cause: 'shorter' })).toMatchObject({ holdUntil: T0 + 15_000, cause: 'the server just started' });
      expect(await store.reaperHoldBegin({ now: T0 + 2_000, holdMs: 15_000, gapMs: 7_000, cause: 'the reaper did not run for 7.0 s' })).toEqual({ holdUntil: T0 + 17_000, beganAt: T0 + 2_000, gapMs: 7_000, cause: 'the reaper did not run for 7.0 s' });
      expect(await store.reaperHoldRead({ now: T0 + 16_999 })).toEqual({ holdUntil: T0 + 17_000, beganAt: T0 + 2_000, gapMs: 7_000, cause: 'the reaper did not run for 7.0 s', now: T0 + 16_999 });
      expect(await store.reaperHoldRead({ now: T0 + 17_000 })).toBeNull();
    });

    test('candidates carry the hold, decideReap holds them, and a take decided before the hold began finds no row; a deadline is still taken', async () => {
      const { store, runningJob, row } = t();
      const lost = await runningJob({ workerId: 'ghost', leaseExpiresAt: T0 - OVERDUE_A_LOT });
      const late = await runningJob({ workerId: 'ghost', deadlineAt: T0 - 1 });
      const before = await store.jobsGetReapCandidates({ now: T0, limit: 10, defaults: DEFAULTS, rules: RULES });
      const writes: ReapWrite[] = [...before.take, ...before.defer].map((candidate) => {
        const decision = decideReap(candidate, T0, RULES);
        if (decision.action === 'none') throw new Error('expected a take');
        return { candidate, decision };
      });
      expect(writes.map((w) => [w.candidate.id, w.decision.action, w.candidate.holdUntil ?? null])).toEqual([
        [lost.id, 'requeue', null],
        [late.id, 'requeue', null],
      ]);
      await store.reaperHoldBegin({ now: T0, holdMs: 10_000, gapMs: null, cause: 'the server just started' });
      // The hold began after the read: the expired lease's write finds no row; the deadline's goes through.
      expect([...(await store.jobsReapIfUnchanged({ now: T0, writes, defaults: DEFAULTS }))]).toEqual([late.id]);
      expect((await row(lost.id)).status).toBe('running');
      const during = await store.jobsGetReapCandidates({ now: T0 + 1, limit: 10, defaults: DEFAULTS, rules: RULES });
      expect(during.take).toMatchObject([{ id: lost.id, holdUntil: T0 + 10_000, holdCause: 'the server just started' }]);
      expect(decideReap(during.take[0]!, T0 + 1, RULES)).toMatchObject({ action: 'hold', reason: 'server_gap', until: T0 + 10_000, takesAt: T0 + 10_000, then: { action: 'requeue' } });
      expect(decideReap(during.take[0]!, T0 + 10_000, RULES)).toMatchObject({ action: 'requeue' });
      const [view] = await store.jobsListZombieCandidates({ now: T0 + 1, defaults: DEFAULTS, limit: 10 });
      expect(view).toMatchObject({ id: lost.id, hold_until: T0 + 10_000, hold_cause: 'the server just started' });
    });

    test('a requeue without force is refused during the hold, with its end; force takes the job and its event says it overrode the hold', async () => {
      const { store, runningJob, events } = t();
      const job = await runningJob({ workerId: 'ghost', leaseExpiresAt: T0 - OVERDUE_A_LOT });
      await store.reaperHoldBegin({ now: T0, holdMs: 10_000, gapMs: null, cause: 'the server just started' });
      const refused = await store.jobRequeueIfReaperWould({ id: job.id, actor: 'admin', reason: null, now: T0 + 1, force: false, rules: RULES_AND_DEFAULTS });
      expect(refused).toMatchObject({ ok: false, reason: 'reaper_would_wait', heldUntil: T0 + 10_000, takesAt: T0 + 10_000, why: expect.stringContaining('the server just started: owners get 10.0 s more') });
      expect(await store.jobsBulkMatching({ kind: 'requeue', queue: 'q', status: 'running', now: T0 + 1, max: 10, rules: RULES_AND_DEFAULTS })).toBe(0);
      const forced = await store.jobRequeueIfReaperWould({ id: job.id, actor: 'admin', reason: 'host gone', now: T0 + 1, force: true, rules: RULES_AND_DEFAULTS });
      expect(forced).toMatchObject({ ok: true, job: { status: 'pending' }, requeue: { forced: true, overrodeHold: { until: T0 + 10_000 } } });
      expect((await events(job.id)).at(-1)).toMatchObject({ type: 'force_requeued_by_operator', reason: 'host gone', message: expect.stringContaining("overrode the reaper's hold") });
    });

    test('a requeue without force does what the reaper would: a job whose attempts are spent is failed for good, single and bulk', async () => {
      const { store, runningJob, row, events } = t();
      const spent = await runningJob({ workerId: 'ghost', maxAttempts: 1, leaseExpiresAt: T0 - OVERDUE_A_LOT });
      const plan = await store.jobRequeuePlan({ id: spent.id, now: T0, force: false, rules: RULES_AND_DEFAULTS });
      expect(plan).toMatchObject({ ok: true, requeue: { action: 'fail', reason: 'attempts_exhausted' } });
      expect(await store.jobRequeueIfReaperWould({ id: spent.id, actor: 'admin', reason: 'r', now: T0, force: false, rules: RULES_AND_DEFAULTS })).toMatchObject({
        ok: true,
        job: { status: 'failed', failed_at: T0, lost_attempts: 1 },
        requeue: { action: 'fail', reason: 'attempts_exhausted' },
      });
      expect((await events(spent.id)).at(-1)).toMatchObject({ type: 'reaped', reason: 'attempts_exhausted', to_status: 'failed', actor: 'admin' });

      const a = await runningJob({ workerId: 'ghost', maxAttempts: 1, leaseExpiresAt: T0 - OVERDUE_A_LOT });
      const b = await runningJob({ workerId: 'ghost', maxAttempts: 3, leaseExpiresAt: T0 - OVERDUE_A_LOT });
      const filter = { kind: 'requeue' as const, queue: 'q', status: 'running' as const, rules: RULES_AND_DEFAULTS };
      expect((await store.jobsBulkPreview({ ...filter, now: T0, limit: 10 })).map((r) => [r.id, r.requeue?.action])).toEqual([
        [a.id, 'fail'],
        [b.id, 'requeue'],
      ]);
      expect(await store.jobsBulkAct({ ...filter, actor: 'admin', reason: 'bulk', now: T0, limit: 10 })).toEqual([a.id, b.id]);
      expect([(await row(a.id)).status, (await row(b.id)).status]).toEqual(['failed', 'pending']);
    });
  });
}
