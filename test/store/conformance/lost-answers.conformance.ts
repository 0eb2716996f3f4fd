/**
 * An answer lost on its way back to the worker: the worker sends the same
 * request again, and the store must neither refuse it as a stale write nor
 * act twice. A completion, failure or release repeated by the same claim is
 * answered as stored (and a different outcome, or an older token, is still
 * refused and recorded); a claim sent again with its claim id gets the same
 * jobs and tokens back; a claim the worker gave up on (named in its beat)
 * gives its jobs back to the queue without costing an attempt.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { DEFAULTS, T0, useBundle, type StoreBackend } from './support.ts';

export function defineLostAnswers(backend: StoreBackend) {
  describe('lost answers', () => {
    const t = useBundle(backend);

    /** Stale writes as recorded and as counted (the durable counter /metrics reads). */
    async function staleWrites() {
      const { db } = t();
      const [e] = await db.all<{ n: number }>(sql`SELECT count(*) AS n FROM events WHERE type = 'stale_write_rejected'`);
      const [c] = await db.all<{ n: number }>(sql`SELECT coalesce(sum(value), 0) AS n FROM counters WHERE name = 'stale_write_rejected'`);
      return { recorded: Number(e!.n), counted: Number(c!.n) };
    }

    /** A row's own columns (libSQL's rows also carry their values under a symbol). */
    const plain = (row: object) => Object.fromEntries(Object.entries(row));
    /** An accepted outcome with its job as plain columns. */
    const plainOutcome = (o: { ok: boolean } | undefined) => (o && 'job' in o ? { ...o, job: plain(o.job as object) } : o);

    const claim = (workerId: string, claimId: string | undefined, now: number, limit = 2) =>
      t().store.jobsClaimPending({ queue: 'q', workerId, instanceId: 'i1', limit, claimId, now, defaults: DEFAULTS });

    test('a completion sent again by its claim is answered as stored: not refused, not a stale write, nothing changed', async () => {
      const { store, runningJob, row, events, count } = t();
      const job = await runningJob();
      const ref = { id: job.id, lockToken: job.lock_token, data: '{"sent":1}' };
      const [first] = await store.jobsCompleteIfOwned({ workerId: 'w1', results: [ref], now: T0 + 1_000, full: true });
      expect(first).toMatchObject({ ok: true, job: { status: 'completed', result: '{"sent":1}' } });
      expect(first).not.toHaveProperty('repeated');
      const stored = await row(job.id);
      const eventsBefore = await count('events');
      const [again] = await store.jobsCompleteIfOwned({ workerId: 'w1', results: [ref], now: T0 + 2_000, full: true });
      expect(plainOutcome(again)).toEqual({ id: job.id, ok: true, repeated: true, job: plain(stored) });
      const [lean] = await store.jobsCompleteIfOwned({ workerId: 'w1', results: [ref], now: T0 + 3_000 });
      expect(lean).toMatchObject({ ok: true, repeated: true, job: { id: job.id, status: 'completed', completed_at: T0 + 1_000 } });
      expect(await row(job.id)).toEqual(stored);
      expect(await count('events')).toBe(eventsBefore);
      expect(await staleWrites()).toEqual({ recorded: 0, counted: 0 });
      expect((await events(job.id)).map((e) => e.type)).toEqual([]);
    });

    test('a batch that repeats one completion and makes another answers both ok', async () => {
      const { store, runningJob, row } = t();
      const a = await runningJob();
      const b = await runningJob();
      await store.jobsCompleteIfOwned({ workerId: 'w1', results: [{ id: a.id, lockToken: a.lock_token }], now: T0 });
      const outcomes = await store.jobsCompleteIfOwned({ workerId: 'w1', results: [{ id: a.id, lockToken: a.lock_token }, { id: b.id, lockToken: b.lock_token }], now: T0 + 500 });
      expect(outcomes).toMatchObject([{ id: a.id, ok: true, repeated: true }, { id: b.id, ok: true }]);
      expect(outcomes[1]).not.toHaveProperty('repeated');
      expect((await row(b.id)).status).toBe('completed');
      expect(await staleWrites()).toEqual({ recorded: 0, counted: 0 });
    });

    test('a different outcome from the same token is refused and recorded: another result, a failure or a release after a completion', async () => {
      const { store, runningJob, row, events } = t();
      const job = await runningJob();
      await store.jobsCompleteIfOwned({ workerId: 'w1', results: [{ id: job.id, lockToken: job.lock_token, data: '1' }], now: T0 });
      const stored = await row(job.id);
      expect((await store.jobsCompleteIfOwned({ workerId: 'w1', results: [{ id: job.id, lockToken: job.lock_token, data: '2' }], now: T0 + 1 }))[0]).toMatchObject({ ok: false, reason: 'lease_lost', status: 'completed' });
      expect((await store.jobFailIfOwned({ workerId: 'w1', id: job.id, lockToken: job.lock_token, error: 'e', retryable: true, now: T0 + 2, defaults: DEFAULTS }))[0]).toMatchObject({ ok: false, status: 'completed' });
      expect((await store.jobsReleaseIfOwned({ workerId: 'w1', leases: [{ id: job.id, lockToken: job.lock_token }], reason: 'shutdown', now: T0 + 3 }))[0]).toMatchObject({ ok: false, status: 'completed' });
      // The same token from another worker is not its repeat either.
      expect((await store.jobsCompleteIfOwned({ workerId: 'w2', results: [{ id: job.id, lockToken: job.lock_token, data: '1' }], now: T0 + 4 }))[0]).toMatchObject({ ok: false, status: 'completed' });
      expect(await row(job.id)).toEqual(stored);
      expect((await events(job.id)).map((e) => [e.type, e.reason, e.message])).toEqual([
        ['stale_write_rejected', 'complete', 'job is completed'],
        ['stale_write_rejected', 'fail', 'job is completed'],
        ['stale_write_rejected', 'release', 'job is completed'],
        ['stale_write_rejected', 'complete', 'job is completed'],
      ]);
      expect(await staleWrites()).toEqual({ recorded: 4, counted: 4 });
    });

    test('a failure sent again is answered as stored, retried or final; another error or retry choice is refused', async () => {
      const { store, runningJob, row } = t();
      const retried = await runningJob();
      const fail = (id: number, lockToken: string, error: string, retryable: boolean, now: number) =>
        store.jobFailIfOwned({ workerId: 'w1', id, lockToken, error, retryable, now, defaults: DEFAULTS });
      expect((await fail(retried.id, retried.lock_token, 'boom', true, T0))[0]).toMatchObject({ ok: true, job: { status: 'pending', errored_attempts: 1 } });
      const stored = await row(retried.id);
      const [again] = await fail(retried.id, retried.lock_token, 'boom', true, T0 + 100);
      expect(plainOutcome(again)).toEqual({ id: retried.id, ok: true, repeated: true, job: plain(stored) });
      expect((await fail(retried.id, retried.lock_token, 'other', true, T0 + 200))[0]).toMatchObject({ ok: false, status: 'pending' });
      expect((await fail(retried.id, retried.lock_token, 'boom', false, T0 + 300))[0]).toMatchObject({ ok: false, status: 'pending' });
      expect(await row(retried.id)).toEqual(stored);

      const final = await runningJob();
      await fail(final.id, final.lock_token, 'bad input', false, T0);
      expect((await fail(final.id, final.lock_token, 'bad input', false, T0 + 100))[0]).toMatchObject({ ok: true, repeated: true, job: { status: 'failed', errored_attempts: 1 } });
      expect(await staleWrites()).toEqual({ recorded: 2, counted: 2 });
    });

    test('a release sent again is answered as stored until the job is claimed again; then it is a stale write', async () => {
      const { store, runningJob, row } = t();
      const job = await runningJob();
      const release = (now: number) => store.jobsReleaseIfOwned({ workerId: 'w1', leases: [{ id: job.id, lockToken: job.lock_token }], reason: 'worker_shutdown', now });
      expect((await release(T0))[0]).toMatchObject({ ok: true });
      const stored = await row(job.id);
      expect(stored).toMatchObject({ status: 'pending', attempt_count: 0 });
      expect((await release(T0 + 100))[0]).toMatchObject({ ok: true, repeated: true, job: { id: job.id, status: 'pending' } });
      expect(await row(job.id)).toEqual(stored);
      expect(await staleWrites()).toEqual({ recorded: 0, counted: 0 });
      // Claimed again: the old token's writes, repeats or not, are an older claim's.
      await claim('w2', undefined, T0 + 200);
      expect((await release(T0 + 300))[0]).toMatchObject({ ok: false, reason: 'lease_lost', status: 'running' });
      expect((await store.jobsCompleteIfOwned({ workerId: 'w1', results: [{ id: job.id, lockToken: job.lock_token }], now: T0 + 400 }))[0]).toMatchObject({ ok: false, status: 'running' });
      expect(await staleWrites()).toEqual({ recorded: 2, counted: 2 });
    });

    test('a completion repeated after the job was retried and claimed again is refused: the token is an older claim\'s', async () => {
      const { store, runningJob } = t();
      const job = await runningJob();
      await store.jobFailIfOwned({ workerId: 'w1', id: job.id, lockToken: job.lock_token, error: 'e', retryable: true, retryAfterMs: 0, now: T0, defaults: DEFAULTS });
      const [next] = await claim('w1', undefined, T0 + 10);
      expect(next).toMatchObject({ id: job.id, attempt_count: 2 });
      expect((await store.jobFailIfOwned({ workerId: 'w1', id: job.id, lockToken: job.lock_token, error: 'e', retryable: true, retryAfterMs: 0, now: T0 + 20, defaults: DEFAULTS }))[0]).toMatchObject({ ok: false, status: 'running' });
      expect(await staleWrites()).toEqual({ recorded: 1, counted: 1 });
    });

    test('a claim sent again with its claim id gets the same jobs and tokens, leases renewed from now, and claims nothing more', async () => {
      const { pendingJob, row, events } = t();
      const jobs = [await pendingJob(), await pendingJob(), await pendingJob(), await pendingJob()];
      const first = await claim('w1', 'c-1', T0);
      expect(first.map((j) => j.id)).toEqual([jobs[0]!.id, jobs[1]!.id]);
      const again = await claim('w1', 'c-1', T0 + 4_000);
      expect(again.map((j) => [j.id, j.lock_token, j.attempt_count, j.lease_epoch])).toEqual(first.map((j) => [j.id, j.lock_token, j.attempt_count, j.lease_epoch]));
      expect(again[0]).toMatchObject({ lease_ms: DEFAULTS.leaseMs, lease_expires_at: T0 + 4_000 + DEFAULTS.leaseMs, deadline_at: T0 + DEFAULTS.timeoutMs, timeout_ms: DEFAULTS.timeoutMs - 4_000, heartbeat_ms: DEFAULTS.heartbeatMs });
      expect({ ...plain(again[0]!), lease_expires_at: 0, timeout_ms: 0 }).toEqual({ ...plain(first[0]!), lease_expires_at: 0, timeout_ms: 0 });
      expect(await row(jobs[2]!.id)).toMatchObject({ status: 'pending' });
      expect(await row(jobs[0]!.id)).toMatchObject({ status: 'running', attempt_count: 1, last_heartbeat_at: T0 + 4_000, claim_id: 'c-1' });
      expect((await events(jobs[0]!.id)).map((e) => [e.type, e.from_status, e.to_status, e.actor])).toEqual([['claimed', 'pending', 'running', 'w1'], ['claim_replayed', 'running', 'running', 'w1']]);
      // Another id is another claim.
      expect((await claim('w1', 'c-2', T0 + 5_000)).map((j) => j.id)).toEqual([jobs[2]!.id, jobs[3]!.id]);
    });

    test('a claim id is the worker\'s own: another worker sending it claims for itself; without an id every claim claims', async () => {
      const { pendingJob } = t();
      for (let i = 0; i < 6; i++) await pendingJob();
      const mine = await claim('w1', 'shared', T0, 1);
      const theirs = await claim('w2', 'shared', T0, 1);
      expect(theirs[0]!.id).not.toBe(mine[0]!.id);
      const old1 = await claim('w3', undefined, T0, 1);
      const old2 = await claim('w3', undefined, T0, 1);
      expect(new Set([mine, theirs, old1, old2].map((c) => c[0]!.id)).size).toBe(4);
    });

    test('a claim sent again after its jobs ended (finished, or past their deadline) claims anew', async () => {
      const { store, pendingJob } = t();
      for (let i = 0; i < 3; i++) await pendingJob();
      const [a] = await claim('w1', 'c-1', T0, 1);
      await store.jobsReleaseIfOwned({ workerId: 'w1', leases: [{ id: a!.id, lockToken: a!.lock_token! }], reason: 'r', now: T0 + 1 });
      const [b] = await claim('w1', 'c-1', T0 + 2, 1);
      expect(b!.lock_token).not.toBe(a!.lock_token);
      const [late] = await claim('w1', 'c-1', b!.deadline_at! + 1, 1);
      expect(late!.id).not.toBe(b!.id);
    });

    test('a completion that claims, sent again: the completion is answered as stored, the claim gets its jobs back, nothing more is claimed', async () => {
      const { store, runningJob, pendingJob, count } = t();
      const done = await runningJob();
      const next = [await pendingJob(), await pendingJob(), await pendingJob()];
      const call = (now: number) =>
        store.jobsCompleteThenClaim({ workerId: 'w1', instanceId: 'i1', results: [{ id: done.id, lockToken: done.lock_token, data: '"ok"' }], claim: { queue: 'q', limit: 2, claimId: 'c-7' }, now, defaults: DEFAULTS });
      const first = await call(T0);
      expect(first.outcomes).toMatchObject([{ ok: true }]);
      expect(first.claimed.map((j) => j.id)).toEqual([next[0]!.id, next[1]!.id]);
      const events = await count('events');
      const again = await call(T0 + 3_000);
      expect(again.outcomes).toMatchObject([{ ok: true, repeated: true, job: { status: 'completed' } }]);
      expect(again.claimed.map((j) => [j.id, j.lock_token])).toEqual(first.claimed.map((j) => [j.id, j.lock_token]));
      expect(again.claimed[0]!.lease_expires_at).toBe(T0 + 3_000 + DEFAULTS.leaseMs);
      // Two claim_replayed events, no stale write.
      expect(await count('events')).toBe(events + 2);
      expect(await staleWrites()).toEqual({ recorded: 0, counted: 0 });
      expect((await t().row(next[2]!.id)).status).toBe('pending');
    });

    test('a beat naming claims the worker gave up on gives their jobs back: pending, the attempt not counted, no lost attempt, an event', async () => {
      const { store, pendingJob, row, events } = t();
      for (let i = 0; i < 5; i++) await pendingJob();
      const lost = await claim('w1', 'c-lost', T0, 2);
      const kept = await claim('w1', 'c-kept', T0, 1);
      const others = await store.jobsClaimPending({ queue: 'q', workerId: 'w2', limit: 1, claimId: 'c-lost', now: T0, defaults: DEFAULTS });
      await store.workerBeat({ id: 'w1', instanceId: 'i1', lostClaims: ['c-lost', 'never-sent'], now: T0 + 1_500 });
      for (const j of lost) {
        expect(await row(j.id)).toMatchObject({ status: 'pending', attempt_count: 0, lost_attempts: 0, errored_attempts: 0, lock_token: null, locked_by: null, lease_expires_at: null });
        expect((await events(j.id)).at(-1)).toMatchObject({ type: 'released', reason: 'claim_answer_lost', from_status: 'running', to_status: 'pending', actor: 'w1', worker_id: 'w1', at: T0 + 1_500 });
      }
      expect((await row(kept[0]!.id)).status).toBe('running');
      expect((await row(others[0]!.id)).status).toBe('running');
      // The next claim of a released job is not a duplicate execution: nobody ran it.
      const again = await claim('w3', undefined, T0 + 2_000, 5);
      expect(again.map((j) => j.id)).toEqual(expect.arrayContaining(lost.map((j) => j.id)));
      for (const j of lost) expect((await events(j.id)).map((e) => e.type)).not.toContain('duplicate_execution');
      // Said again (the beat's answer was lost too): nothing more changes.
      await store.workerBeat({ id: 'w1', instanceId: 'i1', lostClaims: ['c-lost'], now: T0 + 3_000 });
      expect((await row(lost[0]!.id)).locked_by).toBe('w3');
    });

    test('a heartbeat whose beat names a lost claim renews the held leases and gives the lost claim\'s jobs back in one batch', async () => {
      const { store, pendingJob, row } = t();
      for (let i = 0; i < 2; i++) await pendingJob();
      const [held] = await claim('w1', 'c-1', T0, 1);
      const [lost] = await claim('w1', 'c-2', T0, 1);
      const outcomes = await store.jobsHeartbeatIfOwned({ workerId: 'w1', leases: [{ id: held!.id, lockToken: held!.lock_token! }], beat: { instanceId: 'i1', lostClaims: ['c-2'] }, now: T0 + 2_000 });
      expect(outcomes).toMatchObject([{ id: held!.id, ok: true, job: { lease_expires_at: T0 + 2_000 + DEFAULTS.leaseMs } }]);
      expect(await row(lost!.id)).toMatchObject({ status: 'pending', attempt_count: 0 });
      // Only the process that claimed: another instance of the worker id names nothing of this one's.
      const [other] = await claim('w1', 'c-3', T0 + 2_100, 1);
      await store.workerBeat({ id: 'w1', instanceId: 'i2', lostClaims: ['c-3'], now: T0 + 2_200 });
      expect((await row(other!.id)).status).toBe('running');
    });
  });
}
