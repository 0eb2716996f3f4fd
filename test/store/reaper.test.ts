/**
 * The reaper (docs/guarantees.md, "The reaper is conservative"): conservative (grace, owner-alive deferral
 * with a hard limit), bounded (batch size), requeue with backoff or final
 * failure (attempts and lost attempts counted apart), deadlines, the race with
 * a heartbeat, pruning, and per-queue settings.
 */
import { afterEach, describe, expect, test } from 'vitest';
import type { Config } from '../../src/core/config.ts';
import { backoffRangeMs } from '../../src/core/backoff.ts';
import { decideReap } from '../../src/core/reaper.ts';
import { runMaintenancePass } from '../../src/maintenance/pass.ts';
import { jobsGetReapCandidates, jobsReapIfUnchanged } from '../../src/db/store/reaper.ts';
import { setup, type TestBed } from '../support/helpers.ts';
import type { ReapWrite } from '../../src/db/store/port.ts';

let t: TestBed;
async function bed(overrides: Partial<Config> = {}) {
  t = await setup(overrides);
  return t;
}
afterEach(() => t?.close());

const api = '/api/v1';
const ms = (iso: string | null | undefined) => (iso == null ? NaN : Date.parse(iso));

async function job(id: string) {
  const res = await t.get(`${api}/jobs/${id}`);
  expect(res.status).toBe(200);
  return res.json.job as Record<string, any>;
}

async function reap() {
  const res = await t.post(`${api}/reaper/run`);
  expect(res.status).toBe(200);
  return res.json as { requeued: { id: string; reason: string }[]; failed: { id: string; reason: string }[]; deferred: { id: string; overdueMs: number }[]; raced: number; pruned: number };
}

async function count(sqlText: string) {
  const res = await t.client.execute(sqlText);
  return Number(res.rows[0]!.n);
}

describe('grace', () => {
  test('not reaped up to expiry + grace, reaped just after (owner long gone)', async () => {
    await bed({ workerAliveMs: 5000 });
    const e = await t.enqueue('q');
    const [c] = await t.claim('q', 'A');
    const expiry = ms(c!.leaseExpiresAt);
    t.clock.set(expiry + 10_000 - 1);
    expect(await reap()).toMatchObject({ requeued: [], failed: [], deferred: [] });
    t.clock.set(expiry + 10_000);
    expect(await reap()).toMatchObject({ requeued: [], failed: [], deferred: [] });
    expect((await job(e.id)).status).toBe('running');
    t.clock.set(expiry + 10_000 + 1);
    const r = await reap();
    expect(r.requeued).toEqual([{ id: e.id, reason: 'reaped_due_to_expired_lease' }]);
    const after = await job(e.id);
    expect(after).toMatchObject({ status: 'pending', lostAttempts: 1, erroredAttempts: 0, attempt: 1, lockedBy: null });
    expect(after.lastError).toContain('A');
    const events = await t.events(e.id);
    expect(events.at(-1)).toMatchObject({ type: 'reaped', reason: 'reaped_due_to_expired_lease', from: 'running', to: 'pending', workerId: 'A' });
    expect(t.errors).toEqual([]);
  });

  test('a heartbeating job is never reaped', async () => {
    await bed();
    const e = await t.enqueue('q');
    const [c] = await t.claim('q', 'A');
    for (let i = 0; i < 30; i++) {
      t.clock.advance(5000);
      expect((await t.post(`${api}/jobs/${e.id}/heartbeat`, { workerId: 'A', lockToken: c!.lockToken })).status).toBe(200);
      expect(await reap()).toMatchObject({ requeued: [], failed: [], deferred: [] });
    }
    expect((await job(e.id)).status).toBe('running');
  });
});

