/**
 * Liveness points at the right cause: liveness is per
 * worker process (a restarted worker reusing its id does not keep its
 * predecessor's orphans alive; restarts are counted), deferred candidates do
 * not use up the reaper's batch, heartbeat_lag pages for late jobs of live
 * workers (not for one dead worker's job), pending_backlog looks at the
 * workers that serve the queue, and tuning learns from healthy jobs only.
 */
import { afterEach, describe, expect, test } from 'vitest';
import type { Config } from '../../src/core/config.ts';
import { runMaintenancePass } from '../../src/maintenance/pass.ts';
import { createWorker, httpTransport } from '../../src/worker/index.ts';
import { setup, type TestBed } from '../support/helpers.ts';
import { until } from '../support/until.ts';

let t: TestBed;
async function bed(overrides: Partial<Config> = {}) {
  t = await setup(overrides);
  return t;
}
afterEach(() => t?.close());

const api = '/api/v1';

const beat = async (workerId: string, extra: Record<string, unknown> = {}) => {
  const res = await t.post(`${api}/workers/beat`, { workerId, ...extra });
  expect(res.status, res.text).toBe(200);
};

async function workerRow(id: string) {
  const rows = (await t.client.execute({ sql: 'SELECT instance_id, restarts, started_at FROM workers WHERE id = ?', args: [id] })).rows;
  return rows[0] as unknown as { instance_id: string | null; restarts: number; started_at: number } | undefined;
}

async function jobStatus(id: string) {
  return (await t.get(`${api}/jobs/${id}`)).json.job.status as string;
}

