/**
 * The reaper's reads and writes: which running jobs are candidates (past
 * lease + grace, or past the deadline), which it takes and which it defers
 * (owner seen recently, up to maxReapDeferMs), what each take writes, and
 * that a heartbeat landing between the read and the write wins. Then
 * retention pruning and the pass's housekeeping.
 */
import { describe, expect, test } from 'vitest';
import { decideReap, type ReapRules } from '../../../src/core/reaper.ts';
import type { JobStore, ReapCandidateRow, ReapWrite } from '../../../src/db/store/port.ts';
import { DEFAULTS, RULES, T0, useBundle, type StoreBackend } from './support.ts';

/** Lease expired this long ago: past the grace, inside the deferral window. */
const OVERDUE_A_LITTLE = DEFAULTS.graceMs + 1_000;
/** Past the grace and past the longest deferral. */
const OVERDUE_A_LOT = DEFAULTS.graceMs + RULES.maxReapDeferMs + 1_000;

/** The reaper's decision on one candidate, as a write (a test that calls this expects an action). */
function decided(candidate: ReapCandidateRow, now: number): ReapWrite {
  const decision = decideReap(candidate, now, RULES);
  if (decision.action === 'none') throw new Error(`expected the reaper to act on job ${candidate.id}: ${decision.why}`);
  return { candidate, decision };
}

/** Read the candidates, decide each with the reaper's own rule, write the decisions, as runMaintenancePass does. */
async function reap(store: JobStore, now: number, rules: ReapRules = RULES, limit = 100) {
  const candidates = await store.jobsGetReapCandidates({ now, limit, defaults: DEFAULTS, rules });
  const writes: ReapWrite[] = [];
  for (const candidate of [...candidates.take, ...candidates.defer]) {
    const decision = decideReap(candidate, now, rules);
    if (decision.action !== 'none') writes.push({ candidate, decision });
  }
  const taken = await store.jobsReapIfUnchanged({ now, writes, defaults: DEFAULTS });
  return { candidates, writes, taken, actions: Object.fromEntries(writes.map((w) => [w.candidate.id, w.decision.action])) };
}


/** Retention with nothing but finished jobs due: workers and audit entries are kept far longer than any test's clock moves. */
const pruneJobs = (store: JobStore, limit: number) =>
  store.retentionPrune({ now: T0, limit, defaults: DEFAULTS, forgetWorkersAfterMs: 365 * 86_400_000, auditRetentionMs: 365 * 86_400_000 });

