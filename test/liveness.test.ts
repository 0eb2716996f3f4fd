/**
 * Liveness points at the right cause (issue 11, part 5): liveness is per
 * worker process (a restarted worker reusing its id does not keep its
 * predecessor's orphans alive; restarts are counted), deferred candidates do
 * not use up the reaper's batch, heartbeat_lag pages for late jobs of live
 * workers (not for one dead worker's job), pending_backlog looks at the
 * workers that serve the queue, and tuning learns from healthy jobs only.
 */
import { afterEach, describe, expect, test } from 'vitest';
import type { Config } from '../src/core/config.ts';
import { reapOnce } from '../src/db/reap-once.ts';
import { setup, type TestBed } from './helpers.ts';

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
    const report = await reapOnce(t.db, t.clock.now(), t.config);
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
    const report = await reapOnce(t.db, t.clock.now(), t.config);
    expect(report.deferred.map((d) => d.id)).toEqual([j.id]);
    expect(report.requeued).toEqual([]);
  });

  test('a worker that sends no instance id (an older SDK) keeps per-id liveness', async () => {
    await bed();
    const j = await t.enqueue('q');
    await t.claim('q', 'w1');
    t.clock.advance(40_001);
    await beat('w1', { instanceId: 'whatever' });
    const report = await reapOnce(t.db, t.clock.now(), t.config);
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
    const report = await reapOnce(t.db, t.clock.now(), t.config);
    expect(report.requeued).toEqual([{ id: orphan.id, reason: 'reaped_due_to_expired_lease' }]);
    // Deferrals are bounded by the batch size too, and recorded as before.
    expect(report.deferred).toHaveLength(2);
  });

  test('takes are still bounded by the batch size', async () => {
    await bed({ reaperBatchSize: 2 });
    for (let i = 0; i < 5; i++) await t.enqueue('q');
    await t.claim('q', 'dead', { limit: 5 });
    t.clock.advance(40_001);
    expect((await reapOnce(t.db, t.clock.now(), t.config)).requeued).toHaveLength(2);
    expect((await reapOnce(t.db, t.clock.now(), t.config)).requeued).toHaveLength(2);
    expect((await reapOnce(t.db, t.clock.now(), t.config)).requeued).toHaveLength(1);
  });
});