describe('liveness is per worker process', () => {
  // Defaults: lease 30 s, grace 10 s, a worker seen within 15 s is alive, the reaper waits up to 30 s for a live owner.
  test("a restarted worker reusing its id does not keep its predecessor's orphan alive", async () => {
    await bed();
    const orphan = await t.enqueue('q');
    await beat('w1', { instanceId: 'first-process' });
    const [c] = await t.claim('q', 'w1', { instanceId: 'first-process' });
    expect(c!.id).toBe(orphan.id);
    // The first process dies (SIGKILL); the supervisor restarts it under the same id.
    t.clock.advance(20_000);
    await beat('w1', { instanceId: 'second-process' });
    t.clock.advance(20_001);
    await beat('w1', { instanceId: 'second-process' });
    // Lease + grace passed, and the id is alive, but not the process that claimed the job.
    const report = await runMaintenancePass(t.db, t.clock.now(), t.config);
    expect(report.deferred).toEqual([]);
    expect(report.requeued).toEqual([{ id: orphan.id, reason: 'reaped_due_to_expired_lease' }]);
    expect(await jobStatus(orphan.id)).toBe('pending');
  });

  test('the same process beating keeps its late job deferred, as before', async () => {
    await bed();
    const j = await t.enqueue('q');
    await t.claim('q', 'w1', { instanceId: 'p1' });
    t.clock.advance(40_001);
    await beat('w1', { instanceId: 'p1' });
    const report = await runMaintenancePass(t.db, t.clock.now(), t.config);
    expect(report.deferred.map((d) => d.id)).toEqual([j.id]);
    expect(report.requeued).toEqual([]);
  });

  test('a worker that sends no instance id (an older SDK) keeps per-id liveness', async () => {
    await bed();
    const j = await t.enqueue('q');
    await t.claim('q', 'w1');
    t.clock.advance(40_001);
    await beat('w1', { instanceId: 'whatever' });
    const report = await runMaintenancePass(t.db, t.clock.now(), t.config);
    expect(report.deferred.map((d) => d.id)).toEqual([j.id]);
  });

  test('a claim riding on completions stores the instance too', async () => {
    await bed();
    const first = await t.enqueue('q');
    const second = await t.enqueue('q');
    const [c] = await t.claim('q', 'w1', { instanceId: 'p1' });
    expect(c!.id).toBe(first.id);
    const done = await t.post(`${api}/completions`, { workerId: 'w1', instanceId: 'p1', results: [{ id: c!.id, lockToken: c!.lockToken }], claim: { queue: 'q', limit: 1 } });
    expect(done.status, done.text).toBe(200);
    expect(done.json.jobs.map((x: { id: string }) => x.id)).toEqual([second.id]);
    const row = (await t.client.execute({ sql: 'SELECT locked_by_instance FROM jobs WHERE id = ?', args: [Number(second.id)] })).rows[0]!;
    expect(row.locked_by_instance).toBe('p1');
    // Clearing the lease clears the instance with it.
    expect((await t.post(`${api}/jobs/${second.id}/complete`, { workerId: 'w1', lockToken: done.json.jobs[0].lockToken })).status).toBe(200);
    expect((await t.client.execute({ sql: 'SELECT locked_by_instance FROM jobs WHERE id = ?', args: [Number(second.id)] })).rows[0]!.locked_by_instance).toBeNull();
  });

  test('the SDK sends a new instance id per start, with its beats and claims', async () => {
    await bed();
    const j = await t.enqueue('q');
    const transport = httpTransport({ url: 'http://127.0.0.1', fetch: (async (input: string, init?: RequestInit) => t.app.request(input, init)) as typeof fetch });
    const quiet = { info() {}, warn() {}, error() {} };
    let release: () => void = () => {};
    const held = new Promise<void>((r) => (release = r));
    const first = createWorker({ transport, queue: 'q', workerId: 'w1', pollMs: 10, handleSignals: false, logger: quiet, handler: () => held });
    first.start();
    const claimedBy = await until('the first worker claims the job', async () => (await t.client.execute({ sql: 'SELECT locked_by_instance FROM jobs WHERE id = ?', args: [Number(j.id)] })).rows[0]!.locked_by_instance as string | null);
    expect(claimedBy).toBe(first.instanceId);
    expect(claimedBy).toMatch(/^[0-9a-f]{16}$/);
    expect(await workerRow('w1')).toMatchObject({ instance_id: claimedBy, restarts: 0 });
    // A second process under the same id (the first one's successor).
    const second = createWorker({ transport, queue: 'q', workerId: 'w1', pollMs: 10, handleSignals: false, logger: quiet, handler: () => undefined });
    second.start();
    await until('the second process takes over the id', async () => (await workerRow('w1'))?.restarts === 1);
    expect((await workerRow('w1'))!.instance_id).toBe(second.instanceId);
    expect(second.instanceId).not.toBe(first.instanceId);
    release();
    await Promise.all([first.close(), second.close()]);
  });

  test('restarts are counted per worker id and shown on the workers page', async () => {
    await bed();
    await beat('w1', { instanceId: 'p1' });
    await beat('w1', { instanceId: 'p1' });
    await beat('w1'); // no instance: not a restart
    expect(await workerRow('w1')).toMatchObject({ instance_id: 'p1', restarts: 0 });
    t.clock.advance(5_000);
    await beat('w1', { instanceId: 'p2' });
    expect(await workerRow('w1')).toMatchObject({ instance_id: 'p2', restarts: 1, started_at: t.clock.now() });
    // A claim from yet another process is a restart as well.
    await t.enqueue('q');
    await t.claim('q', 'w1', { instanceId: 'p3' });
    expect(await workerRow('w1')).toMatchObject({ instance_id: 'p3', restarts: 2 });

    const html = (await t.get('/dashboard/workers')).text;
    expect(html).toContain('<th title="times a new process took over this worker id (a crash loop shows here)">Restarts</th>');
    expect(html).toMatch(/<td>w1<\/td>.*<td class="warn">2<\/td>/s);
  });

  test('the dashboard names a restarted owner instead of calling it alive', async () => {
    await bed();
    const j = await t.enqueue('q');
    await t.claim('q', 'w1', { instanceId: 'p1' });
    await beat('w1', { instanceId: 'p2' });
    const html = (await t.get(`/dashboard/jobs/${j.id}`)).text;
    expect(html).toContain('w1 (restarted since this claim: the process that claimed it is gone)');
  });

  test('a bad instance id is refused with a 400 naming the field, and changes nothing', async () => {
    await bed();
    await t.enqueue('q');
    for (const [path, body] of [
      [`${api}/workers/beat`, { workerId: 'w1', instanceId: '' }],
      [`${api}/workers/beat`, { workerId: 'w1', instanceId: 7 }],
      [`${api}/queues/q/claim`, { workerId: 'w1', instanceId: 'x'.repeat(201) }],
    ] as const) {
      const res = await t.post(path, body);
      expect(res.status, res.text).toBe(400);
      expect(res.json.error).toMatchObject({ code: 'invalid_request', field: 'instanceId' });
    }
    expect(await workerRow('w1')).toBeUndefined();
    expect((await t.get(`${api}/jobs?queue=q&status=pending`)).json.jobs).toHaveLength(1);
  });
});