describe('owner-alive deferral', () => {
  test('deferred while the owner beats, up to maxReapDeferMs, then taken anyway', async () => {
    await bed();
    const e = await t.enqueue('q');
    const [c] = await t.claim('q', 'A');
    const expiry = ms(c!.leaseExpiresAt);
    const beat = async () => expect((await t.post(`${api}/workers/beat`, { workerId: 'A' })).status).toBe(200);

    t.clock.set(expiry + 10_000 + 1);
    await beat();
    let r = await reap();
    expect(r.deferred).toEqual([{ id: e.id, reason: 'owner_alive', overdueMs: 1 }]);
    expect(r.requeued).toEqual([]);
    expect((await job(e.id)).status).toBe('running');
    let events = await t.events(e.id);
    expect(events.at(-1)).toMatchObject({ type: 'reap_deferred', reason: 'owner_alive', workerId: 'A', from: 'running', to: 'running' });

    // Overdue by maxReapDeferMs - 1: still deferred.
    t.clock.set(expiry + 10_000 + 30_000 - 1);
    await beat();
    r = await reap();
    expect(r.deferred.map((d) => d.id)).toEqual([e.id]);
    expect((await job(e.id)).status).toBe('running');

    // The hard limit: taken back although the owner still beats.
    t.clock.set(expiry + 10_000 + 30_000);
    await beat();
    r = await reap();
    expect(r.deferred).toEqual([]);
    expect(r.requeued).toEqual([{ id: e.id, reason: 'reaped_due_to_expired_lease' }]);
    events = await t.events(e.id);
    expect(events.filter((x) => x.type === 'reap_deferred')).toHaveLength(2);
    expect((await t.get('/metrics')).text).toMatch(/^leasehold_reap_deferred_total\{queue="q"\} 2$/m);
    expect(t.errors).toEqual([]);
  });

  test('an owner not seen within workerAliveMs is not waited for', async () => {
    await bed();
    const e = await t.enqueue('q');
    const [c] = await t.claim('q', 'A');
    const expiry = ms(c!.leaseExpiresAt);
    // Claimed at expiry - lease; at expiry + grace + 1 that is 40001 ms ago > workerAliveMs.
    t.clock.set(expiry + 10_000 + 1);
    const r = await reap();
    expect(r.deferred).toEqual([]);
    expect(r.requeued.map((x) => x.id)).toEqual([e.id]);
  });

  test('a small maxReapDeferMs takes the job even while its owner beats', async () => {
    await bed({ maxReapDeferMs: 1 });
    const e = await t.enqueue('q');
    const [c] = await t.claim('q', 'A');
    t.clock.set(ms(c!.leaseExpiresAt) + 10_001);
    await t.post(`${api}/workers/beat`, { workerId: 'A' });
    expect((await reap()).requeued.map((x) => x.id)).toEqual([e.id]);
  });
});

