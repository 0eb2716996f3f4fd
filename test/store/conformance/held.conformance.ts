/**
 * Held jobs (onLost 'hold', src/db/store/held.ts) on every backend: a lost
 * attempt's job is held for a person by every take (the reaper's expired
 * lease and deadline, the operator's requeue with and without force, the
 * bulk requeue), with what was known of the attempt and an event that says
 * why; no claim path ever takes it (claim, claim riding on a completion, the
 * waiting claims' count), even a write that names it; and only a person ends
 * the hold: release (it runs again), complete by hand, fail, each with its
 * event and audit entry, and 'conflict' with the status for a job not held.
 * The owner's own failure of a lost attempt holds it too: sent after the
 * worker stopped its handler for a lost lease or a deadline (abortedBy), or
 * after the deadline or lease ran out by the database's clock whatever the
 * worker says; a stale worker's failure after the take is still refused.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { decideReap } from '../../../src/core/reaper.ts';
import { HELD_AVAILABLE_AT, heldMessage, parseLostAttempt } from '../../../src/core/held.ts';
import { DEFAULTS, RULES, RULES_AND_DEFAULTS, T0, useBundle, type StoreBackend } from './support.ts';
import type { ReapWrite } from '../../../src/db/store/port.ts';

/** Past the grace and past the longest deferral. */
const OVERDUE_A_LOT = DEFAULTS.graceMs + RULES.maxReapDeferMs + 1_000;

