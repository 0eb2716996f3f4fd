/**
 * Canary requeues (src/db/store/canary.ts) on every backend: a run freezes
 * its jobs; a step is one batch guarded by the step the caller saw, so the
 * same step asked twice is taken once; the watch reads the step's jobs'
 * events after the step; finish and cancel are guarded by the run still
 * watching, each with its event.
 */
import { describe, expect, test } from 'vitest';
import { DEFAULTS, RULES_AND_DEFAULTS, T0, useBundle, type StoreBackend } from './support.ts';
import type { AuditActor } from '../../../src/db/store/port.ts';

const BY: AuditActor = { actor: 'ops', role: 'admin', credential: null, source: 'api', client: null };
const OPTIONS = { first: 1, growth: 2, windowMs: 1_000, maxFailures: 0, maxStaleWrites: 0, maxDuplicates: 0, maxHeartbeatLagMs: 40_000 };

export function defineCanary(backend: StoreBackend) {
  describe('canary requeues', () => {
    const t = useBundle(backend);

    test('a step is taken once from the state seen, its failures are read back, and a stopped run is neither finished nor cancelled again', async () => {
      const { store, runningJob } = t();
      const jobs = [await runningJob({ workerId: 'hung' }), await runningJob({ workerId: 'hung' }), await runningJob({ workerId: 'hung' })];
      const ids = await store.canaryRunSelect({ queue: 'q', force: true, now: T0, rules: RULES_AND_DEFAULTS, limit: 10 });
      expect(ids).toEqual(jobs.map((j) => Number(j.id)));
      const run = await store.canaryRunStart({ ...OPTIONS, queue: 'q', force: true, jobIds: ids, by: BY, reason: 'hung after the incident', now: T0 });
      expect(run).toMatchObject({ state: 'watching', step: 0, selected: 3, force: true, startedBy: BY });

      const take = () => store.canaryStepTake({ runId: run.id, fromStep: 0, size: 1, rules: RULES_AND_DEFAULTS, now: T0 });
      const [a, b] = [await take(), await take()];
      expect([a.taken, b.taken]).toEqual([true, false]);
      expect(a).toMatchObject({ step: 1, requeued: [ids[0]], failed: [], skipped: [] });

      const [claimed] = await store.jobsClaimPending({ queue: 'q', workerId: 'w2', limit: 5, now: T0 + 10, defaults: DEFAULTS });
      expect(claimed?.id).toBe(ids[0]);
      await store.jobFailIfOwned({ workerId: 'w2', id: claimed!.id, lockToken: claimed!.lock_token!, error: 'still down', retryable: true, now: T0 + 20, defaults: DEFAULTS });
      const read = (await store.canaryRunRead({ id: run.id }))!;
      expect(read.run).toMatchObject({ step: 1, requeued: 1, remaining: 2 });
      const health = await store.canaryStepHealth({ runId: run.id, step: 1, afterEvent: read.run.stepAfterEvent!, now: T0 + 30 });
      expect(health).toEqual({ jobs: 1, attempts: 1, completed: 0, failures: 1, staleWrites: 0, duplicates: 0, heartbeatLagMs: null });

      expect(await store.canaryRunFinish({ runId: run.id, step: 1, state: 'stopped', reason: 'failures', why: '1 failed', now: T0 + 40 })).toBe(true);
      expect(await store.canaryRunFinish({ runId: run.id, step: 1, state: 'done', reason: 'all_taken', why: 'x', now: T0 + 50 })).toBe(false);
      expect(await store.canaryRunCancel({ runId: run.id, by: BY, reason: 'late', now: T0 + 60 })).toEqual({ ok: false, reason: 'conflict', state: 'stopped' });
      expect((await store.canaryStepTake({ runId: run.id, fromStep: 1, size: 2, rules: RULES_AND_DEFAULTS, now: T0 + 70 })).taken).toBe(false);
      const after = (await store.canaryRunRead({ id: run.id }))!;
      expect(after.run).toMatchObject({ state: 'stopped', stopReason: 'failures', remaining: 2 });
      expect(after.events.map((e) => e.type)).toEqual(['started', 'step', 'stopped']);
      expect(await store.canaryRunsActive({ limit: 10 })).toEqual([]);
      expect(await store.canaryRunCancel({ runId: run.id + 1, by: BY, reason: 'x', now: T0 })).toEqual({ ok: false, reason: 'not_found' });
    });
  });
}
