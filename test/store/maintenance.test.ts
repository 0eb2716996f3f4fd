/**
 * The maintenance services one by one (src/maintenance/): each runs alone on
 * a real database with its own report, and the time and fetch are the
 * caller's. The composed pass (runMaintenancePass) is exercised by reaper.test.ts,
 * alert-webhook.test.ts and the runtimes' tests.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { createStore } from '../../src/db/store/create-store.ts';
import type { Config } from '../../src/core/config.ts';
import { sampleActivityOnce } from '../../src/maintenance/activity.ts';
import { alertsOnce, type Fetch } from '../../src/maintenance/alerts.ts';
import { runMaintenancePass } from '../../src/maintenance/pass.ts';
import { pruneOnce } from '../../src/maintenance/prune.ts';
import { reapLostLeases } from '../../src/maintenance/reaper.ts';
import { setup, type TestBed } from '../support/helpers.ts';

let t: TestBed;
async function bed(overrides: Partial<Config> = {}) {
  t = await setup({ workerAliveMs: 5_000, ...overrides });
  return t;
}
afterEach(() => t?.close());

const api = '/api/v1';
const at = () => t.clock.now() as number;

/** A job claimed by worker A whose lease (and grace) ran out. */
async function abandonedJob() {
  const e = await t.enqueue('q');
  const [c] = await t.claim('q', 'A');
  t.clock.set(Date.parse(c!.leaseExpiresAt) + t.config.graceMs + 60_000);
  return e.id;
}

describe('reapLostLeases', () => {
  test('takes back an abandoned job, reports it and tells the observer its queue and worker', async () => {
    await bed();
    const id = await abandonedJob();
    const seen: unknown[] = [];
    const report = await reapLostLeases(createStore(t.db), at(), t.config, { onJob: (e) => seen.push(e) });
    expect(report).toEqual({ requeued: [{ id, reason: 'reaped_due_to_expired_lease' }], failed: [], deferred: [], held: [], heldForOperator: [], raced: 0 });
    expect(seen).toEqual([{ id, queue: 'q', workerId: 'A', action: 'requeue', reason: 'reaped_due_to_expired_lease' }]);
    expect((await t.get(`${api}/jobs/${id}`)).json.job.status).toBe('pending');
  });

  test('after a gap it holds expired leases for their owners and says why', async () => {
    await bed();
    const id = await abandonedJob();
    const report = await reapLostLeases(createStore(t.db), at(), t.config, { holdLostLeases: { why: 'the server was paused' } });
    expect(report).toMatchObject({ requeued: [], held: [{ id, reason: 'server_gap' }] });
    expect((await t.get(`${api}/jobs/${id}`)).json.job.status).toBe('running');
  });
});

describe('pruneOnce', () => {
  test('deletes finished jobs past retention and counts them; younger ones stay', async () => {
    await bed({ retentionMs: 60_000 });
    const old = await t.enqueue('q');
    const [c] = await t.claim('q', 'A');
    expect((await t.post(`${api}/jobs/${old.id}/complete`, { workerId: 'A', lockToken: c!.lockToken })).status).toBe(200);
    t.clock.advance(60_001);
    const young = await t.enqueue('q');
    expect(await pruneOnce(createStore(t.db), at(), t.config)).toEqual({ jobs: 1 });
    expect((await t.get(`${api}/jobs/${old.id}`)).status).toBe(404);
    expect((await t.get(`${api}/jobs/${young.id}`)).status).toBe(200);
    expect(await pruneOnce(createStore(t.db), at(), t.config)).toEqual({ jobs: 0 });
  });
});

