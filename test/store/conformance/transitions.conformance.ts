/**
 * Every transition a worker makes, each from a row the factories put in its
 * starting state: enqueue, claim, heartbeat, extend, checkpoint, complete
 * (and complete-then-claim), fail (retry, non-retryable, attempts spent),
 * release, and the effects ledger. Each checks the row and its event.
 */
import { describe, expect, test } from 'vitest';
import { DEFAULTS, T0, useBundle, type StoreBackend } from './support.ts';

export function defineTransitions(backend: StoreBackend) {
  describe('transitions', () => {
    const t = useBundle(backend);

    test('enqueue: - -> pending, due now or after a delay; a known idempotency key dedups', async () => {
      const { store, row, events } = t();
      const [a, b] = await store.jobsInsert({ queue: 'mail', jobs: [{ payload: { n: 1 } }, { payload: { n: 2 }, delayMs: 5_000, priority: 3 }], actor: 'api', now: T0, defaults: DEFAULTS });
      expect(a).toMatchObject({ deduplicated: false, job: { status: 'pending', available_at: T0, attempt_count: 0, max_attempts: DEFAULTS.maxAttempts } });
      expect(b!.job).toMatchObject({ status: 'pending', available_at: T0 + 5_000, priority: 3 });
      expect(JSON.parse((await row(a!.job.id)).payload)).toEqual({ n: 1 });
      // No event row (drizzle/0015): the enqueue is read from the row, who enqueued it included.
      expect(await events(a!.job.id)).toEqual([]);
      expect(await row(a!.job.id)).toMatchObject({ enqueued_by: 'api', created_at: T0 });
      expect((await store.eventsForJob({ jobId: a!.job.id, limit: 10 })).events).toEqual([
        { id: null, derived: true, job_id: a!.job.id, queue_name: 'mail', type: 'enqueued', from_status: null, to_status: 'pending', reason: null, message: null, actor: 'api', worker_id: null, attempt: 0, at: T0 },
      ]);

      const [first] = await store.jobsInsert({ queue: 'mail', jobs: [{ payload: {}, idempotencyKey: 'k' }], actor: 'api', now: T0, defaults: DEFAULTS });
      const [again] = await store.jobsInsert({ queue: 'mail', jobs: [{ payload: { other: true }, idempotencyKey: 'k' }], actor: 'api', now: T0 + 1, defaults: DEFAULTS });
      expect(again).toMatchObject({ deduplicated: true, job: { id: first!.job.id, dedup_count: 1 } });
      // A dedup is exceptional: it keeps its event.
      expect((await events(first!.job.id)).map((e) => e.type)).toEqual(['deduplicated']);
      expect((await store.eventsForJob({ jobId: first!.job.id, limit: 10 })).events.map((e) => [e.type, e.derived])).toEqual([['enqueued', true], ['deduplicated', false]]);
    });

    test('enqueue into a new queue past maxQueues is refused and stores nothing', async () => {
      const { store, count } = t();
      await store.jobsInsert({ queue: 'one', jobs: [{ payload: {} }], actor: null, now: T0, defaults: DEFAULTS, maxQueues: 1 });
      await expect(store.jobsInsert({ queue: 'two', jobs: [{ payload: {} }], actor: null, now: T0, defaults: DEFAULTS, maxQueues: 1 })).rejects.toThrow(/LEASEHOLD_MAX_QUEUES/);
      expect(await count('jobs')).toBe(1);
    });

    test('claim: pending -> running with a fresh token, one more attempt and fencing token, a lease and a deadline', async () => {
      const { store, pendingJob, row, events } = t();
      const job = await pendingJob({ queue: 'q', timeoutMs: 60_000 });
      const [c] = await store.jobsClaimPending({ queue: 'q', workerId: 'w1', instanceId: 'i1', limit: 5, now: T0, defaults: DEFAULTS });
      expect(c).toMatchObject({ id: job.id, attempt_count: 1, lease_epoch: 1, lease_ms: DEFAULTS.leaseMs, lease_expires_at: T0 + DEFAULTS.leaseMs, deadline_at: T0 + 60_000, timeout_ms: 60_000 });
      expect(c!.heartbeat_ms).toBe(DEFAULTS.heartbeatMs);
      expect(c!.lock_token).toMatch(/^[0-9a-f]{32}$/);
      expect(await row(job.id)).toMatchObject({ status: 'running', locked_by: 'w1', locked_by_instance: 'i1', started_at: T0, last_heartbeat_at: T0 });
      expect((await events(job.id)).at(-1)).toMatchObject({ type: 'claimed', from_status: 'pending', to_status: 'running', actor: 'w1' });
      // The claim registers its worker (the reaper's liveness evidence).
      expect(await store.workersList({ sinceMs: T0, limit: 10 })).toMatchObject([{ id: 'w1', instance_id: 'i1', last_seen_at: T0 }]);
    });

    test('claim takes the highest priority, then the earliest due, then the lowest id, up to the limit; never a job not yet due', async () => {
      const { store, pendingJob, scheduledJob } = t();
      const low = await pendingJob({ availableAt: T0 - 3_000 });
      const high = await pendingJob({ priority: 5 });
      const early = await pendingJob({ availableAt: T0 - 5_000 });
      await scheduledJob(60_000, { priority: 9 });
      const claimed = await store.jobsClaimPending({ queue: 'q', workerId: 'w1', limit: 10, now: T0, defaults: DEFAULTS });
      expect(claimed.map((c) => c.id)).toEqual([high.id, early.id, low.id]);
      expect(await store.jobsClaimPending({ queue: 'q', workerId: 'w1', limit: 10, now: T0 + 59_999, defaults: DEFAULTS })).toEqual([]);
      expect(await store.jobsClaimPending({ queue: 'q', workerId: 'w1', limit: 10, now: T0 + 60_000, defaults: DEFAULTS })).toHaveLength(1);
    });

    test('claim: a limit, a requested lease, a queue lease override, and nothing from a paused queue', async () => {
      const { store, pendingJob } = t();
      await pendingJob();
      await pendingJob();
      await pendingJob({ queue: 'long' });
      const [one, ...rest] = await store.jobsClaimPending({ queue: 'q', workerId: 'w1', limit: 1, leaseMs: 9_000, now: T0, defaults: DEFAULTS });
      expect(rest).toEqual([]);
      expect(one).toMatchObject({ lease_ms: 9_000, lease_expires_at: T0 + 9_000, heartbeat_ms: 3_000 });
      await store.queueUpsertSettings({ queue: 'long', patch: { leaseMs: 120_000 }, now: T0 });
      expect(await store.jobsClaimPending({ queue: 'long', workerId: 'w1', limit: 1, now: T0, defaults: DEFAULTS })).toMatchObject([{ lease_ms: 120_000 }]);
      await store.queueUpsertSettings({ queue: 'q', patch: { paused: true }, now: T0 });
      expect(await store.jobsClaimPending({ queue: 'q', workerId: 'w1', limit: 5, now: T0, defaults: DEFAULTS })).toEqual([]);
      await store.queueUpsertSettings({ queue: 'q', patch: { paused: false }, now: T0 });
      expect(await store.jobsClaimPending({ queue: 'q', workerId: 'w1', limit: 5, now: T0, defaults: DEFAULTS })).toHaveLength(1);
    });

    test('heartbeat renews the lease from now and stores progress; no event', async () => {
      const { store, runningJob, row, events } = t();
      const job = await runningJob();
      const before = (await events(job.id)).length;
      const [o] = await store.jobsHeartbeatIfOwned({ workerId: 'w1', leases: [{ id: job.id, lockToken: job.lock_token, data: JSON.stringify({ pct: 40 }) }], now: T0 + 10_000 });
      expect(o).toMatchObject({ ok: true, job: { id: job.id, status: 'running', lease_expires_at: T0 + 10_000 + DEFAULTS.leaseMs } });
      expect(await row(job.id)).toMatchObject({ last_heartbeat_at: T0 + 10_000, progress: '{"pct":40}', progressed_at: T0 + 10_000 });
      // Without data the progress stays, and progressed_at does not move.
      await store.jobsHeartbeatIfOwned({ workerId: 'w1', leases: [{ id: job.id, lockToken: job.lock_token }], now: T0 + 20_000 });
      expect(await row(job.id)).toMatchObject({ progress: '{"pct":40}', progressed_at: T0 + 10_000, lease_expires_at: T0 + 20_000 + DEFAULTS.leaseMs });
      expect(await events(job.id)).toHaveLength(before);
    });

    test('extend pushes the expiry once; a later heartbeat never moves it earlier', async () => {
      const { store, runningJob, row } = t();
      const job = await runningJob();
      const [o] = await store.jobsHeartbeatIfOwned({ workerId: 'w1', leases: [{ id: job.id, lockToken: job.lock_token }], leaseMs: 300_000, now: T0 + 1_000 });
      expect(o).toMatchObject({ ok: true, job: { lease_expires_at: T0 + 301_000 } });
      await store.jobsHeartbeatIfOwned({ workerId: 'w1', leases: [{ id: job.id, lockToken: job.lock_token }], now: T0 + 2_000 });
      expect(await row(job.id)).toMatchObject({ lease_expires_at: T0 + 301_000, lease_ms: DEFAULTS.leaseMs });
    });

    test('checkpoint stores state for the next attempt and renews the lease', async () => {
      const { store, runningJob, row } = t();
      const job = await runningJob();
      const [o] = await store.jobCheckpointIfOwned({ workerId: 'w1', id: job.id, lockToken: job.lock_token, checkpoint: '{"page":7}', now: T0 + 5_000 });
      expect(o).toMatchObject({ ok: true });
      expect(await row(job.id)).toMatchObject({ checkpoint: '{"page":7}', progressed_at: T0 + 5_000, lease_expires_at: T0 + 5_000 + DEFAULTS.leaseMs, last_heartbeat_at: T0 + 5_000 });
    });

    test('complete: running -> completed with the result; the lease and token are cleared', async () => {
      const { store, runningJob, row, events } = t();
      const job = await runningJob();
      const [o] = await store.jobsCompleteIfOwned({ workerId: 'w1', results: [{ id: job.id, lockToken: job.lock_token, data: '{"ok":1}' }], now: T0 + 3_000, full: true });
      expect(o).toMatchObject({ ok: true, job: { status: 'completed', result: '{"ok":1}' } });
      expect(await row(job.id)).toMatchObject({ status: 'completed', completed_at: T0 + 3_000, finished_at: T0 + 3_000, lock_token: null, locked_by: null, lease_expires_at: null });
      // No event row (drizzle/0015): the timeline reads the completion from the row, after the claim.
      expect((await events(job.id)).map((e) => e.type)).not.toContain('completed');
      expect((await store.eventsForJob({ jobId: job.id, limit: 10 })).events.at(-1)).toMatchObject({
        id: null, derived: true, type: 'completed', from_status: 'running', to_status: 'completed', actor: 'w1', worker_id: 'w1', attempt: 1, at: T0 + 3_000,
      });
    });

    test('complete-then-claim completes first and refills the freed slot in the same transaction', async () => {
      const { store, runningJob, pendingJob, row } = t();
      const done = await runningJob();
      const next = await pendingJob();
      const { outcomes, claimed } = await store.jobsCompleteThenClaim({
        workerId: 'w1',
        results: [{ id: done.id, lockToken: done.lock_token }],
        claim: { queue: 'q', limit: 1 },
        now: T0 + 1_000,
        defaults: DEFAULTS,
      });
      expect(outcomes).toMatchObject([{ id: done.id, ok: true }]);
      expect(claimed.map((c) => c.id)).toEqual([next.id]);
      expect((await row(next.id)).status).toBe('running');
    });

    test('fail, retryable with attempts left: running -> pending after retryAfterMs (or the backoff), an errored attempt', async () => {
      const { store, runningJob, row, events } = t();
      const job = await runningJob({ attempt: 1, maxAttempts: 3 });
      const [o] = await store.jobFailIfOwned({ workerId: 'w1', id: job.id, lockToken: job.lock_token, error: 'timeout talking to smtp', retryable: true, retryAfterMs: 7_000, now: T0 + 2_000, defaults: DEFAULTS });
      expect(o).toMatchObject({ ok: true, job: { status: 'pending', available_at: T0 + 9_000, errored_attempts: 1, last_error: 'timeout talking to smtp', lock_token: null } });
      expect((await events(job.id)).at(-1)).toMatchObject({ type: 'retry_scheduled', to_status: 'pending' });

      const again = await runningJob({ attempt: 2, maxAttempts: 3 });
      await store.jobFailIfOwned({ workerId: 'w1', id: again.id, lockToken: again.lock_token, error: 'x', retryable: true, now: T0, defaults: DEFAULTS });
      // Jittered exponential backoff: attempt 2's ceiling is base * 2; the delay is between half of it and all of it.
      const due = (await row(again.id)).available_at - T0;
      expect(due).toBeGreaterThanOrEqual(DEFAULTS.backoffBaseMs);
      expect(due).toBeLessThanOrEqual(2 * DEFAULTS.backoffBaseMs);
    });

    test('fail for good: non-retryable, or the last attempt -> failed with its reason', async () => {
      const { store, runningJob, row, events } = t();
      const fatal = await runningJob({ attempt: 1 });
      await store.jobFailIfOwned({ workerId: 'w1', id: fatal.id, lockToken: fatal.lock_token, error: 'bad input', retryable: false, now: T0, defaults: DEFAULTS });
      expect(await row(fatal.id)).toMatchObject({ status: 'failed', failed_at: T0, finished_at: T0, errored_attempts: 1 });
      expect((await events(fatal.id)).at(-1)).toMatchObject({ type: 'failed', reason: 'non_retryable' });

      const spent = await runningJob({ attempt: 3, maxAttempts: 3 });
      await store.jobFailIfOwned({ workerId: 'w1', id: spent.id, lockToken: spent.lock_token, error: 'again', retryable: true, now: T0, defaults: DEFAULTS });
      expect((await row(spent.id)).status).toBe('failed');
      expect((await events(spent.id)).at(-1)).toMatchObject({ type: 'failed', reason: 'attempts_exhausted' });
    });

    test('release: running -> pending now, the attempt given back, with the reason', async () => {
      const { store, runningJob, row, events } = t();
      const job = await runningJob({ attempt: 2, availableAt: T0 - 10_000 });
      const [o] = await store.jobsReleaseIfOwned({ workerId: 'w1', leases: [{ id: job.id, lockToken: job.lock_token }], reason: 'shutdown', now: T0 + 1_000 });
      expect(o).toMatchObject({ ok: true, job: { status: 'pending' } });
      expect(await row(job.id)).toMatchObject({ status: 'pending', attempt_count: 1, available_at: T0 - 10_000, lock_token: null, locked_by: null, lease_epoch: 2 });
      expect((await events(job.id)).at(-1)).toMatchObject({ type: 'released', reason: 'shutdown', to_status: 'pending' });
    });

    test('effects: started under the owner guard, then done; a later start answers the recorded result', async () => {
      const { store, runningJob, events } = t();
      const job = await runningJob();
      const ref = { jobId: job.id, key: 'charge', lockToken: job.lock_token, workerId: 'w1', now: T0 };
      expect(await store.effectStartIfOwned(ref)).toEqual({ kind: 'run' });
      expect(await store.effectFinishIfOwned({ ...ref, result: '{"charged":true}' })).toEqual({ kind: 'done', result: '{"charged":true}' });
      // Sent again after it landed: the result on record.
      expect(await store.effectFinishIfOwned({ ...ref, result: '{"charged":false}' })).toEqual({ kind: 'done', result: '{"charged":true}' });
      expect(await store.effectStartIfOwned(ref)).toEqual({ kind: 'done', result: '{"charged":true}' });
      expect((await events(job.id)).at(-1)).toMatchObject({ type: 'effect_skipped', reason: 'charge' });
      // A finish for a key never started in this attempt.
      expect(await store.effectFinishIfOwned({ ...ref, key: 'never', result: '1' })).toEqual({ kind: 'not_found' });
    });
  });
}
