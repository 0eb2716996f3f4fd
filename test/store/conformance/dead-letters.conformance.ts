/**
 * Dead letters and snooze (drizzle/0032, src/db/store/dead-letters.ts,
 * snooze.ts) on every backend: a job failing for good in a queue with a
 * deadLetterQueue is listed there in the failing statement, its history kept
 * and the failure's event first; a redrive's list changes nothing; a redrive
 * sends it back pending with fresh attempts, counted. A snooze gives the
 * attempt back, counts, is fenced by the token, and stops at maxSnoozes.
 */
import { describe, expect, test } from 'vitest';
import { DEFAULTS, T0, useBundle, type StoreBackend } from './support.ts';

export function defineDeadLetters(backend: StoreBackend) {
  describe('dead letters and snooze', () => {
    const t = useBundle(backend);
    const dlq = (queue = 'q', deadLetterQueue: string | null = 'dead') => t().store.queueUpsertSettings({ queue, patch: { deadLetterQueue }, now: T0 });

    test('a job whose last attempt fails is listed in its queue\'s dead-letter queue, its history and error kept, the failure\'s event first', async () => {
      const { store, runningJob, row, events } = t();
      await dlq();
      const job = await runningJob({ attempt: 3, maxAttempts: 3 });
      const plain = await runningJob({ queue: 'plain', attempt: 3, maxAttempts: 3 });
      await store.jobFailIfOwned({ workerId: 'w1', id: job.id, lockToken: job.lock_token, error: 'boom', retryable: true, now: T0 + 5, defaults: DEFAULTS });
      await store.jobFailIfOwned({ workerId: 'w1', id: plain.id, lockToken: plain.lock_token, error: 'boom', retryable: true, now: T0 + 5, defaults: DEFAULTS });
      expect(await row(job.id)).toMatchObject({ status: 'failed', queue_name: 'q', dead_letter_queue: 'dead', dead_lettered_at: T0 + 5, last_error: 'boom', attempt_count: 3 });
      expect(await row(plain.id)).toMatchObject({ status: 'failed', dead_letter_queue: null });
      const types = (await events(job.id)).map((e) => [e.type, e.reason]);
      expect(types.slice(-2)).toEqual([['failed', 'attempts_exhausted'], ['dead_lettered', 'attempts_exhausted']]);
      const listed = await store.jobsDeadLetterList({ deadLetterQueue: 'dead', limit: 10, max: 100 });
      expect(listed).toMatchObject({ matching: 1, jobs: [{ id: job.id, queue_name: 'q', last_event_reason: 'attempts_exhausted', last_error: 'boom' }] });
      const [health] = await store.queuesHealth({ now: T0 + 5, defaults: DEFAULTS, queue: 'q' });
      expect(health).toMatchObject({ deadLetterQueue: 'dead', counts: { failed: 1 } });
    });

    test('the reaper failing a job for good (lost-attempt budget spent) dead-letters it too', async () => {
      const { store, runningJob, row } = t();
      await dlq();
      const job = await runningJob({ workerId: 'ghost', attempt: 3, maxAttempts: 3, leaseExpiresAt: T0 - 3_600_000 });
      const { take } = await store.jobsGetReapCandidates({ now: T0, limit: 10, defaults: DEFAULTS, rules: { ...DEFAULTS, workerAliveMs: 1, maxReapDeferMs: 0 } as never });
      expect(take.map((c) => c.id)).toContain(job.id);
      const { decideReap } = await import('../../../src/core/reaper.ts');
      const writes = take.map((candidate) => ({ candidate, decision: decideReap(candidate, T0, { ...DEFAULTS, workerAliveMs: 1, maxReapDeferMs: 0 } as never) }));
      await store.jobsReapIfUnchanged({ now: T0, writes: writes.filter((w) => w.decision.action !== 'none' && w.decision.action !== 'hold') as never, defaults: DEFAULTS });
      expect(await row(job.id)).toMatchObject({ status: 'failed', dead_letter_queue: 'dead' });
    });

    test('a redrive\'s list changes nothing; the redrive sends the jobs back pending with fresh attempts, counted and audited, and a new failure dead-letters again', async () => {
      const { store, db, runningJob, row, events } = t();
      await dlq();
      const job = await runningJob({ attempt: 1, maxAttempts: 3 });
      await store.jobFailIfOwned({ workerId: 'w1', id: job.id, lockToken: job.lock_token, error: 'bad input', retryable: false, now: T0 + 5, defaults: DEFAULTS });
      const before = await row(job.id);
      await store.jobsDeadLetterList({ deadLetterQueue: 'dead', limit: 10, max: 100 });
      expect(await row(job.id)).toEqual(before);
      const moved = await store.jobsRedrive({ deadLetterQueue: 'dead', actor: 'ops', reason: 'fixed the bug', now: T0 + 10, limit: 10 });
      expect(moved).toEqual([{ id: job.id, queue: 'q' }]);
      expect(await row(job.id)).toMatchObject({ status: 'pending', queue_name: 'q', attempt_count: 0, available_at: T0 + 10, dead_letter_queue: null, failed_at: null });
      expect((await events(job.id)).at(-1)).toMatchObject({ type: 'redriven', from_status: 'failed', to_status: 'pending', actor: 'ops', reason: 'fixed the bug' });
      expect(await store.jobsDeadLetterList({ deadLetterQueue: 'dead', limit: 10, max: 100 })).toMatchObject({ matching: 0, jobs: [] });
      const counters = await db.all<{ name: string; value: number }>((await import('drizzle-orm')).sql`SELECT name, value FROM counters WHERE queue_name = 'q' AND name IN ('dead_lettered', 'redriven') ORDER BY name`);
      expect(counters.map((c) => [c.name, Number(c.value)])).toEqual([['dead_lettered', 1], ['redriven', 1]]);
      // Runs again, fails again: dead again.
      const [claimed] = await store.jobsClaimPending({ queue: 'q', workerId: 'w2', limit: 1, now: T0 + 20, defaults: DEFAULTS });
      await store.jobFailIfOwned({ workerId: 'w2', id: job.id, lockToken: claimed!.lock_token!, error: 'again', retryable: false, now: T0 + 30, defaults: DEFAULTS });
      expect(await row(job.id)).toMatchObject({ status: 'failed', dead_letter_queue: 'dead', dead_lettered_at: T0 + 30 });
    });

    test('the dead-letter queues are listed with each queue that feeds them: named by a setting (with no dead letters yet too) or still listing jobs after the setting changed', async () => {
      const { store, runningJob } = t();
      expect(await store.deadLetterQueuesList({ limit: 10 })).toEqual([]);
      await dlq('q', 'dead');
      await dlq('other', 'dead');
      const a = await runningJob({ attempt: 1, maxAttempts: 1 });
      const b = await runningJob({ attempt: 1, maxAttempts: 1 });
      for (const j of [a, b]) await store.jobFailIfOwned({ workerId: 'w1', id: j.id, lockToken: j.lock_token, error: 'boom', retryable: true, now: T0 + 5, defaults: DEFAULTS });
      // q's dead letters stay listed in 'dead' after q names another dead-letter queue.
      await dlq('q', 'dead-2');
      expect(await store.deadLetterQueuesList({ limit: 10 })).toEqual([
        { deadLetterQueue: 'dead', fromQueue: 'other', jobs: 0, named: true },
        { deadLetterQueue: 'dead', fromQueue: 'q', jobs: 2, named: false },
        { deadLetterQueue: 'dead-2', fromQueue: 'q', jobs: 0, named: true },
      ]);
      expect(await store.deadLetterQueuesList({ limit: 1 })).toHaveLength(1);
      // Redriven, they are no longer listed; the settings still are.
      const moved = await store.jobsRedrive({ deadLetterQueue: 'dead', actor: 'ops', reason: 'fixed', now: T0 + 10, limit: 10 });
      expect(moved).toEqual([{ id: a.id, queue: 'q' }, { id: b.id, queue: 'q' }]);
      expect((await store.deadLetterQueuesList({ limit: 10 })).map((r) => [r.deadLetterQueue, r.fromQueue, r.jobs])).toEqual([['dead', 'other', 0], ['dead-2', 'q', 0]]);
    });

    test('a snooze gives the attempt back, records no error, counts, and is due after its delay', async () => {
      const { store, runningJob, row, events } = t();
      const job = await runningJob({ attempt: 2, maxAttempts: 3 });
      const o = await store.jobSnoozeIfOwned({ workerId: 'w1', id: job.id, lockToken: job.lock_token, delayMs: 60_000, defaultMaxSnoozes: 100, now: T0 + 5 });
      expect(o).toMatchObject({ ok: true, job: { status: 'pending', attempt_count: 1, snoozes: 1 } });
      expect(await row(job.id)).toMatchObject({ status: 'pending', attempt_count: 1, errored_attempts: 0, last_error: null, available_at: T0 + 60_005, snoozes: 1, lock_token: null });
      expect((await events(job.id)).at(-1)).toMatchObject({ type: 'snoozed', from_status: 'running', to_status: 'pending', reason: 'for 60000 ms' });
      // The same snooze again (its answer lost): answered as stored, not a stale write.
      const again = await store.jobSnoozeIfOwned({ workerId: 'w1', id: job.id, lockToken: job.lock_token, delayMs: 60_000, defaultMaxSnoozes: 100, now: T0 + 6 });
      expect(again).toMatchObject({ ok: true, repeated: true });
      expect(await row(job.id)).toMatchObject({ snoozes: 1 });
    });

    test('the claim after a snooze is not a duplicate execution: the owner ended its attempt, as a release does', async () => {
      const { store, runningJob, row, events } = t();
      const job = await runningJob();
      await store.jobSnoozeIfOwned({ workerId: 'w1', id: job.id, lockToken: job.lock_token, delayMs: 10, defaultMaxSnoozes: 100, now: T0 + 5 });
      expect(await row(job.id)).toMatchObject({ status: 'pending', taken_back: null });
      const [claimed] = await store.jobsClaimPending({ queue: job.queue_name, workerId: 'w2', limit: 1, now: T0 + 20, defaults: DEFAULTS });
      expect(claimed).toMatchObject({ id: job.id });
      expect(await row(job.id)).toMatchObject({ status: 'running', locked_by: 'w2' });
      // The duplicate-executions counter counts exactly these events (drizzle/0006).
      expect((await events(job.id)).map((e) => e.type)).not.toContain('duplicate_execution');
    });

    test('a snooze with a stale token is refused and changes nothing; past maxSnoozes it is refused and the job stays the worker\'s', async () => {
      const { store, runningJob, row } = t();
      const job = await runningJob();
      const stale = await store.jobSnoozeIfOwned({ workerId: 'w1', id: job.id, lockToken: 'not-the-token', delayMs: 1_000, defaultMaxSnoozes: 100, now: T0 + 5 });
      expect(stale).toMatchObject({ ok: false, reason: 'lease_lost', status: 'running' });
      expect(await row(job.id)).toMatchObject({ status: 'running', snoozes: 0 });
      await store.queueUpsertSettings({ queue: 'q', patch: { maxSnoozes: 0 }, now: T0 });
      const over = await store.jobSnoozeIfOwned({ workerId: 'w1', id: job.id, lockToken: job.lock_token, delayMs: 1_000, defaultMaxSnoozes: 100, now: T0 + 5 });
      expect(over).toEqual({ id: job.id, ok: false, reason: 'snooze_limit', snoozes: 0, maxSnoozes: 0 });
      expect(await row(job.id)).toMatchObject({ status: 'running', lock_token: job.lock_token, snoozes: 0 });
    });
  });
}
