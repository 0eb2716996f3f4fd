/**
 * Observability (docs/dashboard.md, "Metrics"; docs/operations.md, "Logs"), through the real app and the manual
 * clock: GET /api/v1/metrics numbers, /metrics Prometheus text, alert states
 * (firing vs ok) from GET /api/v1/alerts, and tuning flags from GET /api/v1/tuning.
 */
import { afterEach, describe, expect, test } from 'vitest';
import type { Config } from '../../src/core/config.ts';
import { setup, type TestBed } from '../support/helpers.ts';

let t: TestBed;
async function bed(overrides: Partial<Config> = {}) {
  t = await setup(overrides);
  return t;
}
afterEach(() => t?.close());

const api = '/api/v1';
/** Past lease + grace, and long enough that the owner no longer counts as alive (defaults). */
const PAST_LEASE_OWNER_DEAD = 30_000 + 10_000 + 15_000 + 1;

async function metrics() {
  const res = await t.get(`${api}/metrics`);
  expect(res.status).toBe(200);
  return res.json as { now: number; workers: { active: number; total: number }; queues: Record<string, any>[] };
}
const queue = async (name: string) => (await metrics()).queues.find((q) => q.queue === name)!;

async function alerts() {
  const res = await t.get(`${api}/alerts`);
  expect(res.status).toBe(200);
  return res.json as { firing: number; alerts: { name: string; queue: string; state: string; value: number | null; threshold: number; message: string }[] };
}
const alert = async (q: string, name: string) => (await alerts()).alerts.find((a) => a.queue === q && a.name === name)!;

async function tuning(q: string) {
  const res = await t.get(`${api}/tuning`);
  expect(res.status).toBe(200);
  return (res.json.queues as Record<string, any>[]).find((x) => x.queue === q)!;
}

/** Enqueue, claim, let `ms` pass, complete: one job with that runtime. */
async function runJob(q: string, ms: number, worker = 'W') {
  const e = await t.enqueue(q);
  const [c] = await t.claim(q, worker);
  expect(c!.id).toBe(e.id);
  t.clock.advance(ms);
  const done = await t.post(`${api}/jobs/${e.id}/complete`, { workerId: worker, lockToken: c!.lockToken });
  expect(done.status).toBe(200);
  return { id: e.id, lockToken: c!.lockToken };
}