describe("the reaper's batch", () => {
  test("deferred candidates do not use up the batch: a dead owner's job behind live owners' deferrals is taken in the same pass", async () => {
    await bed({ reaperBatchSize: 2 });
    // Five late jobs of a live worker, claimed first (their leases expire first) ...
    for (let i = 0; i < 5; i++) await t.enqueue('q');
    await t.claim('q', 'alive', { limit: 5 });
    t.clock.advance(1_000);
    // ... then one job of a worker that dies.
    const orphan = await t.enqueue('q');
    await t.claim('q', 'dead');
    t.clock.advance(40_001);
    await beat('alive');
    const report = await runMaintenancePass(t.db, t.clock.now(), t.config);
    expect(report.requeued).toEqual([{ id: orphan.id, reason: 'reaped_due_to_expired_lease' }]);
    // Deferrals are bounded by the batch size too, and recorded as before.
    expect(report.deferred).toHaveLength(2);
  });

  test('takes are still bounded by the batch size', async () => {
    await bed({ reaperBatchSize: 2 });
    for (let i = 0; i < 5; i++) await t.enqueue('q');
    await t.claim('q', 'dead', { limit: 5 });
    t.clock.advance(40_001);
    expect((await runMaintenancePass(t.db, t.clock.now(), t.config)).requeued).toHaveLength(2);
    expect((await runMaintenancePass(t.db, t.clock.now(), t.config)).requeued).toHaveLength(2);
    expect((await runMaintenancePass(t.db, t.clock.now(), t.config)).requeued).toHaveLength(1);
  });
});

const alertOf = async (queue: string, name: string) => {
  const res = await t.get(`${api}/alerts`);
  expect(res.status).toBe(200);
  return (res.json.alerts as { queue: string; name: string; state: string; value: number; threshold: number; message: string }[]).find((a) => a.queue === queue && a.name === name)!;
};
const metricsOf = async (queue: string) => ((await t.get(`${api}/metrics`)).json.queues as any[]).find((q) => q.queue === queue);

describe('heartbeat_lag points at live workers that cannot renew', () => {
  /** `n` jobs of queue q claimed by `worker`, with a way to heartbeat each. */
  async function jobsOf(worker: string, n: number) {
    for (let i = 0; i < n; i++) await t.enqueue('q');
    const claimed = await t.claim('q', worker, { limit: n });
    expect(claimed).toHaveLength(n);
    return claimed.map((c) => ({ id: c.id, heartbeat: async () => expect((await t.post(`${api}/jobs/${c.id}/heartbeat`, { workerId: worker, lockToken: c.lockToken })).status).toBe(200) }));
  }

  test("one dead worker's late job does not page: it is the reaper's business", async () => {
    await bed();
    await jobsOf('dead', 1);
    const healthy = await jobsOf('alive', 3);
    t.clock.advance(16_000); // over 3 heartbeat intervals; 'dead' not seen for longer than workerAliveMs
    for (const j of healthy) await j.heartbeat();
    const a = await alertOf('q', 'heartbeat_lag');
    expect(a).toMatchObject({ state: 'ok', value: 0 });
    expect(a.message).toBe('running jobs of live workers heartbeat on time; 1 running jobs belong to workers that look dead or restarted (left to the reaper)');
    expect((await metricsOf('q')).running).toMatchObject({ count: 4, ownerAliveJobs: 3, ownerGoneJobs: 1, lateJobs: 0, lateJobIds: [] });
    const prom = (await t.get('/metrics')).text;
    expect(prom).toContain('leasehold_owner_gone_jobs{queue="q"} 1');
    expect(prom).toContain('leasehold_heartbeat_late_jobs{queue="q"} 0');
  });

  test('late jobs of a live worker page once their number or share reaches the threshold, and are named', async () => {
    await bed();
    const jobs = await jobsOf('alive', 4);
    t.clock.advance(16_000);
    await beat('alive'); // the worker lives; its jobs' heartbeats do not arrive
    for (const j of jobs.slice(1)) await j.heartbeat();
    // 1 late of 4 (25%): under both thresholds (2 jobs, 50%).
    let a = await alertOf('q', 'heartbeat_lag');
    expect(a).toMatchObject({ state: 'ok', value: 1, threshold: 2 });
    expect(a.message).toContain(`jobs ${jobs[0]!.id} (fires at 2 jobs or 50%)`);

    t.clock.advance(16_000);
    await beat('alive');
    for (const j of jobs.slice(2)) await j.heartbeat();
    // 2 late of 4: at the count threshold. Worst first.
    a = await alertOf('q', 'heartbeat_lag');
    expect(a).toMatchObject({ state: 'firing', value: 2, threshold: 2 });
    expect(a.message).toBe(`2 of 4 running jobs of live workers (50%) have not heartbeated for over 15000 ms (3 heartbeat intervals): jobs ${jobs[0]!.id}, ${jobs[1]!.id}`);
    expect((await metricsOf('q')).running).toMatchObject({ ownerAliveJobs: 4, ownerGoneJobs: 0, lateJobs: 2, lateJobIds: [jobs[0]!.id, jobs[1]!.id] });
    expect((await t.get('/metrics')).text).toContain('leasehold_heartbeat_late_jobs{queue="q"} 2');

    // A queue's own thresholds apply: 3 jobs and 60% needed here.
    expect((await t.call('PUT', `${api}/queues/q/alerts`, { heartbeatLateJobs: 3, heartbeatLateShare: 0.6 })).status).toBe(200);
    expect(await alertOf('q', 'heartbeat_lag')).toMatchObject({ state: 'ok', value: 2, threshold: 3 });
  });

  test("the share alone fires: a live worker's only job is late", async () => {
    await bed();
    await jobsOf('alive', 1);
    t.clock.advance(16_000);
    await beat('alive');
    expect(await alertOf('q', 'heartbeat_lag')).toMatchObject({ state: 'firing', value: 1 });
  });

  test("a restarted worker's orphans count as gone, not late", async () => {
    await bed();
    await t.enqueue('q');
    await t.claim('q', 'w1', { instanceId: 'p1' });
    t.clock.advance(16_000);
    await beat('w1', { instanceId: 'p2' });
    expect(await alertOf('q', 'heartbeat_lag')).toMatchObject({ state: 'ok', value: 0 });
    expect((await metricsOf('q')).running).toMatchObject({ ownerAliveJobs: 0, ownerGoneJobs: 1 });
  });
});