export function defineReaper(backend: StoreBackend) {
  describe('the reaper', () => {
    const t = useBundle(backend);

    test('a live lease, and a lease expired but inside its grace, are not candidates', async () => {
      const { store, runningJob } = t();
      await runningJob({ leaseExpiresAt: T0 + 1 });
      await runningJob({ leaseExpiresAt: T0 - DEFAULTS.graceMs });
      expect(await store.jobsGetReapCandidates({ now: T0, limit: 10, defaults: DEFAULTS, rules: RULES })).toEqual({ take: [], defer: [] });
    });

    test('with inGrace (the owner check), expired leases inside their grace are read too, with the owner process the database knows', async () => {
      const { store, runningJob } = t();
      await store.workerBeat({ id: 'w1', instanceId: 'i1', host: 'node-a', pid: 4242, now: T0 - 1_000 });
      const inGrace = await runningJob({ leaseExpiresAt: T0 - 1, workerId: 'w1', instanceId: 'i1' });
      const otherInstance = await runningJob({ leaseExpiresAt: T0 - 2, workerId: 'w1', instanceId: 'i0' });
      await runningJob({ leaseExpiresAt: T0 + 1, workerId: 'w1', instanceId: 'i1' });
      await runningJob({ leaseExpiresAt: T0 - 1, deadlineAt: T0, workerId: 'w1', instanceId: 'i1' });
      const read = await store.jobsGetReapCandidates({ now: T0, limit: 10, defaults: DEFAULTS, rules: RULES, inGrace: true });
      expect(read.take.map((c) => c.id)).toEqual([expect.any(Number)]);
      expect(read.defer).toEqual([]);
      // Oldest expiry first; the live lease and the passed deadline (a take) are not in the list.
      expect(read.inGrace).toMatchObject([
        { id: otherInstance.id, lockedBy: 'w1', lockedByInstance: 'i0', ownerHost: null, ownerPid: null },
        { id: inGrace.id, lockedBy: 'w1', lockedByInstance: 'i1', ownerHost: 'node-a', ownerPid: 4242 },
      ]);
      expect((await store.jobsGetReapCandidates({ now: T0, limit: 10, defaults: DEFAULTS, rules: RULES })).inGrace).toBeUndefined();
    });

    test('past lease + grace with an unknown owner: taken back to pending, a lost attempt, after the backoff', async () => {
      const { store, runningJob, row, events } = t();
      const job = await runningJob({ leaseExpiresAt: T0 - OVERDUE_A_LITTLE, workerId: 'ghost' });
      const { candidates, actions, taken } = await reap(store, T0);
      expect(candidates.take).toMatchObject([{ id: job.id, lockedBy: 'ghost', ownerLastSeenAt: null, graceMs: DEFAULTS.graceMs }]);
      expect(actions[job.id]).toBe('requeue');
      expect([...taken]).toEqual([job.id]);
      const after = await row(job.id);
      expect(after).toMatchObject({ status: 'pending', lost_attempts: 1, errored_attempts: 0, attempt_count: 1, lock_token: null, locked_by: null, lease_expires_at: null });
      expect(after.available_at - T0).toBeGreaterThanOrEqual(DEFAULTS.backoffBaseMs / 2);
      expect(after.available_at - T0).toBeLessThanOrEqual(DEFAULTS.backoffBaseMs);
      expect((await events(job.id)).at(-1)).toMatchObject({ type: 'reaped', reason: 'reaped_due_to_expired_lease', actor: 'reaper', from_status: 'running', to_status: 'pending' });
    });

    test('an owner seen recently defers the take (an event, one more deferral, nothing else), until maxReapDeferMs past the grace', async () => {
      const { store, runningJob, row, events } = t();
      await store.workerBeat({ id: 'w1', now: T0 - 1_000 });
      const late = await runningJob({ leaseExpiresAt: T0 - OVERDUE_A_LITTLE });
      const later = await runningJob({ leaseExpiresAt: T0 - OVERDUE_A_LOT });
      const { candidates, actions, taken } = await reap(store, T0);
      expect(candidates.defer.map((c) => c.id)).toEqual([late.id]);
      expect(candidates.take.map((c) => c.id)).toEqual([later.id]);
      expect(actions).toEqual({ [late.id]: 'defer', [later.id]: 'requeue' });
      expect([...taken]).toEqual([later.id]);
      expect(await row(late.id)).toMatchObject({ status: 'running', reaper_deferrals: 1, locked_by: 'w1' });
      expect((await events(late.id)).at(-1)).toMatchObject({ type: 'reap_deferred', reason: 'owner_alive', actor: 'reaper', worker_id: 'w1', message: expect.stringContaining('lease overdue by 1000 ms past grace') });
    });

    test('an owner last seen longer ago than workerAliveMs does not defer', async () => {
      const { store, runningJob } = t();
      await store.workerBeat({ id: 'w1', now: T0 - RULES.workerAliveMs - 1 });
      const job = await runningJob({ leaseExpiresAt: T0 - OVERDUE_A_LITTLE });
      const { actions } = await reap(store, T0);
      expect(actions).toEqual({ [job.id]: 'requeue' });
    });

    test('a worker id restarted under a new instance does not keep its predecessor\'s claims alive', async () => {
      const { store, runningJob } = t();
      await store.workerBeat({ id: 'w1', instanceId: 'old', now: T0 - 60_000 });
      const orphan = await runningJob({ workerId: 'w1', instanceId: 'old', leaseExpiresAt: T0 - OVERDUE_A_LITTLE });
      const own = await runningJob({ workerId: 'w1', instanceId: 'new', leaseExpiresAt: T0 - OVERDUE_A_LITTLE });
      await store.workerBeat({ id: 'w1', instanceId: 'new', now: T0 - 1_000 });
      const { actions } = await reap(store, T0);
      expect(actions).toEqual({ [orphan.id]: 'requeue', [own.id]: 'defer' });
    });

    test('past its deadline a job is taken even while it heartbeats: an errored attempt, or failed on the last one', async () => {
      const { store, runningJob, row, events } = t();
      await store.workerBeat({ id: 'w1', now: T0 });
      const retry = await runningJob({ attempt: 1, startedAt: T0 - 60_000, deadlineAt: T0, leaseExpiresAt: T0 + 20_000 });
      const last = await runningJob({ attempt: 3, maxAttempts: 3, startedAt: T0 - 60_000, deadlineAt: T0 - 1, leaseExpiresAt: T0 + 20_000 });
      const { actions, taken } = await reap(store, T0);
      expect(actions).toEqual({ [retry.id]: 'requeue', [last.id]: 'fail' });
      expect(taken.size).toBe(2);
      expect(await row(retry.id)).toMatchObject({ status: 'pending', errored_attempts: 1, lost_attempts: 0 });
      expect(await row(last.id)).toMatchObject({ status: 'failed', failed_at: T0, finished_at: T0, last_error: expect.stringContaining('deadline_exceeded') });
      expect((await events(retry.id)).at(-1)).toMatchObject({ type: 'reaped', reason: 'deadline_exceeded' });
    });

    test('a job that lost its worker too many times, or on its last attempt, fails for good', async () => {
      const { store, runningJob, row, events } = t();
      const crashLoop = await runningJob({ lostAttempts: DEFAULTS.maxLostAttempts - 1, attempt: 1, leaseExpiresAt: T0 - OVERDUE_A_LITTLE });
      const spent = await runningJob({ attempt: 3, maxAttempts: 3, leaseExpiresAt: T0 - OVERDUE_A_LITTLE });
      await reap(store, T0);
      expect(await row(crashLoop.id)).toMatchObject({ status: 'failed', lost_attempts: DEFAULTS.maxLostAttempts });
      expect((await events(crashLoop.id)).at(-1)).toMatchObject({ type: 'reaped', reason: 'lost_too_many_times', to_status: 'failed' });
      expect(await row(spent.id)).toMatchObject({ status: 'failed', lost_attempts: 1 });
      expect((await events(spent.id)).at(-1)).toMatchObject({ type: 'reaped', reason: 'attempts_exhausted' });
    });

    test('a queue\'s own grace is honoured', async () => {
      const { store, runningJob } = t();
      await store.queueUpsertSettings({ queue: 'patient', patch: { graceMs: 60_000 }, now: T0 });
      await runningJob({ queue: 'patient', leaseExpiresAt: T0 - OVERDUE_A_LOT });
      const hasty = await runningJob({ queue: 'q', leaseExpiresAt: T0 - OVERDUE_A_LOT });
      const { candidates } = await store.jobsGetReapCandidates({ now: T0, limit: 10, defaults: DEFAULTS, rules: RULES }).then((c) => ({ candidates: c }));
      expect(candidates.take.map((c) => c.id)).toEqual([hasty.id]);
    });

    test('a heartbeat that lands between the read and the write wins: the job stays with its owner', async () => {
      const { store, runningJob, row, events } = t();
      const job = await runningJob({ leaseExpiresAt: T0 - OVERDUE_A_LOT });
      const { take } = await store.jobsGetReapCandidates({ now: T0, limit: 10, defaults: DEFAULTS, rules: RULES });
      const write = decided(take[0]!, T0);
      expect(write.decision.action).toBe('requeue');
      const [hb] = await store.jobsHeartbeatIfOwned({ workerId: 'w1', leases: [{ id: job.id, lockToken: job.lock_token }], now: T0 });
      expect(hb!.ok).toBe(true);
      const taken = await store.jobsReapIfUnchanged({ now: T0, writes: [write], defaults: DEFAULTS });
      expect(taken.size).toBe(0);
      expect(await row(job.id)).toMatchObject({ status: 'running', locked_by: 'w1', lock_token: job.lock_token, lease_expires_at: T0 + DEFAULTS.leaseMs });
      expect((await events(job.id)).map((e) => e.type)).not.toContain('reaped');
    });

    test('a deferral whose job changed since the read writes nothing', async () => {
      const { store, runningJob, row, events } = t();
      await store.workerBeat({ id: 'w1', now: T0 });
      const job = await runningJob({ leaseExpiresAt: T0 - OVERDUE_A_LITTLE });
      const { defer } = await store.jobsGetReapCandidates({ now: T0, limit: 10, defaults: DEFAULTS, rules: RULES });
      await store.jobsHeartbeatIfOwned({ workerId: 'w1', leases: [{ id: job.id, lockToken: job.lock_token }], now: T0 });
      await store.jobsReapIfUnchanged({ now: T0, writes: [decided(defer[0]!, T0)], defaults: DEFAULTS });
      expect((await row(job.id)).reaper_deferrals).toBe(0);
      expect((await events(job.id)).map((e) => e.type)).not.toContain('reap_deferred');
    });

    test('two reapers acting on the same read take each job back once', async () => {
      const { store, runningJob, events } = t();
      const a = await runningJob({ leaseExpiresAt: T0 - OVERDUE_A_LOT });
      const b = await runningJob({ leaseExpiresAt: T0 - OVERDUE_A_LOT });
      const { take } = await store.jobsGetReapCandidates({ now: T0, limit: 10, defaults: DEFAULTS, rules: RULES });
      const writes = take.map((candidate) => decided(candidate, T0));
      const [one, two] = await Promise.all([
        store.jobsReapIfUnchanged({ now: T0, writes, defaults: DEFAULTS }),
        store.jobsReapIfUnchanged({ now: T0, writes, defaults: DEFAULTS }),
      ]);
      expect([...one, ...two].sort((x, y) => x - y)).toEqual([a.id, b.id]);
      for (const id of [a.id, b.id]) expect((await events(id)).filter((e) => e.type === 'reaped')).toHaveLength(1);
    });

    test('candidates come oldest expiry first, at most `limit` to take; deferrals are listed apart and use no slot', async () => {
      const { store, runningJob } = t();
      await store.workerBeat({ id: 'alive', now: T0 });
      const oldest = await runningJob({ workerId: 'dead', leaseExpiresAt: T0 - OVERDUE_A_LOT - 3_000 });
      const middle = await runningJob({ workerId: 'dead', leaseExpiresAt: T0 - OVERDUE_A_LOT - 2_000 });
      await runningJob({ workerId: 'dead', leaseExpiresAt: T0 - OVERDUE_A_LOT - 1_000 });
      const deferred = await runningJob({ workerId: 'alive', leaseExpiresAt: T0 - OVERDUE_A_LITTLE - 10_000 });
      const { take, defer } = await store.jobsGetReapCandidates({ now: T0, limit: 2, defaults: DEFAULTS, rules: RULES });
      expect(take.map((c) => c.id)).toEqual([oldest.id, middle.id]);
      expect(defer.map((c) => c.id)).toEqual([deferred.id]);
    });

    test('held after a gap: a reap_held event under the guard read, and nothing else changes', async () => {
      const { store, runningJob, row, events } = t();
      const job = await runningJob({ leaseExpiresAt: T0 - OVERDUE_A_LOT });
      const before = await row(job.id);
      const { take } = await store.jobsGetReapCandidates({ now: T0, limit: 10, defaults: DEFAULTS, rules: RULES });
      await store.jobsRecordHeld({ now: T0, candidates: take, why: 'the server was paused for 90 s' });
      expect(await row(job.id)).toEqual(before);
      expect((await events(job.id)).at(-1)).toMatchObject({ type: 'reap_held', reason: 'server_gap', message: 'the server was paused for 90 s', from_status: 'running', to_status: 'running' });
      // A hold read before a heartbeat records nothing.
      await store.jobsHeartbeatIfOwned({ workerId: 'w1', leases: [{ id: job.id, lockToken: job.lock_token }], now: T0 });
      const count = (await events(job.id)).length;
      await store.jobsRecordHeld({ now: T0, candidates: take, why: 'again' });
      expect(await events(job.id)).toHaveLength(count);
    });

    test('the operator\'s requeue follows the reaper: refused while it would wait, done once it would take; force takes any running job', async () => {
      const { store, runningJob, row, events } = t();
      const rules = { ...DEFAULTS, ...RULES };
      await store.workerBeat({ id: 'w1', now: T0 });
      const live = await runningJob();
      const refused = await store.jobRequeueIfReaperWould({ id: live.id, actor: 'admin', reason: null, now: T0, force: false, rules });
      expect(refused).toMatchObject({ ok: false, reason: 'reaper_would_wait', status: 'running', takesAt: T0 + DEFAULTS.leaseMs + DEFAULTS.graceMs + 1 });
      expect((await row(live.id)).status).toBe('running');

      const gone = await runningJob({ workerId: 'ghost', leaseExpiresAt: T0 - OVERDUE_A_LITTLE });
      expect(await store.jobRequeueIfReaperWould({ id: gone.id, actor: 'admin', reason: 'stuck', now: T0, force: false, rules })).toMatchObject({ ok: true, job: { status: 'pending', available_at: T0, lost_attempts: 1 } });
      expect((await events(gone.id)).at(-1)).toMatchObject({ type: 'requeued_by_operator', reason: 'stuck', actor: 'admin' });

      expect(await store.jobRequeueIfReaperWould({ id: live.id, actor: 'admin', reason: 'deploy', now: T0, force: true, rules })).toMatchObject({ ok: true, job: { status: 'pending' } });
      expect((await events(live.id)).at(-1)).toMatchObject({ type: 'force_requeued_by_operator', reason: 'deploy' });
      expect(await store.jobRequeueIfReaperWould({ id: live.id, actor: 'admin', reason: null, now: T0, force: false, rules })).toEqual({ ok: false, reason: 'conflict', status: 'pending' });
      expect(await store.jobRequeueIfReaperWould({ id: 987_654, actor: 'admin', reason: null, now: T0, force: false, rules })).toEqual({ ok: false, reason: 'not_found' });
    });
  });

  describe('pruning', () => {
    const t = useBundle(backend);
    const DAY = 24 * 3_600_000;

    test('finished jobs past retention go with their events and effects; newer and unfinished jobs stay', async () => {
      const { store, clock, runningJob, completedJob, failedJob, cancelledJob, pendingJob, count, events } = t();
      // A completed job with an effect, finished two days ago.
      clock.set(T0 - 2 * DAY);
      const old = await runningJob();
      await store.effectStartIfOwned({ jobId: old.id, key: 'k', lockToken: old.lock_token, workerId: 'w1', now: clock.now() });
      await store.jobsCompleteIfOwned({ workerId: 'w1', results: [{ id: old.id, lockToken: old.lock_token }], now: clock.now() });
      const oldFailed = await failedJob();
      const oldCancelled = await cancelledJob();
      const oldPending = await pendingJob();
      clock.set(T0);
      const fresh = await completedJob({ finishedAt: T0 - DAY + 1 });
      expect(await count('effects')).toBe(1);

      const pruned = await pruneJobs(store, 100);
      expect(pruned.sort((a, b) => a - b)).toEqual([old.id, oldFailed.id, oldCancelled.id]);
      expect(await count('effects')).toBe(0);
      expect(await events(old.id)).toEqual([]);
      expect(await count('jobs')).toBe(2);
      expect((await store.jobGet({ id: fresh.id }))?.status).toBe('completed');
      expect((await store.jobGet({ id: oldPending.id }))?.status).toBe('pending');
    });

    test('a queue\'s own retention is honoured, and at most `limit` go, oldest first', async () => {
      const { store, completedJob } = t();
      await store.queueUpsertSettings({ queue: 'short', patch: { retentionMs: 60_000 }, now: T0 });
      const a = await completedJob({ queue: 'short', finishedAt: T0 - 120_000 });
      const b = await completedJob({ queue: 'short', finishedAt: T0 - 110_000 });
      await completedJob({ queue: 'q', finishedAt: T0 - 120_000 });
      expect(await pruneJobs(store, 1)).toEqual([a.id]);
      expect(await pruneJobs(store, 10)).toEqual([b.id]);
      expect(await pruneJobs(store, 10)).toEqual([]);
    });

    test('retention prunes and forgets workers not seen for long in one batch; the heartbeat lag of this minute is sampled', async () => {
      const { store, runningJob, completedJob, count } = t();
      await store.workerBeat({ id: 'gone', now: T0 - 3 * 3_600_000 });
      await store.workerBeat({ id: 'here', now: T0 - 1_000 });
      await completedJob({ finishedAt: T0 - 2 * DEFAULTS.retentionMs });
      await runningJob({ queue: 'busy', lastHeartbeatAt: T0 - 4_000, startedAt: T0 - 10_000 });
      const pruned = await store.retentionPrune({ now: T0, limit: 100, defaults: DEFAULTS, forgetWorkersAfterMs: 3_600_000, auditRetentionMs: 90 * 86_400_000 });
      await store.queueMinutesSampleHeartbeatLag({ now: T0 });
      expect(pruned).toHaveLength(1);
      expect((await store.workersList({ sinceMs: 0, limit: 10 })).map((w) => w.id)).toEqual(['here']);
      expect(await store.queueMinutesSince({ sinceMinuteAt: T0 - 60_000 })).toContainEqual(expect.objectContaining({ queue: 'busy', minuteAt: T0, maxHeartbeatLagMs: 4_000 }));
      expect(await count('jobs')).toBe(1);
    });
  });
}
