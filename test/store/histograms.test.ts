/**
 * The durable histograms (drizzle/0022, src/core/histograms.ts) on a libSQL
 * file, beyond the conformance suite: the triggers' bucket bounds are the
 * ones /metrics reports (a value at each bound and one ms past it lands
 * where the bounds say, for all three histograms), /metrics sums the stored
 * per-bucket counts into cumulative series, and two servers on one database
 * count each observation once.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { HISTOGRAMS, type HistogramName } from '../../src/core/histograms.ts';
import { silentLogger } from '../../src/core/log.ts';
import { createStore } from '../../src/db/store/create-store.ts';
import { openLibsql } from '../../src/runtime/libsql.ts';
import { setup, type TestBed, appOn } from '../support/helpers.ts';

let t: TestBed;
afterEach(() => t?.close());

const api = '/api/v1';

/** The values to drive through each histogram: 0, every bound, and one ms past every bound. */
const valuesFor = (name: HistogramName) => [0, ...HISTOGRAMS[name].boundsMs.flatMap((b) => [b, b + 1])];

/** What the buckets must say for `values`: cumulative counts per bound, by plain arithmetic (not by the SQL under test). */
function expected(name: HistogramName, values: number[]) {
  const bounds = HISTOGRAMS[name].boundsMs;
  return {
    count: values.length,
    sumMs: values.reduce((s, v) => s + v, 0),
    buckets: [...bounds.map((leMs) => ({ leMs, count: values.filter((v) => v <= leMs).length })), { leMs: null, count: values.length }],
  };
}

