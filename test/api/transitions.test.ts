/**
 * Every transition of a job and the guard that protects it, over HTTP
 * (docs/http-api.md): enqueue, claim, heartbeat / extend, checkpoint,
 * complete, fail, release, and the operator's cancel / retry / requeue.
 */
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { backoffRangeMs } from '../../src/core/backoff.ts';
import { setup, type TestBed } from '../support/helpers.ts';

let t: TestBed;
beforeEach(async () => {
  t = await setup();
});
afterEach(() => t.close());

const api = '/api/v1';
const ms = (iso: string | null | undefined) => (iso == null ? NaN : Date.parse(iso));

async function job(id: string) {
  const res = await t.get(`${api}/jobs/${id}`);
  expect(res.status).toBe(200);
  return res.json.job as Record<string, any>;
}

async function claimOne(queue: string, workerId: string, extra: Record<string, unknown> = {}) {
  const jobs = await t.claim(queue, workerId, extra);
  expect(jobs).toHaveLength(1);
  return jobs[0]!;
}

describe('enqueue', () => {
  test('a single job is pending, due now, with the defaults', async () => {
    const res = await t.post(`${api}/queues/q/jobs`, { payload: { n: 1 } });
    expect(res.status).toBe(201);
    const j = res.json.job;
    expect(j).toMatchObject({ queue: 'q', status: 'pending', payload: { n: 1 }, priority: 0, attempt: 0, maxAttempts: 5, fencingToken: 0 });
    expect(typeof j.id).toBe('string');
    expect(ms(j.availableAt)).toBe(t.clock.now());
    expect(res.json.deduplicated).toBeUndefined();
    const events = await t.events(j.id);
    expect(events.map((e) => e.type)).toEqual(['enqueued']);
    expect(t.errors).toEqual([]);
  });

  test('bulk enqueue creates every job in order, each marked not deduplicated', async () => {
    const res = await t.post(`${api}/queues/q/jobs`, { jobs: [{ payload: 1 }, { payload: 2, priority: 3 }, { payload: 3 }] });
    expect(res.status).toBe(201);
    expect(res.json.jobs.map((j: any) => j.deduplicated)).toEqual([false, false, false]);
    // The answer names the jobs in input order (payloads are not echoed back).
    const payloads = await Promise.all(res.json.jobs.map(async (j: any) => (await t.get(`${api}/jobs/${j.id}`)).json.job.payload));
    expect(payloads).toEqual([1, 2, 3]);
    expect(new Set(res.json.jobs.map((j: any) => j.id)).size).toBe(3);
    expect(res.json.jobs[1].priority).toBe(3);
    expect(t.errors).toEqual([]);
  });

  test('an idempotency key deduplicates across calls, inside one bulk, and is per queue; metrics count it', async () => {
    const first = await t.post(`${api}/queues/q/jobs`, { payload: { v: 1 }, idempotencyKey: 'k1' });
    expect(first.status).toBe(201);
    const again = await t.post(`${api}/queues/q/jobs`, { payload: { v: 2 }, idempotencyKey: 'k1' });
    expect(again.status).toBe(200);
    expect(again.json.deduplicated).toBe(true);
    expect(again.json.job.id).toBe(first.json.job.id);
    // The existing job is returned untouched: the second payload is not stored.
    expect(again.json.job.payload).toEqual({ v: 1 });

    const bulk = await t.post(`${api}/queues/q/jobs`, {
      jobs: [
        { payload: 'a', idempotencyKey: 'k2' },
        { payload: 'b', idempotencyKey: 'k2' },
        { payload: 'c', idempotencyKey: 'k1' },
        { payload: 'd' },
      ],
    });
    expect(bulk.status).toBe(201);
    const [a, b, c, d] = bulk.json.jobs;
    expect([a.deduplicated, b.deduplicated, c.deduplicated, d.deduplicated]).toEqual([false, true, true, false]);
    expect(b.id).toBe(a.id);
    expect((await t.get(`${api}/jobs/${b.id}`)).json.job.payload).toBe('a');
    expect(c.id).toBe(first.json.job.id);

    // Another queue: the same key is a different job.
    const other = await t.post(`${api}/queues/other/jobs`, { payload: 1, idempotencyKey: 'k1' });
    expect(other.status).toBe(201);
    expect(other.json.job.id).not.toBe(first.json.job.id);

    const count = await t.client.execute(`select count(*) as n from jobs`);
    expect(Number(count.rows[0]!.n)).toBe(4); // k1, k2, d, other

    const metrics = await t.get('/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.text).toMatch(/^leasehold_enqueue_deduplicated_total\{queue="q"\} 3$/m);
    expect((await t.events(first.json.job.id)).map((e) => e.type)).toEqual(['enqueued', 'deduplicated', 'deduplicated']);
    expect(t.errors).toEqual([]);
  });
});

test('a bulk larger than one statement keeps order and dedup across statements', async () => {
  const jobs = Array.from({ length: 2500 }, (_, i) => ({ payload: i, ...(i === 10 || i === 2010 ? { idempotencyKey: 'same' } : {}) }));
  const res = await t.post(`${api}/queues/q/jobs`, { jobs });
  expect(res.status).toBe(201);
  expect(res.json.jobs).toHaveLength(2500);
  const rows = await t.client.execute(`select id, payload from jobs`);
  const payloadById = new Map(rows.rows.map((r) => [String(r.id), JSON.parse(String(r.payload))]));
  expect(res.json.jobs.map((j: any) => payloadById.get(j.id))).toEqual(jobs.map((j) => (j.payload === 2010 ? 10 : j.payload)));
  expect(res.json.jobs[2010]).toMatchObject({ id: res.json.jobs[10].id, deduplicated: true });
  expect(res.json.jobs.filter((j: any) => j.deduplicated)).toHaveLength(1);
  const count = await t.client.execute(`select count(*) as n from jobs`);
  expect(Number(count.rows[0]!.n)).toBe(2499);
});

describe('claim', () => {
  test('order: priority first, then due time, then id', async () => {
    const j1 = await t.enqueue('q', { payload: 1 });
    const j2 = await t.enqueue('q', { payload: 2 });
    const j3 = await t.enqueue('q', { payload: 3, priority: 10 });
    // Due a second ago: earlier than j1 and j2 although enqueued after them.
    const j4 = await t.enqueue('q', { payload: 4, runAt: new Date(t.clock.now() - 1000).toISOString() });
    const j5 = await t.enqueue('q', { payload: 5, priority: -1 });
    const order: string[] = [];
    for (let i = 0; i < 5; i++) order.push((await claimOne('q', 'w')).id);
    expect(order).toEqual([j3.id, j4.id, j1.id, j2.id, j5.id]);
    expect(await t.claim('q', 'w')).toEqual([]);
    expect(t.errors).toEqual([]);
  });

  test('a batch claim returns jobs in claim order', async () => {
    const low = await t.enqueue('q', { payload: 1 });
    const high = await t.enqueue('q', { payload: 2, priority: 5 });
    const jobs = await t.claim('q', 'w', { limit: 10 });
    expect(jobs.map((j) => j.id)).toEqual([high.id, low.id]);
  });

  test('delayMs and runAt jobs are not claimable until due', async () => {
    const delayed = await t.enqueue('q', { payload: 1, delayMs: 5000 });
    expect(ms(delayed.availableAt)).toBe(t.clock.now() + 5000);
    const at = t.clock.now() + 60_000;
    const scheduled = await t.enqueue('q', { payload: 2, runAt: new Date(at).toISOString() });
    expect(ms(scheduled.availableAt)).toBe(at);

    expect(await t.claim('q', 'w')).toEqual([]);
    t.clock.advance(4999);
    expect(await t.claim('q', 'w')).toEqual([]);
    t.clock.advance(1);
    expect((await claimOne('q', 'w')).id).toBe(delayed.id);
    t.clock.set(at - 1);
    expect(await t.claim('q', 'w')).toEqual([]);
    t.clock.set(at);
    expect((await claimOne('q', 'w')).id).toBe(scheduled.id);
    expect(t.errors).toEqual([]);
  });

  test('a paused queue gives nothing; resumed, it does; other queues are unaffected', async () => {
    const j = await t.enqueue('q', { payload: 1 });
    await t.enqueue('other', { payload: 1 });
    expect((await t.post(`${api}/queues/q/pause`)).status).toBe(200);
    expect(await t.claim('q', 'w')).toEqual([]);
    expect(await t.claim('other', 'w')).toHaveLength(1);
    expect((await t.get(`${api}/queues/q`)).json.queue.paused).toBe(true);
    expect((await t.post(`${api}/queues/q/resume`)).status).toBe(200);
    expect((await claimOne('q', 'w')).id).toBe(j.id);
    expect(t.errors).toEqual([]);
  });

  test('limit caps the batch; the rest stay pending', async () => {
    for (let i = 0; i < 5; i++) await t.enqueue('q', { payload: i });
    expect(await t.claim('q', 'w', { limit: 3 })).toHaveLength(3);
    expect(await t.claim('q', 'w', { limit: 3 })).toHaveLength(2);
    expect(await t.claim('q', 'w', { limit: 3 })).toHaveLength(0);
  });

  test('a claim sets running, owner, lease, a 128-bit lock token, attempt 1, fencing token 1', async () => {
    const e = await t.enqueue('q', { payload: { x: 1 } });
    const c = await claimOne('q', 'w1');
    expect(c).toMatchObject({ id: e.id, queue: 'q', attempt: 1, fencingToken: 1, leaseMs: 30_000, payload: { x: 1 }, heartbeatIntervalMs: 5000, checkpoint: null });
    expect(c.lockToken).toMatch(/^[0-9a-f]{32,}$/);
    expect(ms(c.leaseExpiresAt)).toBe(t.clock.now() + 30_000);
    const job = (await t.get(`${api}/jobs/${e.id}`)).json.job;
    expect(job).toMatchObject({ status: 'running', lockedBy: 'w1', attempt: 1 });
    expect(ms(job.startedAt)).toBe(t.clock.now());
    const events = await t.events(e.id);
    expect(events.at(-1)).toMatchObject({ type: 'claimed', from: 'pending', to: 'running', workerId: 'w1' });
    // The lock token is the claimer's secret: never in a job read.
    const read = await t.get(`${api}/jobs/${e.id}`);
    expect(read.text).not.toContain(c.lockToken);
  });

  test('claim honours leaseMs', async () => {
    await t.enqueue('q');
    const c = await claimOne('q', 'w', { leaseMs: 5000 });
    expect(ms(c.leaseExpiresAt)).toBe(t.clock.now() + 5000);
  });

  test('every claim gets a different token and a higher fencing token', async () => {
    const e = await t.enqueue('q', { payload: 1, maxAttempts: 10 });
    const tokens: string[] = [];
    const fencing: number[] = [];
    for (let i = 0; i < 4; i++) {
      const c = await claimOne('q', `w${i}`);
      expect(c.id).toBe(e.id);
      tokens.push(c.lockToken);
      fencing.push(c.fencingToken);
      const f = await t.post(`${api}/jobs/${e.id}/fail`, { workerId: `w${i}`, lockToken: c.lockToken, error: 'boom', retryAfterMs: 0 });
      expect(f.status).toBe(200);
    }
    expect(new Set(tokens).size).toBe(4);
    expect(fencing).toEqual([1, 2, 3, 4]);
    expect(t.errors).toEqual([]);
  });
});

describe('heartbeat and extend', () => {
  test('a heartbeat renews the lease to now + lease and stores progress, without an event', async () => {
    const e = await t.enqueue('q');
    const claimedAt = t.clock.now();
    const c = await claimOne('q', 'w');
    t.clock.advance(10_000);
    const hb = await t.post(`${api}/jobs/${e.id}/heartbeat`, { workerId: 'w', lockToken: c.lockToken, progress: { done: 3 } });
    expect(hb.status).toBe(200);
    // Every claim has a deadline: the server's default job timeout (1 h) from the claim.
    expect(hb.json).toMatchObject({ id: e.id, fencingToken: 1, deadlineAt: new Date(claimedAt + 3_600_000).toISOString() });
    expect(ms(hb.json.leaseExpiresAt)).toBe(t.clock.now() + 30_000);
    const after = await job(e.id);
    expect(after.progress).toEqual({ done: 3 });
    expect(ms(after.lastHeartbeatAt)).toBe(t.clock.now());
    expect(ms(after.leaseExpiresAt)).toBe(t.clock.now() + 30_000);
    // A heartbeat without progress keeps the last one.
    t.clock.advance(1000);
    expect((await t.post(`${api}/jobs/${e.id}/heartbeat`, { workerId: 'w', lockToken: c.lockToken })).status).toBe(200);
    expect((await job(e.id)).progress).toEqual({ done: 3 });
    expect((await t.events(e.id)).map((x) => x.type)).toEqual(['enqueued', 'claimed']);
    expect(t.errors).toEqual([]);
  });

  test('a heartbeat renews with the lease the claim asked for', async () => {
    const e = await t.enqueue('q');
    const c = await claimOne('q', 'w', { leaseMs: 8000 });
    t.clock.advance(3000);
    const hb = await t.post(`${api}/jobs/${e.id}/heartbeat`, { workerId: 'w', lockToken: c.lockToken });
    expect(ms(hb.json.leaseExpiresAt)).toBe(t.clock.now() + 8000);
  });

  test('extend sets the lease to leaseMs from now', async () => {
    const e = await t.enqueue('q');
    const c = await claimOne('q', 'w');
    t.clock.advance(20_000);
    const ex = await t.post(`${api}/jobs/${e.id}/extend`, { workerId: 'w', lockToken: c.lockToken, leaseMs: 600_000 });
    expect(ex.status).toBe(200);
    expect(ms(ex.json.leaseExpiresAt)).toBe(t.clock.now() + 600_000);
    expect(ms((await job(e.id)).leaseExpiresAt)).toBe(t.clock.now() + 600_000);
    expect(t.errors).toEqual([]);
  });

  test('extend is one-off: a later heartbeat never shortens it, and renews by the claim\'s lease once past it', async () => {
    const e = await t.enqueue('q');
    const c = await claimOne('q', 'w');
    await t.post(`${api}/jobs/${e.id}/extend`, { workerId: 'w', lockToken: c.lockToken, leaseMs: 600_000 });
    const extendedTo = t.clock.now() + 600_000;
    t.clock.advance(5_000);
    const hb = await t.post(`${api}/jobs/${e.id}/heartbeat`, { workerId: 'w', lockToken: c.lockToken });
    expect(ms(hb.json.leaseExpiresAt)).toBe(extendedTo);
    t.clock.advance(600_000);
    const later = await t.post(`${api}/jobs/${e.id}/heartbeat`, { workerId: 'w', lockToken: c.lockToken });
    expect(ms(later.json.leaseExpiresAt)).toBe(t.clock.now() + 30_000);
    expect(t.errors).toEqual([]);
  });

  test('batch heartbeats: valid leases renewed, stale and unknown ones refused one by one', async () => {
    const [a, b, c] = [await t.enqueue('q'), await t.enqueue('q'), await t.enqueue('q')];
    const claimed = await t.claim('q', 'w', { limit: 3 });
    const tokenOf = (id: string) => claimed.find((x) => x.id === id)!.lockToken;
    // c is completed: its token is stale from now on.
    expect((await t.post(`${api}/jobs/${c.id}/complete`, { workerId: 'w', lockToken: tokenOf(c.id) })).status).toBe(200);
    t.clock.advance(7000);
    const res = await t.post(`${api}/heartbeats`, {
      workerId: 'w',
      leases: [
        { id: a.id, lockToken: tokenOf(a.id), progress: 1 },
        { id: b.id, lockToken: 'f'.repeat(32) },
        { id: c.id, lockToken: tokenOf(c.id) },
        { id: '999999', lockToken: 'x' },
      ],
    });
    expect(res.status).toBe(200);
    const [ra, rb, rc, rx] = res.json.results;
    expect(ra).toMatchObject({ id: a.id, ok: true });
    expect(ms(ra.leaseExpiresAt)).toBe(t.clock.now() + 30_000);
    expect(rb).toMatchObject({ id: b.id, ok: false, error: { code: 'lease_lost' } });
    expect(rc).toMatchObject({ id: c.id, ok: false, error: { code: 'lease_lost', status: 'completed' } });
    expect(rx).toMatchObject({ id: '999999', ok: false, error: { code: 'not_found' } });
    expect((await job(a.id)).progress).toBe(1);
    // b keeps its old lease.
    expect(ms((await job(b.id)).leaseExpiresAt)).toBe(t.clock.now() - 7000 + 30_000);
    expect(t.errors).toEqual([]);
  });
});

describe('checkpoint', () => {
  test('a checkpoint is stored, renews the lease, and comes back in the next attempt', async () => {
    const e = await t.enqueue('q');
    const c = await claimOne('q', 'w');
    t.clock.advance(5000);
    const cp = await t.post(`${api}/jobs/${e.id}/checkpoint`, { workerId: 'w', lockToken: c.lockToken, checkpoint: { page: 7 } });
    expect(cp.status).toBe(200);
    expect(ms(cp.json.leaseExpiresAt)).toBe(t.clock.now() + 30_000);
    expect((await t.post(`${api}/jobs/${e.id}/fail`, { workerId: 'w', lockToken: c.lockToken, error: 'x', retryAfterMs: 0 })).status).toBe(200);
    const again = await claimOne('q', 'w2');
    expect(again.attempt).toBe(2);
    expect(again.checkpoint).toEqual({ page: 7 });
    expect(t.errors).toEqual([]);
  });
});

describe('complete', () => {
  test('complete stores the result and clears the lease', async () => {
    const e = await t.enqueue('q');
    const c = await claimOne('q', 'w');
    t.clock.advance(1234);
    const res = await t.post(`${api}/jobs/${e.id}/complete`, { workerId: 'w', lockToken: c.lockToken, result: { ok: 42 } });
    expect(res.status).toBe(200);
    expect(res.json.job).toMatchObject({ id: e.id, status: 'completed', result: { ok: 42 }, lockedBy: null, leaseExpiresAt: null });
    expect(ms(res.json.job.completedAt)).toBe(t.clock.now());
    expect(await job(e.id)).toEqual(res.json.job);
    expect((await t.events(e.id)).at(-1)).toMatchObject({ type: 'completed', from: 'running', to: 'completed', workerId: 'w' });
    expect(t.errors).toEqual([]);
  });

  test('a clean job stores one event row, its claim; GET shows enqueued, claimed, completed in order, the two read from the row marked derived', async () => {
    const before = Number((await t.client.execute('SELECT count(*) AS n FROM events')).rows[0]!.n);
    const e = await t.enqueue('q');
    const created = t.clock.now();
    t.clock.advance(5);
    const c = await claimOne('q', 'w');
    t.clock.advance(7);
    expect((await t.post(`${api}/jobs/${e.id}/complete`, { workerId: 'w', lockToken: c.lockToken, result: 1 })).status).toBe(200);
    const stored = (await t.client.execute({ sql: 'SELECT type FROM events WHERE job_id = ?', args: [Number(e.id)] })).rows.map((r) => r.type);
    expect(stored).toEqual(['claimed']);
    expect(Number((await t.client.execute('SELECT count(*) AS n FROM events')).rows[0]!.n) - before).toBe(1);
    const trail = (await t.get(`${api}/jobs/${e.id}`)).json;
    expect(trail.olderEventsNotShown).toBe(0);
    expect(trail.events.map((x: any) => [x.type, x.derived, x.id === null, ms(x.at) - created, x.from, x.to, x.workerId, x.attempt])).toEqual([
      ['enqueued', true, true, 0, null, 'pending', null, 0],
      ['claimed', false, false, 5, 'pending', 'running', 'w', 1],
      ['completed', true, true, 12, 'running', 'completed', 'w', 1],
    ]);
    expect(t.errors).toEqual([]);
  });

  test('a failed, retried and reaped job keeps every exceptional event; only its enqueue and final completion are derived', async () => {
    const e = await t.enqueue('q', { payload: {}, maxAttempts: 5 });
    const c1 = await claimOne('q', 'w1');
    expect((await t.post(`${api}/jobs/${e.id}/fail`, { workerId: 'w1', lockToken: c1.lockToken, error: 'boom', retryAfterMs: 0 })).status).toBe(200);
    const c2 = await claimOne('q', 'w2');
    expect((await t.post(`${api}/jobs/${e.id}/fail`, { workerId: 'w2', lockToken: c2.lockToken, error: 'fatal', retryable: false })).status).toBe(200);
    expect((await t.post(`${api}/jobs/${e.id}/retry`, { reason: 'fixed' })).status).toBe(200);
    await claimOne('q', 'w3');
    t.clock.advance(24 * 3600_000);
    await t.post(`${api}/reaper/run`, {});
    t.clock.advance(24 * 3600_000); // past the reap's backoff
    const c4 = await claimOne('q', 'w4');
    expect((await t.post(`${api}/jobs/${e.id}/complete`, { workerId: 'w4', lockToken: c4.lockToken })).status).toBe(200);
    const stored = (await t.client.execute({ sql: 'SELECT type FROM events WHERE job_id = ? ORDER BY id', args: [Number(e.id)] })).rows.map((r) => r.type);
    expect(stored).toEqual(['claimed', 'retry_scheduled', 'claimed', 'failed', 'retried_by_operator', 'claimed', 'reaped', 'duplicate_execution', 'claimed']);
    const trail = (await t.get(`${api}/jobs/${e.id}`)).json;
    expect(trail.events.map((x: any) => (x.derived ? `(${x.type})` : x.type))).toEqual(['(enqueued)', ...stored, '(completed)']);
    // The completion names the last claim's worker and attempt (the reaped attempt 1 after the operator's retry counted).
    expect(trail.events.at(-2)).toMatchObject({ type: 'claimed', workerId: 'w4', attempt: 2 });
    expect(trail.events.at(-1)).toMatchObject({ type: 'completed', workerId: 'w4', attempt: 2 });
  });

  test('batch completions: one outcome per job', async () => {
    const [a, b] = [await t.enqueue('q'), await t.enqueue('q')];
    const claimed = await t.claim('q', 'w', { limit: 2 });
    const tokenOf = (id: string) => claimed.find((x) => x.id === id)!.lockToken;
    const res = await t.post(`${api}/completions`, {
      workerId: 'w',
      results: [
        { id: a.id, lockToken: tokenOf(a.id), result: 'A' },
        { id: b.id, lockToken: tokenOf(a.id) },
        { id: '424242', lockToken: 'x' },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.json.results).toMatchObject([
      { id: a.id, ok: true, status: 'completed' },
      { id: b.id, ok: false, error: { code: 'lease_lost', status: 'running' } },
      { id: '424242', ok: false, error: { code: 'not_found' } },
    ]);
    expect(await job(a.id)).toMatchObject({ status: 'completed', result: 'A' });
    expect(await job(b.id)).toMatchObject({ status: 'running', lockedBy: 'w' });
    expect(t.errors).toEqual([]);
  });
});

describe('fail', () => {
  test('retryable with attempts left: pending again after a backoff in the documented range', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push((await t.enqueue('q', { payload: i })).id);
    const claimed = await t.claim('q', 'w', { limit: 10 });
    const [lo, hi] = backoffRangeMs(1, { baseMs: t.config.backoffBaseMs, maxMs: t.config.backoffMaxMs });
    for (const c of claimed) {
      const res = await t.post(`${api}/jobs/${c.id}/fail`, { workerId: 'w', lockToken: c.lockToken, error: 'temporary' });
      expect(res.status).toBe(200);
      expect(res.json.job).toMatchObject({ status: 'pending', lastError: 'temporary', erroredAttempts: 1, attempt: 1, lockedBy: null });
      const delay = ms(res.json.job.availableAt) - t.clock.now();
      expect(delay).toBeGreaterThanOrEqual(lo);
      expect(delay).toBeLessThanOrEqual(hi);
    }
    expect((await t.events(ids[0]!)).at(-1)).toMatchObject({ type: 'retry_scheduled', from: 'running', to: 'pending' });
    // Not claimable before the backoff; all of them after the ceiling.
    t.clock.advance(lo - 1);
    expect(await t.claim('q', 'w', { limit: 10 })).toEqual([]);
    t.clock.advance(hi - lo + 1);
    expect(await t.claim('q', 'w', { limit: 10 })).toHaveLength(10);
    expect(t.errors).toEqual([]);
  });

  test('the backoff grows with the attempt number', async () => {
    const e = await t.enqueue('q', { payload: 1, maxAttempts: 10 });
    for (let attempt = 1; attempt <= 4; attempt++) {
      const c = await claimOne('q', 'w');
      expect(c.attempt).toBe(attempt);
      const res = await t.post(`${api}/jobs/${e.id}/fail`, { workerId: 'w', lockToken: c.lockToken, error: 'again' });
      const [lo, hi] = backoffRangeMs(attempt, { baseMs: 1000, maxMs: 600_000 });
      const delay = ms(res.json.job.availableAt) - t.clock.now();
      expect(delay).toBeGreaterThanOrEqual(lo);
      expect(delay).toBeLessThanOrEqual(hi);
      t.clock.advance(hi);
    }
  });

  test('retryAfterMs replaces the backoff', async () => {
    const e = await t.enqueue('q');
    const c = await claimOne('q', 'w');
    const res = await t.post(`${api}/jobs/${e.id}/fail`, { workerId: 'w', lockToken: c.lockToken, error: 'rate limited', retryAfterMs: 12_345 });
    expect(ms(res.json.job.availableAt)).toBe(t.clock.now() + 12_345);
  });

  test('non-retryable: failed for good at once, with lastError', async () => {
    const e = await t.enqueue('q');
    const c = await claimOne('q', 'w');
    const res = await t.post(`${api}/jobs/${e.id}/fail`, { workerId: 'w', lockToken: c.lockToken, error: 'bad input', retryable: false });
    expect(res.status).toBe(200);
    expect(res.json.job).toMatchObject({ status: 'failed', lastError: 'bad input', lockedBy: null });
    expect(ms(res.json.job.failedAt)).toBe(t.clock.now());
    expect((await t.events(e.id)).at(-1)).toMatchObject({ type: 'failed', reason: 'non_retryable', to: 'failed' });
    t.clock.advance(3_600_000);
    expect(await t.claim('q', 'w')).toEqual([]);
  });

  test('retryable but attempts spent: failed', async () => {
    const e = await t.enqueue('q', { payload: 1, maxAttempts: 2 });
    let c = await claimOne('q', 'w');
    expect((await t.post(`${api}/jobs/${e.id}/fail`, { workerId: 'w', lockToken: c.lockToken, error: 'one', retryAfterMs: 0 })).json.job.status).toBe('pending');
    c = await claimOne('q', 'w');
    const res = await t.post(`${api}/jobs/${e.id}/fail`, { workerId: 'w', lockToken: c.lockToken, error: 'two' });
    expect(res.json.job).toMatchObject({ status: 'failed', attempt: 2, erroredAttempts: 2, lastError: 'two' });
    expect((await t.events(e.id)).at(-1)).toMatchObject({ type: 'failed', reason: 'attempts_exhausted' });
  });
});

describe('release', () => {
  test('release: pending now, the attempt given back, the next claim still gets a higher fencing token', async () => {
    const e = await t.enqueue('q');
    const c = await claimOne('q', 'w');
    const res = await t.post(`${api}/jobs/${e.id}/release`, { workerId: 'w', lockToken: c.lockToken, reason: 'shutdown' });
    expect(res.status).toBe(200);
    expect(res.json.job).toMatchObject({ status: 'pending', attempt: 0, lockedBy: null, leaseExpiresAt: null });
    expect(ms(res.json.job.availableAt)).toBeLessThanOrEqual(t.clock.now());
    expect((await t.events(e.id)).at(-1)).toMatchObject({ type: 'released', reason: 'shutdown', from: 'running', to: 'pending' });
    const again = await claimOne('q', 'w2');
    expect(again.attempt).toBe(1);
    expect(again.fencingToken).toBe(2);
    expect(again.lockToken).not.toBe(c.lockToken);
    expect(t.errors).toEqual([]);
  });

  test('batch releases: owned leases given back in one call, stale and unknown ones refused one by one', async () => {
    const [a, b, c] = [await t.enqueue('q'), await t.enqueue('q'), await t.enqueue('q')];
    const claimed = await t.claim('q', 'w', { limit: 3 });
    const tokenOf = (id: string) => claimed.find((x) => x.id === id)!.lockToken;
    expect((await t.post(`${api}/jobs/${c.id}/complete`, { workerId: 'w', lockToken: tokenOf(c.id) })).status).toBe(200);
    const res = await t.post(`${api}/releases`, {
      workerId: 'w',
      reason: 'worker_shutdown',
      leases: [
        { id: a.id, lockToken: tokenOf(a.id) },
        { id: b.id, lockToken: 'f'.repeat(32) },
        { id: c.id, lockToken: tokenOf(c.id) },
        { id: '999999', lockToken: 'x' },
      ],
    });
    expect(res.status).toBe(200);
    const [ra, rb, rc, rx] = res.json.results;
    expect(ra).toEqual({ id: a.id, ok: true, status: 'pending' });
    expect(rb).toMatchObject({ id: b.id, ok: false, error: { code: 'lease_lost', status: 'running' } });
    expect(rc).toMatchObject({ id: c.id, ok: false, error: { code: 'lease_lost', status: 'completed' } });
    expect(rx).toMatchObject({ id: '999999', ok: false, error: { code: 'not_found' } });
    expect((await job(a.id))).toMatchObject({ status: 'pending', attempt: 0, lockedBy: null });
    expect((await t.events(a.id)).at(-1)).toMatchObject({ type: 'released', reason: 'worker_shutdown', from: 'running', to: 'pending' });
    // b keeps its claim: the wrong token changed nothing.
    expect((await job(b.id))).toMatchObject({ status: 'running', lockedBy: 'w' });
    expect(t.errors).toEqual([]);
  });
});

describe('operator actions', () => {
  test('cancel: a pending job only; anything else is a 409 conflict', async () => {
    const p = await t.enqueue('q', { payload: 'cancel me', delayMs: 60_000 });
    const res = await t.post(`${api}/jobs/${p.id}/cancel`, { reason: 'not needed', actor: 'alice' });
    expect(res.status).toBe(200);
    expect(res.json.job.status).toBe('cancelled');
    expect((await t.events(p.id)).at(-1)).toMatchObject({ type: 'cancelled', reason: 'not needed', to: 'cancelled' });
    expect((await t.post(`${api}/jobs/${p.id}/cancel`)).status).toBe(409);

    const r = await t.enqueue('q');
    const c = await claimOne('q', 'w');
    const running = await t.post(`${api}/jobs/${r.id}/cancel`);
    expect(running.status).toBe(409);
    expect(running.json.error).toMatchObject({ code: 'conflict', status: 'running' });
    expect((await job(r.id)).status).toBe('running');

    await t.post(`${api}/jobs/${r.id}/complete`, { workerId: 'w', lockToken: c.lockToken });
    expect((await t.post(`${api}/jobs/${r.id}/cancel`)).json.error.code).toBe('conflict');
    expect((await t.post(`${api}/jobs/777777/cancel`)).status).toBe(404);
    expect(t.errors).toEqual([]);
  });

  test('retry: a failed or cancelled job runs again with a fresh attempt budget', async () => {
    const e = await t.enqueue('q', { payload: 1, maxAttempts: 1 });
    const c = await claimOne('q', 'w');
    await t.post(`${api}/jobs/${e.id}/fail`, { workerId: 'w', lockToken: c.lockToken, error: 'x' });
    expect((await job(e.id)).status).toBe('failed');
    const res = await t.post(`${api}/jobs/${e.id}/retry`, { reason: 'fixed upstream' });
    expect(res.status).toBe(200);
    expect(res.json.job).toMatchObject({ status: 'pending', attempt: 0, failedAt: null });
    expect((await t.events(e.id)).at(-1)).toMatchObject({ type: 'retried_by_operator', reason: 'fixed upstream', from: 'failed', to: 'pending' });
    const again = await claimOne('q', 'w');
    expect(again).toMatchObject({ id: e.id, attempt: 1, fencingToken: 2 });

    // Only failed / cancelled: running and pending are conflicts.
    expect((await t.post(`${api}/jobs/${e.id}/retry`)).status).toBe(409);
    const pending = await t.enqueue('q', { payload: 2, delayMs: 1000 });
    expect((await t.post(`${api}/jobs/${pending.id}/retry`)).status).toBe(409);
    await t.post(`${api}/jobs/${pending.id}/cancel`);
    expect((await t.post(`${api}/jobs/${pending.id}/retry`)).json.job.status).toBe('pending');
    expect(t.errors).toEqual([]);
  });

  test('requeue: only a running job the reaper would take now, unless forced', async () => {
    const e = await t.enqueue('q');
    const c = await claimOne('q', 'w');
    const live = await t.post(`${api}/jobs/${e.id}/requeue`, {});
    expect(live.status).toBe(409);
    expect(live.json.error).toMatchObject({ code: 'conflict', status: 'running' });
    expect((await job(e.id)).status).toBe('running');

    t.clock.advance(30_001); // expired, but inside the grace: the reaper would wait, so the operator does
    const inGrace = await t.post(`${api}/jobs/${e.id}/requeue`, { reason: 'stuck', actor: 'bob' });
    expect(inGrace.status).toBe(409);
    expect(inGrace.json.error).toMatchObject({ code: 'conflict', status: 'running', why: 'lease expired 0.0 s ago, inside the 10 s grace' });
    t.clock.advance(10_000); // lease + grace passed, w not seen since the claim
    const res = await t.post(`${api}/jobs/${e.id}/requeue`, { reason: 'stuck', actor: 'bob' });
    expect(res.status).toBe(200);
    expect(res.json.job).toMatchObject({ status: 'pending', lockedBy: null });
    expect(ms(res.json.job.availableAt)).toBe(t.clock.now());
    expect((await t.events(e.id)).at(-1)).toMatchObject({ type: 'requeued_by_operator', reason: 'stuck', from: 'running', to: 'pending' });

    // The old worker's writes are refused from then on.
    const late = await t.post(`${api}/jobs/${e.id}/complete`, { workerId: 'w', lockToken: c.lockToken });
    expect(late.status).toBe(409);
    expect(late.json.error.code).toBe('lease_lost');
    // A pending job cannot be requeued.
    expect((await t.post(`${api}/jobs/${e.id}/requeue`, {})).status).toBe(409);
    expect(t.errors).toEqual([]);
  });

  test('force requeue takes a live lease, needs a reason, and fences the old worker', async () => {
    const e = await t.enqueue('q');
    const c = await claimOne('q', 'w');
    const noReason = await t.post(`${api}/jobs/${e.id}/requeue`, { force: true });
    expect(noReason.status).toBe(400);
    expect(noReason.json.error.field).toBe('reason');
    expect((await job(e.id)).status).toBe('running');

    const res = await t.post(`${api}/jobs/${e.id}/requeue`, { force: true, reason: 'worker wedged' });
    expect(res.status).toBe(200);
    expect(res.json.job.status).toBe('pending');
    expect((await t.events(e.id)).at(-1)).toMatchObject({ type: 'force_requeued_by_operator', reason: 'worker wedged' });

    const late = await t.post(`${api}/jobs/${e.id}/complete`, { workerId: 'w', lockToken: c.lockToken });
    expect(late.status).toBe(409);
    const hb = await t.post(`${api}/jobs/${e.id}/heartbeat`, { workerId: 'w', lockToken: c.lockToken });
    expect(hb.status).toBe(409);
    const next = await claimOne('q', 'w2');
    expect(next.fencingToken).toBe(2);
    expect(t.errors).toEqual([]);
  });
});