describe('requeue and failure', () => {
  test('the requeue backoff falls in [ceiling/2, ceiling] and grows with attempts', async () => {
    await bed({ workerAliveMs: 5000, maxLostAttempts: 100, maxAttempts: 100 });
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push((await t.enqueue('q', { payload: i })).id);
    for (let attempt = 1; attempt <= 3; attempt++) {
      const claimed = await t.claim('q', 'A', { limit: 100 });
      expect(claimed).toHaveLength(12);
      expect(claimed.every((c) => c.attempt === attempt)).toBe(true);
      t.clock.advance(30_000 + 10_000 + 1);
      const now = t.clock.now();
      const r = await reap();
      expect(r.requeued).toHaveLength(12);
      const [lo, hi] = backoffRangeMs(attempt, { baseMs: 1000, maxMs: 600_000 });
      for (const id of ids) {
        const delay = ms((await job(id)).availableAt) - now;
        expect(delay).toBeGreaterThanOrEqual(lo);
        expect(delay).toBeLessThanOrEqual(hi);
      }
      t.clock.advance(lo - 1);
      expect(await t.claim('q', 'A')).toEqual([]);
      t.clock.advance(hi - lo + 1);
    }
    expect(t.errors).toEqual([]);
  });

  test('a lease lost on the last attempt fails the job: attempts_exhausted', async () => {
    await bed({ workerAliveMs: 5000 });
    const e = await t.enqueue('q', { payload: 1, maxAttempts: 1 });
    await t.claim('q', 'A');
    t.clock.advance(40_001);
    const r = await reap();
    expect(r.failed).toEqual([{ id: e.id, reason: 'attempts_exhausted' }]);
    const after = await job(e.id);
    expect(after).toMatchObject({ status: 'failed', lostAttempts: 1, lockedBy: null });
    expect(ms(after.failedAt)).toBe(t.clock.now());
    expect((await t.events(e.id)).at(-1)).toMatchObject({ type: 'reaped', reason: 'attempts_exhausted', to: 'failed' });
    expect(t.errors).toEqual([]);
  });

  test('maxLostAttempts losses fail the job although attempts remain: lost_too_many_times', async () => {
    await bed({ workerAliveMs: 5000 });
    const e = await t.enqueue('q', { payload: 1, maxAttempts: 50 });
    for (let loss = 1; loss <= 3; loss++) {
      const [c] = await t.claim('q', `W${loss}`);
      expect(c).toMatchObject({ id: e.id, attempt: loss });
      t.clock.advance(40_001);
      const r = await reap();
      if (loss < 3) {
        expect(r.requeued).toEqual([{ id: e.id, reason: 'reaped_due_to_expired_lease' }]);
        t.clock.set(ms((await job(e.id)).availableAt));
      } else {
        expect(r.failed).toEqual([{ id: e.id, reason: 'lost_too_many_times' }]);
      }
    }
    expect(await job(e.id)).toMatchObject({ status: 'failed', lostAttempts: 3, attempt: 3 });
    expect((await t.get('/metrics')).text).toMatch(/^leasehold_jobs_reaped_total\{queue="q",reason="lost_too_many_times"\} 1$/m);
    expect(t.errors).toEqual([]);
  });

  test('errored attempts do not count as lost ones', async () => {
    await bed({ workerAliveMs: 5000 });
    const e = await t.enqueue('q', { payload: 1, maxAttempts: 10 });
    for (let i = 0; i < 3; i++) {
      const [c] = await t.claim('q', 'A');
      await t.post(`${api}/jobs/${e.id}/fail`, { workerId: 'A', lockToken: c!.lockToken, error: 'x', retryAfterMs: 0 });
    }
    await t.claim('q', 'A');
    t.clock.advance(40_001);
    const r = await reap();
    expect(r.requeued).toEqual([{ id: e.id, reason: 'reaped_due_to_expired_lease' }]);
    expect(await job(e.id)).toMatchObject({ status: 'pending', lostAttempts: 1, erroredAttempts: 3 });
  });
});

describe('deadline', () => {
  test('a job past its deadline is taken back although it heartbeats (an errored attempt)', async () => {
    await bed();
    const e = await t.enqueue('q', { payload: 1, timeoutMs: 60_000 });
    const [c] = await t.claim('q', 'A');
    expect(ms(c!.deadlineAt)).toBe(t.clock.now() + 60_000);
    for (let i = 0; i < 11; i++) {
      t.clock.advance(5000);
      const hb = await t.post(`${api}/jobs/${e.id}/heartbeat`, { workerId: 'A', lockToken: c!.lockToken });
      expect(hb.status).toBe(200);
      expect(ms(hb.json.deadlineAt)).toBe(ms(c!.deadlineAt));
      expect((await reap()).requeued).toEqual([]);
    }
    t.clock.advance(5000); // now == deadline: the attempt's time is up, a heartbeat no longer keeps it
    const late = await t.post(`${api}/jobs/${e.id}/heartbeat`, { workerId: 'A', lockToken: c!.lockToken });
    expect(late.status).toBe(409);
    expect(late.json.error).toMatchObject({ code: 'lease_lost', cause: 'deadline_exceeded', status: 'running' });
    const r = await reap();
    expect(r.deferred).toEqual([]);
    expect(r.requeued).toEqual([{ id: e.id, reason: 'deadline_exceeded' }]);
    expect(await job(e.id)).toMatchObject({ status: 'pending', erroredAttempts: 1, lostAttempts: 0 });
    expect((await t.events(e.id)).at(-1)).toMatchObject({ type: 'reaped', reason: 'deadline_exceeded', message: 'deadline_exceeded: ran 60.0 s, timeout 1 min' });
    // The worker learns it lost the job at its next write, and why.
    const after = await t.post(`${api}/jobs/${e.id}/heartbeat`, { workerId: 'A', lockToken: c!.lockToken });
    expect(after.status).toBe(409);
    expect(after.json.error).toMatchObject({ code: 'lease_lost', cause: 'deadline_exceeded', status: 'pending' });
    expect(t.errors).toEqual([]);
  });

  test('past its deadline on the last attempt, the job fails: deadline_exceeded', async () => {
    await bed();
    const e = await t.enqueue('q', { payload: 1, timeoutMs: 10_000, maxAttempts: 1 });
    await t.claim('q', 'A');
    t.clock.advance(10_000);
    const r = await reap();
    expect(r.failed).toEqual([{ id: e.id, reason: 'deadline_exceeded' }]);
    expect(await job(e.id)).toMatchObject({ status: 'failed', erroredAttempts: 1 });
  });
});

