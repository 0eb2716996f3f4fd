/**
 * What the API and dashboard read, and the small state they keep: jobs and
 * their trail, queue health and settings, workers and what they hold,
 * stalled jobs, the metrics snapshot (its largest statement), alert states
 * with their notification leases, and revoked sessions.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import type { Alert } from '../../../src/core/alerts.ts';
import { DEFAULTS, RULES, T0, useBundle, type StoreBackend } from './support.ts';

const alert = (queue: string, state: Alert['state']): Alert => ({
  name: 'heartbeat_lag', queue, state, value: state === 'firing' ? 9_000 : 10, threshold: 5_000, unit: 'ms', message: `lag on ${queue}`, overridden: [],
});

export function defineReads(backend: StoreBackend) {
  describe('reads and small state', () => {
    const t = useBundle(backend);

    test('the database clock is epoch ms, a whole number', async () => {
      const now = await t().store.readNow();
      expect(Number.isInteger(now)).toBe(true);
      expect(now).toBeGreaterThan(Date.UTC(2024, 0, 1));
    });

    test('jobGet, and jobsList: filters, keyset pages both ways, an idempotency key across queues', async () => {
      const { store, pendingJob, runningJob, completedJob } = t();
      const a = await pendingJob();
      const b = await runningJob();
      const c = await completedJob({ queue: 'other', idempotencyKey: 'order-7' });
      expect(await store.jobGet({ id: b.id })).toMatchObject({ id: b.id, status: 'running', locked_by: 'w1' });
      expect(await store.jobGet({ id: 999_999 })).toBeUndefined();
      const first = await store.jobsList({ limit: 2, order: 'desc' });
      expect(first.jobs.map((j) => j.id)).toEqual([c.id, b.id]);
      expect(first.next).toBe(b.id);
      expect((await store.jobsList({ limit: 2, order: 'desc', after: first.next! })).jobs.map((j) => j.id)).toEqual([a.id]);
      expect((await store.jobsList({ limit: 10, order: 'asc', queue: 'q', status: 'running' })).jobs.map((j) => j.id)).toEqual([b.id]);
      expect((await store.jobsList({ limit: 10, order: 'asc', idempotencyKey: 'order-7' })).jobs.map((j) => j.id)).toEqual([c.id]);
    });

    test('jobsList and jobSummariesList: an id, a key within one queue, and each filter with the cursor, combined', async () => {
      const { store, pendingJob, runningJob, completedJob } = t();
      const a = await pendingJob({ queue: 'q', idempotencyKey: 'k' });
      const b = await completedJob({ queue: 'other', idempotencyKey: 'k' });
      const c = await runningJob({ queue: 'q' });
      const ids = async (f: Partial<Parameters<typeof store.jobsList>[0]>) => {
        const p = { limit: 10, order: 'asc' as const, ...f };
        const [full, summaries] = await Promise.all([store.jobsList(p), store.jobSummariesList(p)]);
        expect(summaries.jobs.map((j) => j.id)).toEqual(full.jobs.map((j) => j.id));
        expect(summaries.next).toBe(full.next);
        return full.jobs.map((j) => j.id);
      };
      expect(await ids({ id: c.id })).toEqual([c.id]);
      expect(await ids({ id: c.id, queue: 'other' })).toEqual([]);
      expect(await ids({ idempotencyKey: 'k' })).toEqual([a.id, b.id]);
      expect(await ids({ idempotencyKey: 'k', queue: 'other' })).toEqual([b.id]);
      expect(await ids({ idempotencyKey: 'k', status: 'pending' })).toEqual([a.id]);
      expect(await ids({ queue: 'q', after: a.id })).toEqual([c.id]);
      expect(await ids({ queue: 'q', order: 'desc', after: c.id })).toEqual([a.id]);
      expect(await ids({ status: 'completed', order: 'desc' })).toEqual([b.id]);
      const [summary] = (await store.jobSummariesList({ limit: 1, order: 'asc', id: a.id })).jobs;
      expect(summary).toMatchObject({ id: a.id, queue_name: 'q', status: 'pending', idempotency_key: 'k', result_bytes: null, result_preview: null, progress_bytes: null, checkpoint_bytes: null });
      expect(summary).not.toHaveProperty('payload');
      expect(summary!.payload_bytes).toBe(new TextEncoder().encode(summary!.payload_preview).length);
    });

    test('eventsForJob: the newest `limit`, oldest first, and how many were left out', async () => {
      const { store, runningJob } = t();
      const job = await runningJob();
      for (let i = 0; i < 3; i++) await store.jobsHeartbeatIfOwned({ workerId: 'w1', leases: [{ id: job.id, lockToken: 'stale' }], now: T0 + i });
      const { events, olderNotShown } = await store.eventsForJob({ jobId: job.id, limit: 2 });
      // The derived enqueue takes no place in the window, and no lifecycle event was cut before it.
      expect(events.map((e) => [e.type, e.derived])).toEqual([['enqueued', true], ['stale_write_rejected', false], ['stale_write_rejected', false]]);
      expect(events[1]!.at).toBeLessThan(events[2]!.at);
      expect(olderNotShown).toBe(1);
    });

    test('a clean job stores one event, its claim; its timeline is enqueued -> claimed -> completed', async () => {
      const { store, count } = t();
      const [inserted] = await store.jobsInsert({ queue: 'q', jobs: [{ payload: {} }], actor: 'producer', now: T0, defaults: DEFAULTS });
      const job = inserted!.job;
      const [c] = await store.jobsClaimPending({ queue: 'q', workerId: 'w7', limit: 1, now: T0 + 10, defaults: DEFAULTS });
      expect((await store.jobsCompleteIfOwned({ workerId: 'w7', results: [{ id: job.id, lockToken: c!.lock_token!, data: '1' }], now: T0 + 20 }))[0]).toMatchObject({ ok: true });
      expect(await count('events')).toBe(1);
      const { events, olderNotShown } = await store.eventsForJob({ jobId: job.id, limit: 1000 });
      expect(events.map((e) => [e.type, e.derived, e.at, e.actor, e.worker_id, e.attempt])).toEqual([
        ['enqueued', true, T0, 'producer', null, 0],
        ['claimed', false, T0 + 10, 'w7', 'w7', 1],
        ['completed', true, T0 + 20, 'w7', 'w7', 1],
      ]);
      expect(events.map((e) => e.id === null)).toEqual([true, false, true]);
      expect(olderNotShown).toBe(0);
      // A refusal after the completion stays after it; the window counts stored events only.
      await store.jobsHeartbeatIfOwned({ workerId: 'w7', leases: [{ id: job.id, lockToken: c!.lock_token! }], now: T0 + 30 });
      const later = await store.eventsForJob({ jobId: job.id, limit: 1 });
      expect(later.events.map((e) => e.type)).toEqual(['completed', 'stale_write_rejected']);
      // The claim and the derived enqueue are the two older entries not shown.
      expect(later.olderNotShown).toBe(2);
    });

    test('a database from before drizzle/0015 keeps its stored enqueued and completed events, each shown once', async () => {
      const { store, db, completedJob } = t();
      const job = await completedJob({ finishedAt: T0 + 50 });
      const ev = (type: string, from: string | null, to: string, at: number) =>
        db.run(sql`INSERT INTO events (job_id, queue_name, type, from_status, to_status, actor, worker_id, attempt, at)
          VALUES (${job.id}, ${job.queue_name}, ${type}, ${from}, ${to}, 'old', ${type === 'enqueued' ? null : 'w1'}, ${type === 'enqueued' ? 0 : 1}, ${at})`);
      await ev('enqueued', null, 'pending', T0);
      await ev('claimed', 'pending', 'running', T0 + 10);
      await ev('completed', 'running', 'completed', T0 + 50);
      const { events, olderNotShown } = await store.eventsForJob({ jobId: job.id, limit: 1000 });
      expect(events.map((e) => [e.type, e.derived])).toEqual([['enqueued', false], ['claimed', false], ['completed', false]]);
      expect(olderNotShown).toBe(0);
      // A dedup after the completion (a retained key) does not hide the stored completion.
      await ev('deduplicated', 'completed', 'completed', T0 + 60);
      expect((await store.eventsForJob({ jobId: job.id, limit: 1000 })).events.map((e) => e.type)).toEqual(['enqueued', 'claimed', 'completed', 'deduplicated']);
    });

    test('queuesHealth: counts per status, ready and expired, settings with overrides, paused', async () => {
      const { store, pendingJob, scheduledJob, runningJob, completedJob, failedJob } = t();
      await pendingJob();
      await scheduledJob(60_000);
      await runningJob({ leaseExpiresAt: T0 - 1 });
      await runningJob();
      await completedJob();
      await failedJob();
      await store.queueUpsertSettings({ queue: 'q', patch: { leaseMs: 90_000, paused: true }, now: T0 });
      const [q] = await store.queuesHealth({ now: T0, defaults: DEFAULTS });
      expect(q).toMatchObject({
        name: 'q', paused: true, ready: 1, expiredLeases: 1,
        counts: { pending: 2, running: 2, completed: 1, failed: 1, cancelled: 0 },
        overrides: { leaseMs: 90_000 }, settings: { ...DEFAULTS, leaseMs: 90_000 },
      });
      // null puts a setting back to the default.
      await store.queueUpsertSettings({ queue: 'q', patch: { leaseMs: null }, now: T0 });
      expect((await store.queuesHealth({ now: T0, defaults: DEFAULTS, queue: 'q' }))[0]!.overrides).toEqual({});
    });

    test('queuesHealth: the kept counts equal a COUNT(*) after claims, completions, releases, a delete and time passing', async () => {
      const { store, db, pendingJob, scheduledJob, runningJob, completedJob } = t();
      for (let i = 0; i < 4; i++) await pendingJob();
      await scheduledJob(60_000);
      const held = await runningJob();
      await completedJob();
      const claimed = await store.jobsClaimPending({ queue: 'q', workerId: 'w2', limit: 2, now: T0, defaults: DEFAULTS });
      await store.jobsCompleteIfOwned({ workerId: 'w2', results: [{ id: claimed[0]!.id, lockToken: claimed[0]!.lock_token! }], now: T0 + 1 });
      await store.jobsReleaseIfOwned({ workerId: 'w1', leases: [{ id: held.id, lockToken: held.lock_token! }], reason: 'shutting down', now: T0 + 2 });
      await db.run(sql`DELETE FROM jobs WHERE id = ${claimed[1]!.id}`);
      for (const now of [T0 + 3, T0 + 120_000]) {
        const [q] = await store.queuesHealth({ now, defaults: DEFAULTS, queue: 'q' });
        const [row] = await db.all<{ pending: number; running: number; ready: number; completed: number }>(
          sql`SELECT sum(status = 'pending') AS pending, sum(status = 'running') AS running, sum(status = 'pending' AND available_at <= ${now}) AS ready,
            sum(status = 'completed') AS completed FROM jobs WHERE queue_name = 'q'`,
        );
        expect({ ...q!.counts, ready: q!.ready }).toMatchObject({ pending: Number(row!.pending), running: Number(row!.running ?? 0), ready: Number(row!.ready), completed: Number(row!.completed) });
      }
    });

    test('alert thresholds of a queue: set, read back, cleared', async () => {
      const { store } = t();
      expect(await store.queueAlertThresholds({ queue: 'nope' })).toBeUndefined();
      await store.queueSetAlertThresholds({ queue: 'q', thresholds: { heartbeatLagFactor: 3 }, now: T0 });
      expect(await store.queueAlertThresholds({ queue: 'q' })).toEqual({ name: 'q', alertOverrides: { heartbeatLagFactor: 3 } });
      await store.queueSetAlertThresholds({ queue: 'q', thresholds: {}, now: T0 });
      expect(await store.queueAlertThresholds({ queue: 'q' })).toEqual({ name: 'q', alertOverrides: {} });
    });

    test('workers: beats, the list since a time, and the running jobs each holds', async () => {
      const { store, runningJob } = t();
      await store.workerBeat({ id: 'w1', instanceId: 'i1', host: 'box', pid: 7, queues: ['q'], runningCount: 2, now: T0 - 1_000 });
      await store.workerBeat({ id: 'old', now: T0 - 600_000 });
      await runningJob({ workerId: 'w1' });
      await runningJob({ workerId: 'w1', leaseExpiresAt: T0 - 1 });
      expect(await store.workersList({ sinceMs: T0 - 60_000, limit: 10 })).toMatchObject([{ id: 'w1', host: 'box', pid: 7, queues: '["q"]', running_count: 2, instance_id: 'i1', restarts: 0 }]);
      const held = await store.workersHeldJobs({ workerIds: ['w1', 'old'], now: T0 });
      expect(held.get('w1')).toEqual({ held: 2, expired: 1 });
      expect(held.has('old')).toBe(false);
      // A beat under a new instance is a restart.
      await store.workerBeat({ id: 'w1', instanceId: 'i2', now: T0 });
      expect((await store.workersList({ sinceMs: T0, limit: 10 }))[0]).toMatchObject({ instance_id: 'i2', restarts: 1, started_at: T0 });
    });

    test('stalled jobs: running with a live lease and no progress for longer than the queue\'s stallMs', async () => {
      const { store, runningJob } = t();
      await store.queueUpsertSettings({ queue: 'watched', patch: { stallMs: 60_000 }, now: T0 });
      const stalled = await runningJob({ queue: 'watched', startedAt: T0 - 120_000, leaseExpiresAt: T0 + 10_000 });
      await runningJob({ queue: 'watched', startedAt: T0 - 30_000 });
      await runningJob({ queue: 'q', startedAt: T0 - 120_000, leaseExpiresAt: T0 + 10_000 });
      expect(await store.jobsListStalled({ now: T0, limit: 10 })).toEqual([{ id: stalled.id, queueName: 'watched', lockedBy: 'w1', stalledMs: 120_000, stallMs: 60_000 }]);
    });

    test('the metrics snapshot counts what the store did', async () => {
      const { store, runningJob } = t();
      await store.workerBeat({ id: 'w1', now: T0 });
      await store.jobsInsert({ queue: 'q', jobs: [{ payload: {} }, { payload: {} }], actor: null, now: T0, defaults: DEFAULTS });
      const [c] = await store.jobsClaimPending({ queue: 'q', workerId: 'w1', limit: 1, now: T0, defaults: DEFAULTS });
      await store.jobsCompleteIfOwned({ workerId: 'w1', results: [{ id: c!.id, lockToken: c!.lock_token! }], now: T0 + 1_000 });
      const stale = await runningJob({ workerId: 'w1' });
      await store.jobsHeartbeatIfOwned({ workerId: 'w1', leases: [{ id: stale.id, lockToken: 'old' }], now: T0 + 1_000 });
      const snap = await store.metricsSnapshot({ now: T0 + 2_000, config: { ...DEFAULTS, workerAliveMs: RULES.workerAliveMs } });
      expect(snap.now).toBe(T0 + 2_000);
      expect(snap.workers).toMatchObject({ total: 1, active: 1 });
      const q = snap.queues.find((m) => m.queue === 'q')!;
      expect(q.counts).toMatchObject({ pending: 1, running: 1, completed: 1 });
      expect(q.jobsTotal).toMatchObject({ enqueued: 3, claimed: 1, completed: 1 });
      expect(q.staleWritesRejected).toMatchObject({ total: 1, lastHour: 1, last5m: 1 });
      expect(q.running).toMatchObject({ count: 1, ownerAliveJobs: 1, maxHeartbeatLagMs: 2_000 });
    });

    test('alert states: one evaluation per interval, flips recorded once, notifications held by one caller', async () => {
      const { store } = t();
      expect(await store.alertEvaluationClaimIfDue({ now: T0, everyMs: 60_000 })).toBe(true);
      expect(await store.alertEvaluationClaimIfDue({ now: T0 + 59_999, everyMs: 60_000 })).toBe(false);
      expect(await store.alertEvaluationClaimIfDue({ now: T0 + 60_000, everyMs: 60_000 })).toBe(true);

      expect(await store.alertStatesRecord({ now: T0, alerts: [alert('a', 'firing'), alert('b', 'ok')] })).toMatchObject({ started: [{ queue: 'a', state: 'firing', since: T0 }], cleared: [] });
      expect(await store.alertStatesRecord({ now: T0 + 1, alerts: [alert('a', 'firing')] })).toEqual({ started: [], cleared: [] });
      // 'a' no longer evaluated: cleared.
      expect(await store.alertStatesRecord({ now: T0 + 2, alerts: [] })).toMatchObject({ cleared: [{ queue: 'a', state: 'ok', message: 'no longer evaluated' }] });
      expect((await store.alertStatesList()).map((r) => [r.queue, r.state])).toEqual([['a', 'ok'], ['b', 'ok']]);

      await store.alertStatesRecord({ now: T0 + 3, alerts: [alert('c', 'firing')] });
      const [held] = await store.alertNotificationsClaimDue({ now: T0 + 3, leaseMs: 10_000, limit: 10 });
      expect(held).toMatchObject({ queue: 'c', state: 'firing', leaseUntil: T0 + 10_003 });
      // Another reaper finds nothing owed while the lease holds.
      expect(await store.alertNotificationsClaimDue({ now: T0 + 4, leaseMs: 10_000, limit: 10 })).toEqual([]);
      expect(await store.alertNotificationMarkFailedIfHeld({ queue: 'c', name: held!.name, leaseUntil: held!.leaseUntil, error: 'HTTP 500', retryAt: T0 + 5 })).toBe(true);
      const [again] = await store.alertNotificationsClaimDue({ now: T0 + 5, leaseMs: 10_000, limit: 10 });
      expect(again).toMatchObject({ queue: 'c', attempts: 1 });
      expect(await store.alertNotificationMarkDeliveredIfHeld({ queue: 'c', name: again!.name, leaseUntil: held!.leaseUntil, sent: 'firing' })).toBe(false);
      expect(await store.alertNotificationMarkDeliveredIfHeld({ queue: 'c', name: again!.name, leaseUntil: again!.leaseUntil, sent: 'firing' })).toBe(true);
      expect(await store.alertNotificationsClaimDue({ now: T0 + 100_000, leaseMs: 10_000, limit: 10 })).toEqual([]);
    });

    test('sessions: a revoked id stays revoked until it would have expired', async () => {
      const { store } = t();
      await store.sessionRevoke({ sid: 's1', expiresAt: T0 + 1_000, now: T0 });
      expect(await store.sessionIsRevoked({ sid: 's1' })).toBe(true);
      expect(await store.sessionIsRevoked({ sid: 's2' })).toBe(false);
      await store.sessionRevoke({ sid: 's2', expiresAt: T0 + 10_000, now: T0 + 2_000 });
      expect(await store.sessionIsRevoked({ sid: 's1' })).toBe(false);
    });
  });
}