describe('GET /api/v1/metrics', () => {
  test('counts, runtimes, heartbeat lag, stale writes, dedup hits, attempts, depth vs workers', async () => {
    await bed();
    const runs = [];
    for (const ms of [1000, 2000, 3000, 4000]) runs.push(await runJob('q', ms));
    // Two stale writes: a completion with another result (the same one again would be a repeat, answered as stored).
    for (let i = 0; i < 2; i++) {
      expect((await t.post(`${api}/jobs/${runs[0]!.id}/complete`, { workerId: 'W', lockToken: runs[0]!.lockToken, result: 'again' })).status).toBe(409);
    }
    // One dedup hit.
    await t.enqueue('q', { payload: {}, idempotencyKey: 'k' });
    expect((await t.post(`${api}/queues/q/jobs`, { payload: {}, idempotencyKey: 'k' })).json.deduplicated).toBe(true);
    // A running job with 7 s of heartbeat lag, and one more ready job.
    const [running] = await t.claim('q', 'B');
    await t.enqueue('q');
    t.clock.advance(7000);

    const m = await metrics();
    const q = m.queues.find((x) => x.queue === 'q')!;
    expect(q.counts).toEqual({ pending: 1, running: 1, completed: 4, failed: 0, cancelled: 0 });
    expect(q.ready).toBe(1);
    expect(q.oldestReadyAgeMs).toBe(7000);
    expect(q.runtime).toEqual({ count: 4, p50Ms: 2000, p95Ms: 4000, p99Ms: 4000, maxMs: 4000 });
    expect(q.running).toMatchObject({ count: 1, expiredLeases: 0, oldestAgeMs: 7000, maxHeartbeatLagMs: 7000, busyWorkers: 1 });
    expect(q.running.heartbeatLagBuckets).toEqual([
      { leMs: 1000, count: 0 },
      { leMs: 5000, count: 0 },
      { leMs: 15000, count: 1 },
      { leMs: 30000, count: 1 },
      { leMs: 60000, count: 1 },
      { leMs: null, count: 1 },
    ]);
    expect(q.staleWritesRejected).toEqual({ total: 2, lastHour: 2, last5m: 2 });
    expect(q.enqueueDeduplicated).toEqual({ total: 1, lastHour: 1, last5m: 1 });
    // Every transition so far, all time: 4 runs + the keyed job + the ready one; 4 + 1 claims.
    expect(q.jobsTotal).toEqual({ enqueued: 6, claimed: 5, completed: 4, failed: 0, cancelled: 0, retried: 0, requeuedExpired: 0, requeuedForced: 0, deadLettered: 0, redriven: 0, snoozed: 0, replaced: 0, debounced: 0 });
    expect(q.duplicateExecutions).toEqual({ total: 0, lastHour: 0, last5m: 0 });
    expect(q.attempts).toEqual({ finished: 4, histogram: [{ attempts: 1, count: 4 }], erroredAttempts: 0, lostAttempts: 0, jobsWithErrors: 0, jobsWithLost: 0 });
    // 4 finished + 1 running claims in the hour.
    expect(q.claimsApprox).toEqual({ lastHour: 5, last5m: 5 });
    // W was last seen 7 s ago, B 7 s ago: both within the 15 s window.
    expect(m.workers).toMatchObject({ active: 2, total: 2 });
    expect(q.running.oldestStartedAt).toBe(m.now - 7000);
    void running;

    // An hour later the windows are empty; the all-time counters stay.
    t.clock.advance(3600_000);
    const later = await queue('q');
    expect(later.runtime).toBeNull();
    expect(later.staleWritesRejected).toEqual({ total: 2, lastHour: 0, last5m: 0 });
    expect(later.attempts.finished).toBe(0);
    expect(later.running.expiredLeases).toBe(1);
    expect((await metrics()).workers.active).toBe(0);

    const prom = await t.get('/metrics');
    expect(prom.status).toBe(200);
    expect(prom.text).toContain('leasehold_stale_writes_rejected_total{queue="q"} 2');
    expect(prom.text).toContain('leasehold_running_jobs_by_heartbeat_lag{queue="q",lag_at_most_seconds="+Inf"} 1');
    expect(prom.text).toContain('leasehold_running_jobs_by_heartbeat_lag{queue="q",lag_at_most_seconds="60"} 0');
    expect(prom.text).toContain('leasehold_stale_writes_rejected_recent{queue="q",window="1h"} 0');
    expect(prom.text).toContain('leasehold_ready_jobs{queue="q"} 1');
    // A snapshot of running jobs goes down as they finish: a gauge, not a histogram, and no `le` label.
    expect(prom.text).toContain('# TYPE leasehold_running_jobs_by_heartbeat_lag gauge');
    expect(prom.text).not.toMatch(/^leasehold_running_jobs_by_heartbeat_lag\{[^}]*\ble=/m);
    // The last hour's percentiles are a gauge too (no `quantile` label; none now, the hour is empty); the all-time runtimes are a histogram.
    expect(prom.text).toContain('# TYPE leasehold_job_runtime_recent_seconds gauge');
    expect(prom.text).not.toContain('quantile=');
    expect(prom.text).toContain('# TYPE leasehold_job_runtime_seconds histogram');
    expect(prom.text).toContain('leasehold_job_runtime_seconds_bucket{queue="q",le="1"} 1');
    expect(prom.text).toContain('leasehold_job_runtime_seconds_bucket{queue="q",le="2.5"} 2');
    expect(prom.text).toContain('leasehold_job_runtime_seconds_bucket{queue="q",le="+Inf"} 4');
    expect(prom.text).toContain('leasehold_job_runtime_seconds_sum{queue="q"} 10');
    expect(prom.text).toContain('leasehold_job_runtime_seconds_count{queue="q"} 4');
    // The running job has not heartbeated for over an hour, but its worker B
    // looks dead too: that is the reaper's business, not a heartbeat_lag page.
    expect(later.running).toMatchObject({ ownerAliveJobs: 0, ownerGoneJobs: 1, lateJobs: 0 });
    expect(prom.text).toContain('leasehold_alert_firing{queue="q",alert="heartbeat_lag"} 0');
    expect(prom.text).toContain('leasehold_alert_firing{queue="q",alert="enqueue_dedup_rate"} 0');
    expect(t.errors).toEqual([]);
  });

  test('reaps by reason per window, lost attempts, and runtime percentiles per queue', async () => {
    await bed();
    await runJob('fast', 500);
    const e = await t.enqueue('slow');
    await t.claim('slow', 'A');
    t.clock.advance(PAST_LEASE_OWNER_DEAD);
    expect((await t.post(`${api}/reaper/run`)).json.requeued).toEqual([{ id: e.id, reason: 'reaped_due_to_expired_lease' }]);
    t.clock.advance(60_000);
    const [c] = await t.claim('slow', 'B');
    t.clock.advance(2000);
    expect((await t.post(`${api}/jobs/${e.id}/complete`, { workerId: 'B', lockToken: c!.lockToken })).status).toBe(200);

    const m = await metrics();
    const slow = m.queues.find((x) => x.queue === 'slow')!;
    const fast = m.queues.find((x) => x.queue === 'fast')!;
    // Every known reason is there, 0 when it never happened.
    const none = { total: 0, lastHour: 0, last5m: 0 };
    expect(slow.reaped).toEqual({
      attempts_exhausted: none,
      deadline_exceeded: none,
      lost_too_many_times: none,
      owner_gone: none,
      reaped_due_to_expired_lease: { total: 1, lastHour: 1, last5m: 1 },
    });
    expect(slow.reapedTotal).toEqual({ total: 1, lastHour: 1, last5m: 1 });
    expect(slow.attempts).toMatchObject({ finished: 1, histogram: [{ attempts: 2, count: 1 }], lostAttempts: 1, jobsWithLost: 1, erroredAttempts: 0 });
    expect(slow.runtime).toMatchObject({ count: 1, p50Ms: 2000, p99Ms: 2000 });
    expect(fast.runtime).toMatchObject({ count: 1, p50Ms: 500, p99Ms: 500 });
    expect(fast.reapedTotal.total).toBe(0);

    t.clock.advance(5 * 60_000);
    expect((await queue('slow')).reaped.reaped_due_to_expired_lease).toEqual({ total: 1, lastHour: 1, last5m: 0 });
    expect(t.errors).toEqual([]);
  });
});