describe('batching', () => {
  test('at most reaperBatchSize jobs per pass', async () => {
    await bed({ reaperBatchSize: 3, workerAliveMs: 5000 });
    for (let i = 0; i < 10; i++) await t.enqueue('q', { payload: i });
    expect(await t.claim('q', 'A', { limit: 10 })).toHaveLength(10);
    t.clock.advance(40_001);
    const sizes: number[] = [];
    for (let i = 0; i < 5; i++) sizes.push((await reap()).requeued.length);
    expect(sizes).toEqual([3, 3, 3, 1, 0]);
    expect(await count(`select count(*) as n from jobs where status = 'pending'`)).toBe(10);
    expect(await count(`select count(*) as n from events where type = 'reaped'`)).toBe(10);
    expect(t.errors).toEqual([]);
  });

  test('two passes at the same moment take each job back once', async () => {
    await bed({ workerAliveMs: 5000 });
    for (let i = 0; i < 5; i++) await t.enqueue('q', { payload: i });
    await t.claim('q', 'A', { limit: 5 });
    t.clock.advance(40_001);
    const [r1, r2] = await Promise.all([runMaintenancePass(t.db, t.clock.now(), t.config), runMaintenancePass(t.db, t.clock.now(), t.config)]);
    expect(r1.requeued.length + r2.requeued.length).toBe(5);
    expect(await count(`select count(*) as n from events where type = 'reaped'`)).toBe(5);
    expect(await count(`select count(*) as n from jobs where lost_attempts = 1`)).toBe(5);
  });
});

describe('race with a heartbeat', () => {
  test('a heartbeat that lands between the read and the write wins', async () => {
    await bed({ workerAliveMs: 5000 });
    const e = await t.enqueue('q');
    const [c] = await t.claim('q', 'A');
    t.clock.advance(40_001);
    const now = t.clock.now();
    const { take: candidates } = await jobsGetReapCandidates(t.db, { now, limit: 100, defaults: t.config, rules: t.config });
    expect(candidates.map((x) => String(x.id))).toEqual([e.id]);
    const writes: ReapWrite[] = [];
    for (const candidate of candidates) {
      const decision = decideReap(candidate, now, t.config);
      expect(decision.action).toBe('requeue');
      if (decision.action !== 'none') writes.push({ candidate, decision });
    }

    const before = await job(e.id);
    const hb = await t.post(`${api}/jobs/${e.id}/heartbeat`, { workerId: 'A', lockToken: c!.lockToken });
    expect(hb.status).toBe(200);

    const taken = await jobsReapIfUnchanged(t.db, { now, writes, defaults: t.config });
    expect(taken.size).toBe(0);
    const after = await job(e.id);
    expect(after).toMatchObject({ status: 'running', lockedBy: 'A', lostAttempts: 0, fencingToken: before.fencingToken });
    expect(ms(after.leaseExpiresAt)).toBe(now + 30_000);
    expect((await t.events(e.id)).map((x) => x.type)).toEqual(['enqueued', 'claimed']);
    // The owner still holds it: its completion is accepted.
    expect((await t.post(`${api}/jobs/${e.id}/complete`, { workerId: 'A', lockToken: c!.lockToken })).status).toBe(200);
  });

  test('a completion that lands first: the pass reports a lost race and leaves the job completed', async () => {
    await bed({ workerAliveMs: 5000 });
    const e = await t.enqueue('q');
    const [c] = await t.claim('q', 'A');
    t.clock.advance(40_001);
    const now = t.clock.now();
    const { take: candidates } = await jobsGetReapCandidates(t.db, { now, limit: 100, defaults: t.config, rules: t.config });
    const writes = candidates.map((candidate) => ({ candidate, decision: decideReap(candidate, now, t.config) })) as ReapWrite[];
    expect((await t.post(`${api}/jobs/${e.id}/complete`, { workerId: 'A', lockToken: c!.lockToken })).status).toBe(200);
    expect((await jobsReapIfUnchanged(t.db, { now, writes, defaults: t.config })).size).toBe(0);
    expect((await job(e.id)).status).toBe('completed');
  });
});