describe('pending_backlog looks at the workers that serve the queue', () => {
  test('a live worker on another queue does not make this queue look consumed: the alert says nobody consumes it', async () => {
    await bed();
    await t.enqueue('q');
    await beat('w-q', { queues: ['q'] });
    t.clock.advance(61_000); // w-q is gone by now
    await beat('w-other', { queues: ['other'] });
    const a = await alertOf('q', 'pending_backlog');
    expect(a).toMatchObject({ state: 'firing', value: 61_000 });
    expect(a.message).toBe('1 ready jobs, the oldest waiting 61000 ms: nobody consumes this queue: no live worker reports it or holds one of its jobs (1 live workers serve other queues)');
    expect((await metricsOf('q')).servingWorkers).toBe(0);
    expect((await t.get('/metrics')).text).toContain('leasehold_serving_workers{queue="q"} 0');
    expect((await metricsOf('other')) ?? { servingWorkers: 1 }).toMatchObject({ servingWorkers: 1 });
  });

  test('a live worker that serves the queue is named as such', async () => {
    await bed();
    await t.enqueue('q');
    t.clock.advance(61_000);
    await beat('w-q', { queues: ['other', 'q'] });
    const a = await alertOf('q', 'pending_backlog');
    expect(a).toMatchObject({ state: 'firing', message: '1 ready jobs, the oldest waiting 61000 ms, while 1 workers serving this queue look alive' });
    expect((await metricsOf('q')).servingWorkers).toBe(1);
  });

  test('a worker that never beats but holds one of its jobs serves the queue', async () => {
    await bed();
    await t.enqueue('q');
    await t.enqueue('q');
    t.clock.advance(55_000);
    await t.claim('q', 'http-only'); // a claim registers it, with no queues reported
    t.clock.advance(6_000);
    expect((await metricsOf('q')).servingWorkers).toBe(1);
    expect((await alertOf('q', 'pending_backlog')).message).toContain('while 1 workers serving this queue look alive');
  });
});