/** Every sample of /metrics as "name{labels}" -> value. */
async function scrape(app = t.app): Promise<Map<string, number>> {
  const res = await app.request('/metrics');
  expect(res.status).toBe(200);
  const samples = new Map<string, number>();
  for (const line of (await res.text()).split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

describe('bucket bounds: the triggers and /metrics agree', () => {
  test('run time, queue wait and renewal interval: each value at a bound counts in it, one ms past it in the next', async () => {
    t = await setup();
    const store = createStore(t.db);
    const d = t.config;
    const T0 = t.clock.now();

    // Run time: every job claimed at T0, each completed `v` ms later.
    const runtimes = valuesFor('runtime');
    await store.jobsInsert({ queue: 'run', jobs: runtimes.map(() => ({ payload: {} })), actor: null, now: T0, defaults: d });
    const running = await store.jobsClaimPending({ queue: 'run', workerId: 'w', limit: runtimes.length, now: T0, defaults: d });
    expect(running).toHaveLength(runtimes.length);
    for (const [i, v] of runtimes.entries()) {
      const [o] = await store.jobsCompleteIfOwned({ workerId: 'w', results: [{ id: running[i]!.id, lockToken: running[i]!.lock_token!, data: null }], now: T0 + v });
      expect(o!.ok).toBe(true);
    }

    // Queue wait: every job enqueued at T0, the next one claimed at T0 + v (ascending, so claims take them in order).
    const waits = valuesFor('queue_wait');
    await store.jobsInsert({ queue: 'wait', jobs: waits.map(() => ({ payload: {} })), actor: null, now: T0, defaults: d });
    for (const v of waits) expect(await store.jobsClaimPending({ queue: 'wait', workerId: 'w', limit: 1, now: T0 + v, defaults: d })).toHaveLength(1);

    // Renewal interval: every job claimed at T0, each renewed once, `v` ms later (a lease long enough for all of them).
    const intervals = valuesFor('heartbeat_interval');
    await store.jobsInsert({ queue: 'beat', jobs: intervals.map(() => ({ payload: {} })), actor: null, now: T0, defaults: d });
    const beating = await store.jobsClaimPending({ queue: 'beat', workerId: 'w', limit: intervals.length, leaseMs: 3_600_000, now: T0, defaults: d });
    for (const [i, v] of intervals.entries()) {
      const [o] = await store.jobsHeartbeatIfOwned({ workerId: 'w', leases: [{ id: beating[i]!.id, lockToken: beating[i]!.lock_token! }], now: T0 + v });
      expect(o!.ok).toBe(true);
    }

    const snapshot = await store.metricsSnapshot({ now: T0 + 4 * 3_600_000, config: t.config });
    const of = (queue: string) => snapshot.queues.find((q) => q.queue === queue)!.histograms;
    expect(of('run').runtime).toEqual(expected('runtime', runtimes));
    expect(of('wait').queue_wait).toEqual(expected('queue_wait', waits));
    expect(of('beat').heartbeat_interval).toEqual(expected('heartbeat_interval', intervals));
    // Stored per bucket, not cumulative: the first bucket holds 0 and its bound, every
    // other one its bound and one past the bound below; +Inf one past the largest.
    const rows = await t.client.execute(`SELECT le_ms, count FROM histogram_buckets WHERE queue_name = 'run' AND name = 'runtime' ORDER BY le_ms`);
    expect(rows.rows.map((r) => [Number(r.le_ms), Number(r.count)])).toEqual([...HISTOGRAMS.runtime.boundsMs.map((b) => [b, 2]), [Number.MAX_SAFE_INTEGER, 1]]);

    // /metrics: the same, cumulative, in seconds.
    const s = await scrape();
    const bounds = HISTOGRAMS.runtime.boundsMs;
    for (const b of bounds) {
      expect([b, s.get(`leasehold_job_runtime_seconds_bucket{queue="run",le="${b / 1000}"}`)]).toEqual([b, runtimes.filter((v) => v <= b).length]);
    }
    expect(s.get('leasehold_job_runtime_seconds_bucket{queue="run",le="+Inf"}')).toBe(runtimes.length);
    expect(s.get('leasehold_job_runtime_seconds_count{queue="run"}')).toBe(runtimes.length);
    expect(s.get('leasehold_job_runtime_seconds_sum{queue="run"}')).toBeCloseTo(runtimes.reduce((a, v) => a + v, 0) / 1000, 6);
    expect(s.get('leasehold_job_queue_wait_seconds_count{queue="wait"}')).toBe(waits.length);
    expect(s.get('leasehold_heartbeat_interval_seconds_bucket{queue="beat",le="7.5"}')).toBe(intervals.filter((v) => v <= 7_500).length);
    expect(s.get('leasehold_heartbeat_interval_seconds_count{queue="beat"}')).toBe(intervals.length);
    // Only the queue each observation belongs to.
    expect(s.get('leasehold_job_runtime_seconds_count{queue="beat"}')).toBe(0);
    expect(s.get('leasehold_heartbeat_interval_seconds_count{queue="run"}')).toBe(0);
    expect(t.errors).toEqual([]);
  });
});

describe('a batch counts each of its jobs once, in its own bucket', () => {
  test('one claim of jobs that waited for different times; sent again, it counts nothing more', async () => {
    t = await setup();
    const store = createStore(t.db);
    const d = t.config;
    const T0 = t.clock.now() as number;
    const waits = valuesFor('queue_wait');
    const claimAt = T0 + waits.at(-1)!;
    // Job i is enqueued `waits[i]` ms before the one claim that takes them all.
    for (const v of waits) await store.jobsInsert({ queue: 'b', jobs: [{ payload: { v } }], actor: null, now: claimAt - v, defaults: d });
    const claim = { queue: 'b', workerId: 'w', limit: waits.length, claimId: 'c1', now: claimAt, defaults: d };
    expect(await store.jobsClaimPending(claim)).toHaveLength(waits.length);
    expect(await store.jobsClaimPending(claim)).toHaveLength(waits.length);
    const snapshot = await store.metricsSnapshot({ now: claimAt, config: t.config });
    expect(snapshot.queues.find((q) => q.queue === 'b')!.histograms.queue_wait).toEqual(expected('queue_wait', waits));
    expect(t.errors).toEqual([]);
  });

  test('a claim id used again after its jobs passed their deadline: the new claim counts only the jobs it took', async () => {
    t = await setup();
    const store = createStore(t.db);
    const d = t.config;
    const T0 = t.clock.now() as number;
    await store.jobsInsert({ queue: 'b', jobs: [{ payload: 1, timeoutMs: 1_000 }, { payload: 2 }], actor: null, now: T0, defaults: d });
    const claim = { queue: 'b', workerId: 'w', limit: 1, claimId: 'c1', leaseMs: 60_000, defaults: d };
    expect(await store.jobsClaimPending({ ...claim, now: T0 + 10 })).toHaveLength(1);
    // Past the first job's deadline (still running, lease unexpired), the id is not a replay: a new job is taken.
    const [second] = await store.jobsClaimPending({ ...claim, now: T0 + 2_000 });
    expect(second?.payload).toBe('2');
    const snapshot = await store.metricsSnapshot({ now: T0 + 2_000, config: t.config });
    expect(snapshot.queues.find((q) => q.queue === 'b')!.histograms.queue_wait).toEqual(expected('queue_wait', [10, 2_000]));
    expect(t.errors).toEqual([]);
  });

  test('one completion of jobs that ran for different times, naming one twice, beside a stale ref', async () => {
    t = await setup();
    const store = createStore(t.db);
    const d = t.config;
    const T0 = t.clock.now() as number;
    const runtimes = valuesFor('runtime').reverse();
    const doneAt = T0 + runtimes[0]!;
    await store.jobsInsert({ queue: 'b', jobs: [...runtimes, 0].map(() => ({ payload: {} })), actor: null, now: T0, defaults: d });
    // Job i is claimed `runtimes[i]` ms before the one completion (longest first), and never renewed.
    const held = [];
    for (const v of runtimes) held.push(...(await store.jobsClaimPending({ queue: 'b', workerId: 'w', limit: 1, leaseMs: 10 * 3_600_000, now: doneAt - v, defaults: d })));
    const [other] = await store.jobsClaimPending({ queue: 'b', workerId: 'w', limit: 1, leaseMs: 10 * 3_600_000, now: doneAt, defaults: d });
    const results = held.map((j) => ({ id: j.id, lockToken: j.lock_token!, data: null }));
    const outcomes = await store.jobsCompleteIfOwned({ workerId: 'w', results: [...results, results[0]!, { id: other!.id, lockToken: 'stale', data: null }], now: doneAt });
    expect(outcomes.map((o) => o.ok)).toEqual([...results.map(() => true), true, false]);

    const snapshot = await store.metricsSnapshot({ now: doneAt, config: t.config });
    expect(snapshot.queues.find((q) => q.queue === 'b')!.histograms.runtime).toEqual(expected('runtime', runtimes));
    const rows = async (sql: string) => (await t.client.execute(sql)).rows.map((r) => Object.values(r).map(Number));
    expect(await rows(`SELECT sum(completed) FROM queue_minutes WHERE queue_name = 'b'`)).toEqual([[runtimes.length]]);
    // Never renewed: each attempt's silence is its run time, in attempt_silences' steps.
    const step = (s: number) => (s <= 60_000 ? Math.ceil(s / 250) * 250 : s <= 600_000 ? Math.ceil(s / 5_000) * 5_000 : Number.MAX_SAFE_INTEGER);
    const steps = new Map<number, number>();
    for (const v of runtimes) steps.set(step(v), (steps.get(step(v)) ?? 0) + 1);
    expect(await rows(`SELECT silence_ms, sum(attempts) FROM attempt_silences WHERE queue_name = 'b' GROUP BY silence_ms ORDER BY silence_ms`)).toEqual(
      [...steps].sort((a, b) => a[0] - b[0]),
    );
    expect(t.errors).toEqual([]);
  });
});

describe('a renewal counts each of its jobs once, in its own bucket', () => {
  test('one heartbeat of jobs last renewed at different times, naming one twice, beside a stale ref', async () => {
    t = await setup();
    const store = createStore(t.db);
    const d = t.config;
    const T0 = t.clock.now() as number;
    const intervals = valuesFor('heartbeat_interval').reverse();
    const beatAt = T0 + intervals[0]!;
    await store.jobsInsert({ queue: 'b', jobs: [...intervals, 0].map(() => ({ payload: {} })), actor: null, now: T0, defaults: d });
    // Job i is claimed `intervals[i]` ms before the one heartbeat (longest first): its first renewal's interval counts from its claim.
    const held = [];
    for (const v of intervals) held.push(...(await store.jobsClaimPending({ queue: 'b', workerId: 'w', limit: 1, leaseMs: 10 * 3_600_000, now: beatAt - v, defaults: d })));
    const [other] = await store.jobsClaimPending({ queue: 'b', workerId: 'w', limit: 1, leaseMs: 10 * 3_600_000, now: beatAt, defaults: d });
    const leases = held.map((j) => ({ id: j.id, lockToken: j.lock_token! }));
    const outcomes = await store.jobsHeartbeatIfOwned({ workerId: 'w', leases: [...leases, leases[0]!, { id: other!.id, lockToken: 'stale' }], now: beatAt });
    expect(outcomes.map((o) => o.ok)).toEqual([...leases.map(() => true), true, false]);
    const snapshot = await store.metricsSnapshot({ now: beatAt, config: t.config });
    expect(snapshot.queues.find((q) => q.queue === 'b')!.histograms.heartbeat_interval).toEqual(expected('heartbeat_interval', intervals));
    expect(t.errors).toEqual([]);
  });
});

describe('several servers on one database', () => {
  test('two apps on one file: each claim, renewal and completion counted once, and both scrape the same histograms', async () => {
    t = await setup();
    const second = await openLibsql(t.url);
    try {
      // A second server on the same database (its own connection), on the same clock.
      const other = appOn({ db: second.db, config: t.config, clock: t.clock, log: silentLogger });
      const post = async (app: typeof t.app, path: string, body: unknown) => {
        const res = await app.request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
        expect(res.status).toBeLessThan(300);
        return (await res.json()) as any;
      };
      const apps = [t.app, other];
      for (let i = 0; i < 6; i++) await post(apps[i % 2]!, `${api}/queues/q/jobs`, { payload: { i } });
      t.clock.advance(1_500);
      // Each server claims three, renews them through the other server, completes them through its own.
      const claimed = [await post(t.app, `${api}/queues/q/claim`, { workerId: 'A', limit: 3 }), await post(other, `${api}/queues/q/claim`, { workerId: 'B', limit: 3 })];
      t.clock.advance(4_000);
      await post(other, `${api}/heartbeats`, { workerId: 'A', leases: claimed[0].jobs.map((j: any) => ({ id: j.id, lockToken: j.lockToken })) });
      await post(t.app, `${api}/heartbeats`, { workerId: 'B', leases: claimed[1].jobs.map((j: any) => ({ id: j.id, lockToken: j.lockToken })) });
      t.clock.advance(2_000);
      for (const [i, worker] of ['A', 'B'].entries()) {
        for (const j of claimed[i].jobs) await post(apps[i]!, `${api}/jobs/${j.id}/complete`, { workerId: worker, lockToken: j.lockToken });
      }

      for (const app of apps) {
        const s = await scrape(app);
        expect(s.get('leasehold_job_queue_wait_seconds_count{queue="q"}')).toBe(6);
        expect(s.get('leasehold_job_queue_wait_seconds_bucket{queue="q",le="2.5"}')).toBe(6);
        expect(s.get('leasehold_job_queue_wait_seconds_sum{queue="q"}')).toBe(6 * 1.5);
        expect(s.get('leasehold_heartbeat_interval_seconds_count{queue="q"}')).toBe(6);
        expect(s.get('leasehold_heartbeat_interval_seconds_bucket{queue="q",le="3"}')).toBe(0);
        expect(s.get('leasehold_heartbeat_interval_seconds_bucket{queue="q",le="5"}')).toBe(6);
        expect(s.get('leasehold_job_runtime_seconds_count{queue="q"}')).toBe(6);
        expect(s.get('leasehold_job_runtime_seconds_sum{queue="q"}')).toBe(6 * 6);
        expect(s.get('leasehold_jobs_completed_total{queue="q"}')).toBe(6);
      }
    } finally {
      second.close();
    }
    expect(t.errors).toEqual([]);
  });
});