describe('pruning', () => {
  test('finished jobs past retention go with their events, bounded per pass; recent and unfinished stay', async () => {
    await bed({ pruneBatchSize: 2 });
    const old: string[] = [];
    for (let i = 0; i < 3; i++) {
      const e = await t.enqueue('q', { payload: i });
      const [c] = await t.claim('q', 'A');
      await t.post(`${api}/jobs/${e.id}/complete`, { workerId: 'A', lockToken: c!.lockToken });
      old.push(e.id);
    }
    const oldFailed = await t.enqueue('q', { payload: 'f' });
    const [cf] = await t.claim('q', 'A');
    await t.post(`${api}/jobs/${oldFailed.id}/fail`, { workerId: 'A', lockToken: cf!.lockToken, error: 'x', retryable: false });
    old.push(oldFailed.id);
    const oldCancelled = await t.enqueue('q', { payload: 'c', delayMs: 1000 });
    await t.post(`${api}/jobs/${oldCancelled.id}/cancel`);
    old.push(oldCancelled.id);
    // Unfinished and old: stays.
    const pending = await t.enqueue('q', { payload: 'p', delayMs: 365 * 24 * 3600 * 1000 });

    t.clock.advance(t.config.retentionMs - 1000);
    // Finished recently: stays.
    const recent = await t.enqueue('q', { payload: 'r' });
    const [cr] = await t.claim('q', 'A');
    await t.post(`${api}/jobs/${recent.id}/complete`, { workerId: 'A', lockToken: cr!.lockToken });

    expect((await reap()).pruned).toBe(0);
    t.clock.advance(1001);
    const passes = [(await reap()).pruned, (await reap()).pruned, (await reap()).pruned, (await reap()).pruned];
    expect(passes).toEqual([2, 2, 1, 0]);

    for (const id of old) expect((await t.get(`${api}/jobs/${id}`)).status).toBe(404);
    const inList = old.map(Number).join(',');
    expect(await count(`select count(*) as n from events where job_id in (${inList})`)).toBe(0);
    expect((await job(pending.id)).status).toBe('pending');
    expect((await job(recent.id)).status).toBe('completed');
    expect((await t.events(recent.id)).length).toBeGreaterThan(0);
    expect(t.errors).toEqual([]);
  });
});