describe('GET /api/v1/alerts', () => {
  test('all ok on a quiet queue', async () => {
    await bed();
    await runJob('q', 1000);
    const res = await alerts();
    expect(res.firing).toBe(0);
    expect(res.alerts.filter((a) => a.queue === 'q').map((a) => a.name).sort()).toEqual(
      ['duplicate_executions', 'enqueue_dedup_rate', 'heartbeat_lag', 'long_running', 'pending_backlog', 'reaper_burst', 'stale_write_rate', 'stalled_jobs'],
    );
    expect(res.alerts.every((a) => a.state === 'ok')).toBe(true);
  });

  test("heartbeat lag fires when a live worker's jobs are late past 3 heartbeat intervals, names them, and clears on a heartbeat", async () => {
    await bed();
    const e = await t.enqueue('q');
    const [c] = await t.claim('q', 'A');
    t.clock.advance(15_000);
    expect((await t.post(`${api}/workers/beat`, { workerId: 'A' })).status).toBe(200);
    expect(await alert('q', 'heartbeat_lag')).toMatchObject({ state: 'ok', value: 0, threshold: 2, unit: 'count' });
    t.clock.advance(1);
    // One late job of A's one: 100% of the live workers' running jobs.
    const firing = await alert('q', 'heartbeat_lag');
    expect(firing).toMatchObject({ state: 'firing', value: 1, threshold: 2, unit: 'count' });
    expect(firing.message).toBe(`1 of 1 running jobs of live workers (100%) have not heartbeated for over 15000 ms (3 heartbeat intervals): jobs ${e.id}`);
    expect((await t.post(`${api}/jobs/${e.id}/heartbeat`, { workerId: 'A', lockToken: c!.lockToken })).status).toBe(200);
    expect(await alert('q', 'heartbeat_lag')).toMatchObject({ state: 'ok', value: 0 });
  });

  test('long running: beyond max(3 x p99, lease) while heartbeating', async () => {
    await bed();
    await runJob('q', 4000); // p99 4 s: threshold max(12 s, 30 s lease) = 30 s
    const e = await t.enqueue('q');
    const [c] = await t.claim('q', 'A');
    for (let i = 0; i < 6; i++) {
      t.clock.advance(5000);
      expect((await t.post(`${api}/jobs/${e.id}/heartbeat`, { workerId: 'A', lockToken: c!.lockToken })).status).toBe(200);
    }
    expect(await alert('q', 'long_running')).toMatchObject({ state: 'ok', value: 30_000, threshold: 30_000 });
    t.clock.advance(1000);
    expect(await alert('q', 'long_running')).toMatchObject({ state: 'firing', value: 31_000, threshold: 30_000 });
    expect(await alert('q', 'heartbeat_lag')).toMatchObject({ state: 'ok' });
  });

  test('reaper burst: more than 10 reaps in 5 minutes fires, and clears when the window passes', async () => {
    await bed();
    for (let i = 0; i < 11; i++) await t.enqueue('q');
    expect(await t.claim('q', 'A', { limit: 11 })).toHaveLength(11);
    t.clock.advance(PAST_LEASE_OWNER_DEAD);
    expect((await t.post(`${api}/reaper/run`)).json.requeued).toHaveLength(11);
    expect(await alert('q', 'reaper_burst')).toMatchObject({ state: 'firing', value: 11, threshold: 10 });
    t.clock.advance(5 * 60_000 + 1);
    expect(await alert('q', 'reaper_burst')).toMatchObject({ state: 'ok', value: 0 });
  });

  test('stale-write and dedup rates: a burst in 5 minutes fires against a quiet hour', async () => {
    await bed();
    const run = await runJob('q', 100);
    await t.enqueue('q', { payload: {}, idempotencyKey: 'k' });
    for (let i = 0; i < 4; i++) {
      expect((await t.post(`${api}/jobs/${run.id}/complete`, { workerId: 'W', lockToken: run.lockToken, result: 'again' })).status).toBe(409);
      await t.post(`${api}/queues/q/jobs`, { payload: {}, idempotencyKey: 'k' });
    }
    // 4 in 5 minutes: below the minimum of 5.
    expect(await alert('q', 'stale_write_rate')).toMatchObject({ state: 'ok' });
    expect(await alert('q', 'enqueue_dedup_rate')).toMatchObject({ state: 'ok' });
    expect((await t.post(`${api}/jobs/${run.id}/complete`, { workerId: 'W', lockToken: run.lockToken, result: 'again' })).status).toBe(409);
    await t.post(`${api}/queues/q/jobs`, { payload: {}, idempotencyKey: 'k' });
    expect(await alert('q', 'stale_write_rate')).toMatchObject({ state: 'firing', value: 1 });
    expect(await alert('q', 'enqueue_dedup_rate')).toMatchObject({ state: 'firing', value: 1 });
    // Ten minutes on the same events are the hour's baseline, not a rise.
    t.clock.advance(10 * 60_000);
    expect(await alert('q', 'stale_write_rate')).toMatchObject({ state: 'ok', value: 0 });
    // Only the backlog: the deduplicated job has waited 10 minutes and nobody consumes q.
    expect((await alerts()).alerts.filter((a) => a.state === 'firing').map((a) => a.name)).toEqual(['pending_backlog']);
  });

  test('pending backlog fires past its age unless the queue is paused, and says whether anyone consumes it', async () => {
    await bed();
    await t.enqueue('q');
    t.clock.advance(60_000);
    expect(await alert('q', 'pending_backlog')).toMatchObject({ state: 'ok', value: 60_000, message: expect.stringContaining('nobody consumes this queue') });
    t.clock.advance(1_000);
    expect(await alert('q', 'pending_backlog')).toMatchObject({
      state: 'firing',
      value: 61_000,
      message: '1 ready jobs, the oldest waiting 61000 ms: nobody consumes this queue: no live worker reports it or holds one of its jobs (no worker looks alive at all)',
    });
    expect((await t.post(`${api}/workers/beat`, { workerId: 'A', queues: ['q'] })).status).toBe(200);
    expect(await alert('q', 'pending_backlog')).toMatchObject({
      state: 'firing',
      value: 61_000,
      threshold: 60_000,
      message: '1 ready jobs, the oldest waiting 61000 ms, while 1 workers serving this queue look alive',
    });
    expect((await t.post(`${api}/queues/q/pause`)).status).toBe(200);
    expect(await alert('q', 'pending_backlog')).toMatchObject({ state: 'ok' });
  });
});