export function defineHeld(backend: StoreBackend) {
  describe("held jobs (onLost 'hold')", () => {
    const t = useBundle(backend);

    /** The reaper's pass, as reapLostLeases makes it: read, decide, write. */
    async function reap(now: number) {
      const { store } = t();
      const { take, defer } = await t().store.jobsGetReapCandidates({ now, limit: 10, defaults: DEFAULTS, rules: RULES });
      const writes: ReapWrite[] = [...take, ...defer].flatMap((candidate) => {
        const decision = decideReap(candidate, now, RULES);
        return decision.action === 'none' || decision.action === 'hold' ? [] : [{ candidate, decision }];
      });
      return { writes, taken: await store.jobsReapIfUnchanged({ now, writes, defaults: DEFAULTS }) };
    }
    const holdQueue = (queue = 'q') => t().store.queueUpsertSettings({ queue, patch: { onLost: 'hold' }, now: T0 });
    const claimAll = (now: number, queue = 'q') => t().store.jobsClaimPending({ queue, workerId: 'w2', limit: 10, now, defaults: DEFAULTS });

    test("the reaper holds an expired lease of a queue with onLost 'hold': pending, out of reach, the attempt kept, a held event, no lost attempt counted", async () => {
      const { store, runningJob, row, events } = t();
      await holdQueue();
      const job = await runningJob({ workerId: 'ghost', leaseExpiresAt: T0 - OVERDUE_A_LOT, lastHeartbeatAt: T0 - OVERDUE_A_LOT - 20_000, progress: { done: 3 }, checkpoint: { page: 7 } });
      const { writes, taken } = await reap(T0);
      expect(writes.map((w) => w.decision)).toMatchObject([{ action: 'requeue', cause: 'lost', held: true }]);
      expect([...taken]).toEqual([job.id]);
      const held = await row(job.id);
      expect(held).toMatchObject({ status: 'pending', held_at: T0, available_at: HELD_AVAILABLE_AT, lost_attempts: 0, lock_token: null, progress: '{"done":3}', checkpoint: '{"page":7}' });
      expect(JSON.parse(held.held_attempt!)).toMatchObject({ worker: 'ghost', attempt: 1, lastHeartbeatAt: T0 - OVERDUE_A_LOT - 20_000, leaseExpiresAt: T0 - OVERDUE_A_LOT, why: expect.stringContaining('lease expired') });
      expect((await events(job.id)).at(-1)).toMatchObject({ type: 'held', reason: 'lost_attempt_held', from_status: 'running', to_status: 'pending', actor: 'reaper', message: expect.stringContaining('ghost') });
      expect(await store.jobsHeldCounts()).toEqual([{ queue: 'q', held: 1, oldestHeldAt: T0 }]);
      expect((await store.jobsHeldList({ limit: 10 })).map((j) => j.id)).toEqual([job.id]);
      const [health] = await store.queuesHealth({ now: T0, defaults: DEFAULTS, queue: 'q' });
      expect(health).toMatchObject({ held: 1, ready: 0, onLost: 'hold', counts: { pending: 1, running: 0 } });
    });

    test("a job's own onLost wins over its queue's, and 'retry' keeps today's requeue", async () => {
      const { db, runningJob, row } = t();
      await holdQueue();
      const retried = await runningJob({ workerId: 'ghost', leaseExpiresAt: T0 - OVERDUE_A_LOT });
      await db.run(sql`UPDATE jobs SET on_lost = 'retry' WHERE id = ${retried.id}`);
      const other = await runningJob({ queue: 'plain', workerId: 'ghost', leaseExpiresAt: T0 - OVERDUE_A_LOT });
      const ownHold = await runningJob({ queue: 'plain', workerId: 'ghost', leaseExpiresAt: T0 - OVERDUE_A_LOT });
      await db.run(sql`UPDATE jobs SET on_lost = 'hold' WHERE id = ${ownHold.id}`);
      await reap(T0);
      expect(await row(retried.id)).toMatchObject({ status: 'pending', held_at: null, lost_attempts: 1 });
      expect(await row(other.id)).toMatchObject({ status: 'pending', held_at: null, lost_attempts: 1 });
      expect(await row(ownHold.id)).toMatchObject({ status: 'pending', held_at: T0, lost_attempts: 0 });
    });

    test('a passed deadline is held too (an errored attempt); an attempt whose budget is spent still fails for good', async () => {
      const { runningJob, row, events } = t();
      await holdQueue();
      const late = await runningJob({ workerId: 'w1', deadlineAt: T0 - 1 });
      const spent = await runningJob({ workerId: 'ghost', attempt: 3, maxAttempts: 3, leaseExpiresAt: T0 - OVERDUE_A_LOT });
      await reap(T0);
      expect(await row(late.id)).toMatchObject({ status: 'pending', held_at: T0, errored_attempts: 1 });
      expect((await events(late.id)).at(-1)).toMatchObject({ type: 'held', reason: 'deadline_held' });
      expect(await row(spent.id)).toMatchObject({ status: 'failed', held_at: null });
    });

    test('no claim path takes a held job: claim, claim after a completion, the waiting claims count, nor a write that names it', async () => {
      const { store, db, runningJob, pendingJob, row } = t();
      await holdQueue();
      const job = await runningJob({ workerId: 'ghost', leaseExpiresAt: T0 - OVERDUE_A_LOT });
      await reap(T0);
      const later = T0 + 365 * 24 * 3_600_000;
      expect(await claimAll(later)).toEqual([]);
      expect(await store.queueClaimableCount({ queue: 'q', cap: 10, now: later })).toBe(0);
      const other = await runningJob({ workerId: 'w1' });
      const { claimed } = await store.jobsCompleteThenClaim({ workerId: 'w1', results: [{ id: other.id, lockToken: other.lock_token, data: '"ok"' }], claim: { queue: 'q', limit: 5 }, now: later, defaults: DEFAULTS });
      expect(claimed).toEqual([]);
      // Even a statement that picks it by id cannot make it running (the trigger skips the row).
      await db.run(sql`UPDATE jobs SET status = 'running', lock_token = 'x', locked_by = 'w9', lease_ms = 1, lease_expires_at = 1 WHERE id = ${job.id}`);
      expect(await row(job.id)).toMatchObject({ status: 'pending', held_at: T0 });
      // Work behind it is still claimed.
      const behind = await pendingJob({ availableAt: T0 });
      expect((await claimAll(later)).map((c) => c.id)).toEqual([behind.id]);
    });

    test('release: back to pending, due now, claimed once more (attempt 2); its event and audit entry carry the reason', async () => {
      const { store, runningJob, row, events } = t();
      await holdQueue();
      const job = await runningJob({ workerId: 'ghost', leaseExpiresAt: T0 - OVERDUE_A_LOT });
      await reap(T0);
      const by = { actor: 'ops', role: 'admin', credential: 'admin', source: 'api', client: null } as const;
      const released = await store.jobReleaseIfHeld({ id: job.id, actor: 'ops', reason: 'the charge never went out', now: T0 + 10, also: { audit: { by, action: 'job.release_held', jobId: job.id, target: `job ${job.id}`, reason: 'the charge never went out', now: T0 + 10 } } });
      expect(released).toMatchObject({ ok: true, job: { status: 'pending', held_at: null, available_at: T0 + 10 } });
      expect((await events(job.id)).at(-1)).toMatchObject({ type: 'released_by_operator', reason: 'the charge never went out', actor: 'ops' });
      const audit = await store.auditList({ limit: 10 });
      expect(audit.entries.at(0)).toMatchObject({ action: 'job.release_held', job_id: job.id, reason: 'the charge never went out' });
      expect(await claimAll(T0 + 20)).toMatchObject([{ id: job.id, attempt_count: 2 }]);
      expect(await row(job.id)).toMatchObject({ status: 'running', locked_by: 'w2' });
      // Released once: a second release finds it running.
      expect(await store.jobReleaseIfHeld({ id: job.id, actor: 'ops', reason: 'again', now: T0 + 30 })).toEqual({ ok: false, reason: 'conflict', status: 'running' });
    });

    test('complete by hand records the result; fail records the reason; neither leaves a held mark, and a job not held is refused with its status', async () => {
      const { store, runningJob, pendingJob, row, events } = t();
      await holdQueue();
      const a = await runningJob({ workerId: 'ghost', leaseExpiresAt: T0 - OVERDUE_A_LOT });
      const b = await runningJob({ workerId: 'ghost', leaseExpiresAt: T0 - OVERDUE_A_LOT });
      await reap(T0);
      expect(await store.jobCompleteIfHeld({ id: a.id, actor: 'ops', reason: 'the effect is in the ledger', result: { charged: true }, now: T0 + 5 })).toMatchObject({
        ok: true,
        job: { status: 'completed', result: '{"charged":true}', completed_at: T0 + 5 },
      });
      expect((await events(a.id)).at(-1)).toMatchObject({ type: 'completed_by_operator', reason: 'the effect is in the ledger' });
      expect(await store.jobFailIfHeld({ id: b.id, actor: 'ops', reason: 'customer refunded by hand', now: T0 + 5 })).toMatchObject({ ok: true, job: { status: 'failed', last_error: expect.stringContaining('customer refunded by hand') } });
      expect((await row(a.id)).held_at).toBeNull();
      expect((await row(b.id)).held_at).toBeNull();
      expect(await store.jobsHeldCounts()).toEqual([]);
      const plain = await pendingJob();
      expect(await store.jobReleaseIfHeld({ id: plain.id, actor: 'ops', reason: 'r', now: T0 })).toEqual({ ok: false, reason: 'conflict', status: 'pending' });
      expect(await store.jobCompleteIfHeld({ id: a.id, actor: 'ops', reason: 'r', now: T0 })).toEqual({ ok: false, reason: 'conflict', status: 'completed' });
      expect(await store.jobFailIfHeld({ id: 999_999, actor: 'ops', reason: 'r', now: T0 })).toEqual({ ok: false, reason: 'not_found' });
    });

    test("an operator's requeue holds the job, with force and without, single and bulk; a cancel of a held job ends the hold", async () => {
      const { store, runningJob, row, events } = t();
      await holdQueue();
      const expired = await runningJob({ workerId: 'ghost', leaseExpiresAt: T0 - OVERDUE_A_LOT });
      const live = await runningJob({ workerId: 'w1' });
      const bulk = await runningJob({ workerId: 'w1' });
      expect(await store.jobRequeueIfReaperWould({ id: expired.id, actor: 'ops', reason: null, now: T0, force: false, rules: RULES_AND_DEFAULTS })).toMatchObject({
        ok: true,
        job: { status: 'pending', held_at: T0, lost_attempts: 0 },
        requeue: { action: 'requeue', held: true },
      });
      expect((await events(expired.id)).at(-1)).toMatchObject({ type: 'held', reason: 'requeue_held', actor: 'ops' });
      expect(await store.jobRequeueIfReaperWould({ id: live.id, actor: 'ops', reason: 'host reboot', now: T0, force: true, rules: RULES_AND_DEFAULTS })).toMatchObject({
        ok: true,
        job: { status: 'pending', held_at: T0, lost_attempts: 0 },
        requeue: { forced: true, held: true },
      });
      expect(JSON.parse((await row(live.id)).held_attempt!)).toMatchObject({ worker: 'w1', why: expect.stringContaining('host reboot') });
      const ids = await store.jobsBulkAct({ kind: 'requeue', queue: 'q', status: 'running', force: true, limit: 10, now: T0, actor: 'ops', reason: 'drain', rules: RULES_AND_DEFAULTS });
      expect(ids).toEqual([bulk.id]);
      expect(await row(bulk.id)).toMatchObject({ status: 'pending', held_at: T0, available_at: HELD_AVAILABLE_AT, lost_attempts: 0, last_event: 'held' });
      expect(await claimAll(T0 + 60_000)).toEqual([]);
      expect(await store.jobCancelIfPending({ id: bulk.id, actor: 'ops', reason: 'not needed', now: T0 })).toMatchObject({ ok: true, job: { status: 'cancelled' } });
      expect((await row(bulk.id)).held_at).toBeNull();
    });

    /** The owner's failure, retryable, as the SDK or a hand-written worker sends it. */
    const fail = (job: { id: number; lock_token: string | null }, now: number, extra: { abortedBy?: 'deadline_exceeded' | 'lease_expired_locally' | 'lease_lost'; retryable?: boolean; workerId?: string; error?: string } = {}) =>
      t().store.jobFailIfOwned({
        workerId: extra.workerId ?? 'w1',
        id: job.id,
        lockToken: job.lock_token!,
        error: extra.error ?? 'JobAbortedError: stopped',
        retryable: extra.retryable ?? true,
        abortedBy: extra.abortedBy,
        now,
        defaults: DEFAULTS,
      });

    test("the owner's failure after its deadline passed is held (deadline_held), whatever the worker says: no retry, the attempt and the worker's error kept", async () => {
      const { runningJob, row, events } = t();
      await holdQueue();
      const job = await runningJob({ workerId: 'w1', startedAt: T0 - 5_000, lastHeartbeatAt: T0 - 1_000, deadlineAt: T0 - 100, progress: { sent: 2 } });
      const [outcome] = await fail(job, T0, { error: 'Error: timed out talking to the bank' });
      expect(outcome).toMatchObject({ ok: true, job: { status: 'pending', held_at: T0, available_at: HELD_AVAILABLE_AT } });
      const held = await row(job.id);
      expect(held).toMatchObject({ status: 'pending', held_at: T0, available_at: HELD_AVAILABLE_AT, errored_attempts: 1, lost_attempts: 0, lock_token: null, progress: '{"sent":2}' });
      const attempt = parseLostAttempt(held.held_attempt)!;
      expect(attempt).toMatchObject({ worker: 'w1', attempt: 1, lastHeartbeatAt: T0 - 1_000, error: 'Error: timed out talking to the bank', why: expect.stringContaining('deadline') });
      // The hold's words are heldMessage's, built in SQL from the row's columns.
      expect(held.last_error).toBe(heldMessage({ worker: 'w1', lastHeartbeatAt: T0 - 1_000, why: attempt.why }));
      expect((await events(job.id)).at(-1)).toMatchObject({ type: 'held', reason: 'deadline_held', from_status: 'running', to_status: 'pending', actor: 'w1', message: held.last_error });
      expect(await claimAll(T0 + 365 * 24 * 3_600_000)).toEqual([]);
    });

    test('a failure sent after the worker stopped its handler for a lost lease or a deadline (abortedBy) is held, while the lease and deadline still run on the server', async () => {
      const { runningJob, row, events } = t();
      await holdQueue();
      const fenced = await runningJob({ workerId: 'w1' });
      const refused = await runningJob({ workerId: 'w1' });
      const late = await runningJob({ workerId: 'w1' });
      // The worker's own deadline timer fires a little before the server's deadline: its word is taken.
      await fail(fenced, T0 + 10, { abortedBy: 'lease_expired_locally' });
      await fail(refused, T0 + 10, { abortedBy: 'lease_lost' });
      await fail(late, T0 + 10, { abortedBy: 'deadline_exceeded' });
      for (const [job, reason, errored] of [[fenced, 'lost_attempt_held', 0], [refused, 'lost_attempt_held', 0], [late, 'deadline_held', 1]] as const) {
        expect(await row(job.id)).toMatchObject({ status: 'pending', held_at: T0 + 10, available_at: HELD_AVAILABLE_AT, errored_attempts: errored, lost_attempts: 0 });
        expect((await events(job.id)).at(-1)).toMatchObject({ type: 'held', reason, actor: 'w1' });
      }
      expect(parseLostAttempt((await row(fenced.id)).held_attempt)!.why).toContain('lease_expired_locally');
      expect(await claimAll(T0 + 3_600_000)).toEqual([]);
    });

    test("a failure that arrives after the lease expired by the database's clock is held, even without abortedBy (a worker without the SDK)", async () => {
      const { runningJob, row, events } = t();
      await holdQueue();
      const job = await runningJob({ workerId: 'w1', leaseExpiresAt: T0 - 1 });
      await fail(job, T0, { error: 'Error: socket closed' });
      expect(await row(job.id)).toMatchObject({ status: 'pending', held_at: T0, errored_attempts: 0, lost_attempts: 0 });
      expect((await events(job.id)).at(-1)).toMatchObject({ type: 'held', reason: 'lost_attempt_held' });
      expect(parseLostAttempt((await row(job.id)).held_attempt)!.why).toContain('lease expired');
    });

    test("what stays as it was: an ordinary failure of a hold job retries, a failure for good fails, and onLost 'retry' retries a lost attempt's failure", async () => {
      const { runningJob, row, events } = t();
      await holdQueue();
      const ordinary = await runningJob({ workerId: 'w1' });
      const fatal = await runningJob({ workerId: 'w1', deadlineAt: T0 - 1 });
      const last = await runningJob({ workerId: 'w1', attempt: 3, maxAttempts: 3 });
      const retryJob = await runningJob({ queue: 'plain', workerId: 'w1', deadlineAt: T0 - 1 });
      await fail(ordinary, T0, { error: 'Error: bank said 503' });
      await fail(fatal, T0, { retryable: false });
      await fail(last, T0, { abortedBy: 'lease_expired_locally' });
      await fail(retryJob, T0, { abortedBy: 'deadline_exceeded' });
      expect(await row(ordinary.id)).toMatchObject({ status: 'pending', held_at: null, last_error: 'Error: bank said 503', errored_attempts: 1, last_event: 'retry_scheduled' });
      expect((await row(ordinary.id)).available_at).toBeLessThan(T0 + DEFAULTS.backoffMaxMs + 1);
      expect(await row(fatal.id)).toMatchObject({ status: 'failed', held_at: null, last_event_reason: 'non_retryable' });
      expect(await row(last.id)).toMatchObject({ status: 'failed', held_at: null, last_event_reason: 'attempts_exhausted' });
      expect(await row(retryJob.id)).toMatchObject({ status: 'pending', held_at: null, last_event: 'retry_scheduled' });
      expect((await events(retryJob.id)).map((e) => e.type)).not.toContain('held');
    });

    test('the same held failure sent again (its answer was lost) is answered as stored; another error from the same token is refused', async () => {
      const { runningJob, row, events } = t();
      await holdQueue();
      const job = await runningJob({ workerId: 'w1' });
      await fail(job, T0, { abortedBy: 'lease_expired_locally', error: 'JobAbortedError: fenced' });
      const before = await row(job.id);
      const [again] = await fail(job, T0 + 5, { abortedBy: 'lease_expired_locally', error: 'JobAbortedError: fenced' });
      expect(again).toMatchObject({ ok: true, repeated: true, job: { status: 'pending', held_at: T0 } });
      expect(await row(job.id)).toEqual(before);
      expect((await events(job.id)).map((e) => e.type)).not.toContain('stale_write_rejected');
      const [other] = await fail(job, T0 + 6, { abortedBy: 'lease_expired_locally', error: 'JobAbortedError: something else' });
      expect(other).toMatchObject({ ok: false, reason: 'lease_lost' });
      expect(await row(job.id)).toMatchObject({ status: 'pending', held_at: T0, updated_at: T0 });
    });

    test("fencing holds: a stale worker's failure after the reaper, the owner check or a force took the attempt is refused (lease_lost) and the job stays held", async () => {
      const { store, runningJob, row, events } = t();
      await holdQueue();
      const pastDeadline = await runningJob({ workerId: 'w1', deadlineAt: T0 - 1 });
      const gone = await runningJob({ workerId: 'ghost', instanceId: 'i-1', leaseExpiresAt: T0 - 1 });
      const forced = await runningJob({ workerId: 'w1' });
      // The reaper's pass, the owner check answering that ghost's process is gone.
      const { take, defer } = await store.jobsGetReapCandidates({ now: T0, limit: 10, defaults: DEFAULTS, rules: RULES, inGrace: true });
      const candidates = [...take, ...defer, ...(((await store.jobsGetReapCandidates({ now: T0, limit: 10, defaults: DEFAULTS, rules: RULES, inGrace: true })).inGrace) ?? [])];
      const writes: ReapWrite[] = candidates.flatMap((candidate) => {
        const decision = decideReap(candidate.id === gone.id ? { ...candidate, ownerCheck: { state: 'gone', detail: 'pod deleted' } } : candidate, T0, RULES);
        return decision.action === 'requeue' || decision.action === 'fail' ? [{ candidate, decision }] : [];
      });
      expect(writes.map((w) => [w.candidate.id, w.decision])).toEqual(
        expect.arrayContaining([
          [pastDeadline.id, expect.objectContaining({ action: 'requeue', held: true, reason: 'deadline_exceeded' })],
          [gone.id, expect.objectContaining({ action: 'requeue', held: true, reason: 'owner_gone' })],
        ]),
      );
      await store.jobsReapIfUnchanged({ now: T0, writes, defaults: DEFAULTS });
      await store.jobRequeueIfReaperWould({ id: forced.id, actor: 'ops', reason: 'node drained', now: T0, force: true, rules: RULES_AND_DEFAULTS });
      for (const job of [pastDeadline, gone, forced]) {
        const held = await row(job.id);
        expect(held).toMatchObject({ status: 'pending', held_at: T0 });
        const [stale] = await fail(job, T0 + 50, { workerId: job.locked_by!, abortedBy: 'lease_lost' });
        expect(stale).toMatchObject({ ok: false, reason: 'lease_lost' });
        expect(await row(job.id)).toEqual(held);
        expect((await events(job.id)).at(-1)).toMatchObject({ type: 'stale_write_rejected', reason: 'fail' });
      }
      expect((await events(gone.id)).find((e) => e.type === 'held')).toMatchObject({ reason: 'lost_attempt_held', message: expect.stringContaining('gone') });
      expect(await claimAll(T0 + 3_600_000)).toEqual([]);
    });

    test('a stalled hold job (heartbeats, no progress) is left with its owner, and held at its deadline', async () => {
      const { store, runningJob, row, events } = t();
      await store.queueUpsertSettings({ queue: 'q', patch: { onLost: 'hold', stallMs: 60_000 }, now: T0 });
      const job = await runningJob({ workerId: 'w1', startedAt: T0 - 120_000, leaseExpiresAt: T0 + 20_000, deadlineAt: T0 + 30_000 });
      expect((await store.jobsListStalled({ now: T0, limit: 10 })).map((s) => s.id)).toEqual([job.id]);
      expect((await reap(T0)).writes).toEqual([]);
      const at = T0 + 30_000;
      await store.jobsHeartbeatIfOwned({ workerId: 'w1', leases: [{ id: job.id, lockToken: job.lock_token }], now: T0 + 25_000 });
      await reap(at);
      expect(await row(job.id)).toMatchObject({ status: 'pending', held_at: at });
      expect((await events(job.id)).at(-1)).toMatchObject({ type: 'held', reason: 'deadline_held', actor: 'reaper' });
    });

    test('completed or failed by hand out of a hold: its due time is when it was held, not the year 275760, and the hold message is no longer its error', async () => {
      const { store, runningJob, row } = t();
      await holdQueue();
      const done = await runningJob({ workerId: 'ghost', leaseExpiresAt: T0 - OVERDUE_A_LOT });
      const dropped = await runningJob({ workerId: 'ghost', leaseExpiresAt: T0 - OVERDUE_A_LOT });
      await reap(T0);
      expect((await row(done.id)).last_error).toContain('held for a person');
      const completed = await store.jobCompleteIfHeld({ id: done.id, actor: 'ops', reason: 'the ledger shows it done', result: 'ok', now: T0 + 60_000 });
      expect(completed).toMatchObject({ ok: true, job: { status: 'completed', available_at: T0, last_error: null } });
      expect(await row(done.id)).toMatchObject({ available_at: T0, last_error: null, held_at: null });
      await store.jobFailIfHeld({ id: dropped.id, actor: 'ops', reason: 'refunded', now: T0 + 60_000 });
      expect(await row(dropped.id)).toMatchObject({ status: 'failed', available_at: T0, last_error: 'failed by hand after a lost attempt: refunded' });
    });
  });
}