describe('per-queue settings', () => {
  test("a queue's graceMs override is what the reaper waits", async () => {
    await bed({ workerAliveMs: 5000 });
    const slow = await t.enqueue('slow');
    const patch = await t.call('PATCH', `${api}/queues/slow/settings`, { graceMs: 60_000 });
    expect(patch.status).toBe(200);
    expect(patch.json.queue.settings.graceMs).toBe(60_000);
    expect(patch.json.queue.overrides).toEqual({ graceMs: 60_000 });
    const fast = await t.enqueue('fast');
    const [cs] = await t.claim('slow', 'A');
    await t.claim('fast', 'A');
    t.clock.set(ms(cs!.leaseExpiresAt) + 10_001);
    let r = await reap();
    expect(r.requeued.map((x) => x.id)).toEqual([fast.id]);
    expect((await job(slow.id)).status).toBe('running');
    t.clock.set(ms(cs!.leaseExpiresAt) + 60_000);
    expect((await reap()).requeued).toEqual([]);
    t.clock.set(ms(cs!.leaseExpiresAt) + 60_001);
    r = await reap();
    expect(r.requeued.map((x) => x.id)).toEqual([slow.id]);
    expect(t.errors).toEqual([]);
  });

  test("a queue's maxLostAttempts override is honoured", async () => {
    await bed({ workerAliveMs: 5000 });
    const e = await t.enqueue('q', { payload: 1, maxAttempts: 10 });
    expect((await t.call('PATCH', `${api}/queues/q/settings`, { maxLostAttempts: 1 })).status).toBe(200);
    await t.claim('q', 'A');
    t.clock.advance(40_001);
    expect((await reap()).failed).toEqual([{ id: e.id, reason: 'lost_too_many_times' }]);
  });

  test("a queue's retentionMs override is what pruning keeps", async () => {
    await bed();
    const short = await t.enqueue('short');
    const long = await t.enqueue('long');
    expect((await t.call('PATCH', `${api}/queues/short/settings`, { retentionMs: 3_600_000 })).status).toBe(200);
    for (const q of ['short', 'long']) {
      const [c] = await t.claim(q, 'A');
      await t.post(`${api}/jobs/${c!.id}/complete`, { workerId: 'A', lockToken: c!.lockToken });
    }
    t.clock.advance(3_600_001);
    expect((await reap()).pruned).toBe(1);
    expect((await t.get(`${api}/jobs/${short.id}`)).status).toBe(404);
    expect((await t.get(`${api}/jobs/${long.id}`)).status).toBe(200);
  });

  test("a queue's leaseMs, maxAttempts and backoff overrides apply to its jobs", async () => {
    await bed({ workerAliveMs: 5000 });
    // The queue exists (a parked job) before its settings are patched.
    await t.enqueue('q', { payload: 'parked', delayMs: 365 * 24 * 3600 * 1000 });
    const patch = await t.call('PATCH', `${api}/queues/q/settings`, { leaseMs: 60_000, heartbeatMs: 10_000, graceMs: 10_000, maxAttempts: 2, backoffBaseMs: 50_000, backoffMaxMs: 50_000 });
    expect(patch.status).toBe(200);
    const e = await t.enqueue('q');
    expect(e.maxAttempts).toBe(2);
    const [c] = await t.claim('q', 'A');
    expect(ms(c!.leaseExpiresAt)).toBe(t.clock.now() + 60_000);
    expect(c!.heartbeatIntervalMs).toBe(10_000);
    t.clock.advance(60_000 + 10_001);
    const now = t.clock.now();
    expect((await reap()).requeued.map((x) => x.id)).toEqual([e.id]);
    const delay = ms((await job(e.id)).availableAt) - now;
    expect(delay).toBeGreaterThanOrEqual(25_000);
    expect(delay).toBeLessThanOrEqual(50_000);
  });
});

/** Settings and pause given before a queue's first job are kept. */
describe('settings on a queue that does not exist yet', () => {
  test('PATCH settings before the first enqueue is kept', async () => {
    await bed();
    const patch = await t.call('PATCH', `${api}/queues/fresh/settings`, { graceMs: 60_000 });
    expect(patch.status).toBe(200);
    expect(patch.json.queue.settings.graceMs).toBe(60_000);
  });

  test('pause before the first enqueue keeps the queue paused', async () => {
    await bed();
    const pause = await t.post(`${api}/queues/fresh/pause`);
    expect(pause.json).toEqual({ queue: 'fresh', paused: true });
    await t.enqueue('fresh');
    expect(await t.claim('fresh', 'w')).toEqual([]);
  });
});