describe('per-queue alert thresholds: PUT /api/v1/queues/:queue/alerts', () => {
  test("a queue's own threshold changes when its alert fires; other queues keep the server's", async () => {
    await bed();
    for (const q of ['slow', 'fast']) {
      await t.enqueue(q);
      await t.claim(q, 'A');
    }
    t.clock.advance(20_000); // lag 20 s: over 3 x 5 s, under 5 x 5 s
    expect((await t.post(`${api}/workers/beat`, { workerId: 'A' })).status).toBe(200);
    expect(await alert('slow', 'heartbeat_lag')).toMatchObject({ state: 'firing', value: 1, message: expect.stringContaining('over 15000 ms') });
    const res = await t.call('PUT', `${api}/queues/slow/alerts`, { heartbeatLagFactor: 5, pendingAgeMs: 300_000 });
    expect(res.status).toBe(200);
    expect(res.json.queue.alertOverrides).toEqual({ heartbeatLagFactor: 5, pendingAgeMs: 300_000 });
    expect(res.json.queue.alertThresholds).toMatchObject({ heartbeatLagFactor: 5, pendingAgeMs: 300_000, reapsPer5m: 10 });
    expect(await alert('slow', 'heartbeat_lag')).toMatchObject({ state: 'ok', value: 0, overridden: ['heartbeatLagFactor'] });
    expect(await alert('slow', 'reaper_burst')).toMatchObject({ overridden: [] });
    expect(await alert('fast', 'heartbeat_lag')).toMatchObject({ state: 'firing', value: 1, overridden: [] });
    // The queue's view shows them; {} goes back to the server's.
    expect((await t.get(`${api}/queues/slow`)).json.queue.alertOverrides).toEqual({ heartbeatLagFactor: 5, pendingAgeMs: 300_000 });
    expect((await t.call('PUT', `${api}/queues/slow/alerts`, {})).json.queue.alertOverrides).toEqual({});
    expect(await alert('slow', 'heartbeat_lag')).toMatchObject({ state: 'firing', message: expect.stringContaining('over 15000 ms') });
  });

  test('bad thresholds are a 400 naming the field, and change nothing', async () => {
    await bed();
    await t.enqueue('q');
    expect((await t.call('PUT', `${api}/queues/q/alerts`, { reapsPer5m: 20 })).status).toBe(200);
    for (const [body, field, message] of [
      [{ heartbeatLagFactor: 0.5 }, 'heartbeatLagFactor', /between 1 and 1000/],
      [{ reapsPer5m: 2.5 }, 'reapsPer5m', /whole number/],
      [{ reapClaimRatio: 2 }, 'reapClaimRatio', /between 0.001 and 1/],
      [{ pendingAgeMs: '60000' }, 'pendingAgeMs', /must be a whole number, got string/],
      [{ heartbeatLagFactr: 5 }, 'heartbeatLagFactr', /not a known field/],
      [{ constructor: 5 }, 'constructor', /not a known field/], // an Object.prototype name is no field either
      [[], 'body', /JSON object/],
    ] as const) {
      const res = await t.call('PUT', `${api}/queues/q/alerts`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.error).toMatchObject({ code: 'invalid_request', field });
      expect(res.json.error.message).toMatch(message);
    }
    expect((await t.get(`${api}/queues/q`)).json.queue.alertOverrides).toEqual({ reapsPer5m: 20 });
  });
});