describe('tuning learns from healthy jobs only', () => {
  test("one dead worker's job does not stretch the recommended lease", async () => {
    await bed();
    await t.enqueue('q');
    await t.claim('q', 'dead');
    // Past lease + grace: the old tuning read this 41 s lag as "normal jitter" and recommended a 123 s lease.
    t.clock.advance(41_000);
    const q = ((await t.get(`${api}/tuning`)).json.queues as any[]).find((x) => x.queue === 'q');
    expect(q.recommended).toEqual({ leaseMs: 30_000, heartbeatMs: 5_000, graceMs: 10_000 });
    expect(q.observed).toMatchObject({ maxHeartbeatLagMs: null, heartbeatDelayMs: 5_000, heartbeatJitterMs: 0, ownerGoneJobs: 1 });
    expect(q.notes).toContain('1 running jobs belong to workers that look dead or restarted: left to the reaper, not learned from');
    expect(q.flags.filter((f: { setting: string }) => f.setting === 'leaseMs')).toEqual([]);
  });

  test('a live worker whose job is late still teaches it', async () => {
    await bed();
    await t.enqueue('q');
    await t.claim('q', 'alive');
    t.clock.advance(25_000);
    await beat('alive');
    const q = ((await t.get(`${api}/tuning`)).json.queues as any[]).find((x) => x.queue === 'q');
    expect(q.observed).toMatchObject({ maxHeartbeatLagMs: 25_000, ownerGoneJobs: 0 });
    expect(q.recommended.leaseMs).toBe(75_000);
  });
});

describe('the liveness beat rides on the heartbeats call', () => {
  const fullRow = async (id: string) =>
    (await t.client.execute({ sql: 'SELECT instance_id, host, pid, version, queues, running_count, last_seen_at, restarts, leases_lost, event_loop_blocks FROM workers WHERE id = ?', args: [id] })).rows[0] as unknown as
      | { instance_id: string; host: string; pid: number; version: string; queues: string; running_count: number; last_seen_at: number; restarts: number; leases_lost: number | null; event_loop_blocks: number | null }
      | undefined;
  const worker = { instanceId: 'p1', host: 'box', pid: 42, version: '9.9.9', queues: ['q'], runningCount: 1, leasesLost: 2, eventLoopBlocks: 3 };

  test('POST /heartbeats with `worker` renews the leases and records the beat in the same call', async () => {
    await bed();
    const j = await t.enqueue('q');
    const [c] = await t.claim('q', 'w1', { instanceId: 'p1' });
    t.clock.advance(5_000);
    const res = await t.post(`${api}/heartbeats`, { workerId: 'w1', leases: [{ id: j.id, lockToken: c!.lockToken }], worker });
    expect(res.status, res.text).toBe(200);
    expect(res.json.results[0]).toMatchObject({ id: j.id, ok: true, leaseExpiresAt: new Date(t.clock.now() + 30_000).toISOString() });
    expect(await fullRow('w1')).toMatchObject({ instance_id: 'p1', host: 'box', pid: 42, version: '9.9.9', queues: '["q"]', running_count: 1, last_seen_at: t.clock.now(), restarts: 0, leases_lost: 2, event_loop_blocks: 3 });
  });

  test('an idle worker beats through the same call with no leases; without `worker`, empty leases are refused', async () => {
    await bed();
    const idle = await t.post(`${api}/heartbeats`, { workerId: 'w2', leases: [], worker: { ...worker, runningCount: 0 } });
    expect(idle.status, idle.text).toBe(200);
    expect(idle.json).toEqual({ results: [] });
    expect(await fullRow('w2')).toMatchObject({ host: 'box', running_count: 0, last_seen_at: t.clock.now() });
    const empty = await t.post(`${api}/heartbeats`, { workerId: 'w3', leases: [] });
    expect(empty.status).toBe(400);
    expect(empty.json.error).toMatchObject({ code: 'invalid_request', field: 'leases' });
    expect(empty.json.error.message).toContain('worker');
    const typo = await t.post(`${api}/heartbeats`, { workerId: 'w3', leases: [], worker: { runingCount: 1 } });
    expect(typo.status).toBe(400);
    const negative = await t.post(`${api}/heartbeats`, { workerId: 'w3', leases: [], worker: { leasesLost: -1 } });
    expect(negative.json.error).toMatchObject({ code: 'invalid_request', field: 'worker.leasesLost' });
    expect(await fullRow('w3')).toBeUndefined();
  });

  test('a beat carried by refused heartbeats is still recorded; a separate beat (older clients) still works', async () => {
    await bed();
    const j = await t.enqueue('q');
    await t.claim('q', 'w1');
    const res = await t.post(`${api}/heartbeats`, { workerId: 'w1', leases: [{ id: j.id, lockToken: 'f'.repeat(32) }], worker });
    expect(res.json.results[0]).toMatchObject({ ok: false, error: { code: 'lease_lost' } });
    expect(await fullRow('w1')).toMatchObject({ host: 'box', version: '9.9.9' });
    t.clock.advance(1_000);
    await beat('w1', { host: 'other', runningCount: 0 });
    expect(await fullRow('w1')).toMatchObject({ host: 'other', running_count: 0, last_seen_at: t.clock.now() });
  });
});