describe('sampleActivityOnce', () => {
  test('samples each queue with running jobs, and none without', async () => {
    await bed();
    expect(await sampleActivityOnce(createStore(t.db), at())).toEqual({ queuesSampled: 0 });
    await t.enqueue('q');
    await t.enqueue('r');
    await t.claim('q', 'A');
    await t.claim('r', 'A');
    t.clock.advance(2_000);
    expect(await sampleActivityOnce(createStore(t.db), at())).toEqual({ queuesSampled: 2 });
    const rows = await t.client.execute('SELECT queue_name, max_heartbeat_lag_ms AS lag FROM queue_minutes ORDER BY queue_name');
    expect(rows.rows.map((r) => [r.queue_name, Number(r.lag)])).toEqual([['q', 2_000], ['r', 2_000]]);
  });
});

describe('alertsOnce', () => {
  test('posts a firing alert through the fetch it is given', async () => {
    await bed({ alertWebhookUrl: 'https://hooks.example/leasehold', alertEveryMs: 1_000, workerAliveMs: 3_600_000 });
    const posted: { url: string; body: Record<string, unknown> }[] = [];
    const fetchSpy: Fetch = async (url, init) => {
      posted.push({ url, body: JSON.parse(String(init.body)) });
      return new Response('ok', { status: 200 });
    };
    await t.enqueue('q');
    await t.claim('q', 'A');
    expect(await alertsOnce(createStore(t.db), at(), t.config, fetchSpy)).toEqual({ evaluated: true, started: 0, cleared: 0, delivered: 0, failed: 0 });
    // Not heartbeated for over 3 intervals of 5 s: heartbeat_lag fires.
    t.clock.advance(15_001);
    expect(await alertsOnce(createStore(t.db), at(), t.config, fetchSpy)).toEqual({ evaluated: true, started: 1, cleared: 0, delivered: 1, failed: 0 });
    expect(posted).toEqual([{ url: 'https://hooks.example/leasehold', body: expect.objectContaining({ type: 'alert.firing', queue: 'q', alert: 'heartbeat_lag' }) }]);
  });

  test('a receiver that fails is counted for a retry, not thrown', async () => {
    await bed({ alertWebhookUrl: 'https://hooks.example/leasehold', alertEveryMs: 1_000, workerAliveMs: 3_600_000 });
    await t.enqueue('q');
    await t.claim('q', 'A');
    await alertsOnce(createStore(t.db), at(), t.config, async () => new Response('', { status: 200 }));
    t.clock.advance(15_001);
    const down: Fetch = async () => {
      throw new TypeError('fetch failed');
    };
    expect(await alertsOnce(createStore(t.db), at(), t.config, down)).toMatchObject({ started: 1, delivered: 0, failed: 1 });
  });
});

describe('the composed pass', () => {
  test('runMaintenancePass runs every service and posts through the fetch it is given', async () => {
    await bed({ alertWebhookUrl: 'https://hooks.example/leasehold', alertEveryMs: 1_000, workerAliveMs: 3_600_000 });
    let posts = 0;
    const fetchCounting: Fetch = async () => {
      posts++;
      return new Response('ok');
    };
    await t.enqueue('q');
    await t.claim('q', 'A');
    expect(await runMaintenancePass(t.db, at(), t.config, { fetch: fetchCounting })).toMatchObject({ requeued: [], pruned: 0, alerts: { evaluated: true, started: 0 } });
    t.clock.advance(15_001);
    const report = await runMaintenancePass(t.db, at(), t.config, { fetch: fetchCounting });
    expect(report).toMatchObject({ at: at(), requeued: [], deferred: [], pruned: 0, alerts: { evaluated: true, started: 1, delivered: 1 } });
    expect(posts).toBe(1);
    const rows = await t.client.execute('SELECT count(*) AS n FROM queue_minutes');
    expect(Number(rows.rows[0]!.n)).toBeGreaterThan(0);
  });
});

describe('the public API', () => {
  test('still exports the pass under its old name, reapOnce (deprecated), as the same function', async () => {
    const index = await import('../../src/index.ts');
    expect(index.reapOnce).toBe(index.runMaintenancePass);
  });
});