describe('GET /api/v1/tuning', () => {
  test('defaults with nothing observed: current values kept, no flags', async () => {
    await bed();
    await t.enqueue('q');
    const q = await tuning('q');
    expect(q).toMatchObject({
      current: { leaseMs: 30_000, heartbeatMs: 5_000, graceMs: 10_000 },
      recommended: { leaseMs: 30_000, heartbeatMs: 5_000, graceMs: 10_000 },
      confidence: 'none',
      flags: [],
    });
  });

  test('settings that break the rules are flagged (the server rules, by field)', async () => {
    await bed({ heartbeatMs: 20_000, graceMs: 5_000 });
    await t.enqueue('q');
    const q = await tuning('q');
    const bySetting = (s: string) => q.flags.filter((f: any) => f.setting === s);
    expect(bySetting('heartbeatMs')).toEqual([expect.objectContaining({ severity: 'error', rule: expect.stringContaining('at most half the lease') })]);
    expect(bySetting('graceMs').map((f: any) => f.severity)).toEqual(['error', 'warning']);
    expect(bySetting('leaseMs').length).toBe(1); // 2 x the 20 s delay is over the lease
  });

  test('a per-queue heartbeat above a third of the lease is a warning', async () => {
    await bed();
    expect((await t.call('PATCH', `${api}/queues/q/settings`, { heartbeatMs: 12_000, graceMs: 12_000 })).status).toBe(200);
    const q = await tuning('q');
    expect(q.current).toEqual({ leaseMs: 30_000, heartbeatMs: 12_000, graceMs: 12_000 });
    expect(q.flags).toEqual([
      expect.objectContaining({ setting: 'heartbeatMs', severity: 'warning' }),
      expect.objectContaining({ setting: 'graceMs', severity: 'warning' }), // 12 s < 12 s + 1 s skew
    ]);
  });

  test('observed heartbeat delay and reaper deferrals raise the recommended lease and grace', async () => {
    await bed();
    await t.enqueue('q');
    await t.claim('q', 'A');
    t.clock.advance(25_000);
    // A still beats (its job's heartbeats are what is late): a healthy job to learn from.
    expect((await t.post(`${api}/workers/beat`, { workerId: 'A' })).status).toBe(200);
    let q = await tuning('q');
    expect(q.observed).toMatchObject({ maxHeartbeatLagMs: 25_000, heartbeatDelayMs: 25_000, heartbeatJitterMs: 20_000, reapDeferredLastHour: 0 });
    expect(q.recommended).toEqual({ leaseMs: 75_000, heartbeatMs: 5_000, graceMs: 26_000 });
    expect(q.flags.map((f: any) => f.setting).sort()).toEqual(['graceMs', 'leaseMs']);

    // Past lease + grace while the owner still beats: the reaper defers.
    t.clock.advance(16_000);
    expect((await t.post(`${api}/workers/beat`, { workerId: 'A' })).status).toBe(200);
    expect((await t.post(`${api}/reaper/run`)).json.deferred).toHaveLength(1);
    q = await tuning('q');
    expect(q.observed.reapDeferredLastHour).toBe(1);
    expect(q.flags.some((f: any) => f.setting === 'leaseMs' && /owners were alive/.test(f.rule))).toBe(true);
    expect(q.recommended.leaseMs).toBe(123_000); // 3 x the 41 s lag
    const m = await queue('q');
    expect(m.reapDeferred).toEqual({ total: 1, lastHour: 1, last5m: 1 });
  });
});
