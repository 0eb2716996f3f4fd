/**
 * Every kind of statement the store sends, once, on D1 in workerd: bulk
 * enqueue (json_each), batched claims/heartbeats/completions (UPDATE ... FROM,
 * ->>), fail/release/checkpoint, effects, queue settings, operator actions,
 * reads, metrics and the reaper endpoint.
 */
import { expect, test } from 'vitest';
import { call, claim, enqueue, get, jobView, post } from './helpers.ts';

const api = '/api/v1';

test('bulk enqueue, batched claim / heartbeats / completions with a claim of the next jobs', async () => {
  const bulk = await post(`${api}/queues/bulk/jobs`, { jobs: Array.from({ length: 150 }, (_, i) => ({ payload: { i }, priority: i % 3 })) });
  expect(bulk.status, JSON.stringify(bulk.json).slice(0, 300)).toBeLessThan(300);

  const jobs = await claim('bulk', 'w1', { limit: 120 });
  expect(jobs).toHaveLength(120);
  expect(jobs[0]!.priority).toBe(2);

  const hb = await post(`${api}/heartbeats`, { workerId: 'w1', leases: jobs.map((j) => ({ id: j.id, lockToken: j.lockToken, progress: { p: 1 } })) });
  expect(hb.status, JSON.stringify(hb.json).slice(0, 300)).toBe(200);
  expect(hb.json.results.every((r: any) => r.ok !== false)).toBe(true);

  const done = await post(`${api}/completions`, {
    workerId: 'w1',
    results: jobs.map((j) => ({ id: j.id, lockToken: j.lockToken, result: { ok: j.id } })),
    claim: { queue: 'bulk', limit: 30 },
  });
  expect(done.status, JSON.stringify(done.json).slice(0, 300)).toBe(200);
  expect(done.json.jobs).toHaveLength(30);

  // Stale tokens for more than 100 jobs: the refusal path reads their status (over 100 ids).
  const stale = await post(`${api}/completions`, { workerId: 'w1', results: jobs.map((j) => ({ id: j.id, lockToken: j.lockToken })) });
  expect(stale.status, JSON.stringify(stale.json).slice(0, 300)).toBe(200);
  expect(stale.json.results.every((r: any) => r.error?.code === 'lease_lost' || r.ok === false)).toBe(true);
});

test('fail, release, checkpoint, effects', async () => {
  const e = await enqueue('misc', { payload: { x: 1 }, maxAttempts: 3, timeoutMs: 60_000, idempotencyKey: 'k1' });
  const again = await post(`${api}/queues/misc/jobs`, { payload: { x: 1 }, idempotencyKey: 'k1' });
  expect(again.json.job.id).toBe(e.id);

  let [j] = await claim('misc', 'w2');
  const cp = await post(`${api}/jobs/${e.id}/checkpoint`, { workerId: 'w2', lockToken: j!.lockToken, checkpoint: { step: 2 } });
  expect(cp.status, JSON.stringify(cp.json)).toBe(200);
  const eff = await post(`${api}/jobs/${e.id}/effects/start`, { workerId: 'w2', lockToken: j!.lockToken, key: 'send' });
  expect(eff.status, JSON.stringify(eff.json)).toBe(200);
  const effDone = await post(`${api}/jobs/${e.id}/effects/finish`, { workerId: 'w2', lockToken: j!.lockToken, key: 'send', result: { id: 'm1' } });
  expect(effDone.status, JSON.stringify(effDone.json)).toBe(200);
  const fail = await post(`${api}/jobs/${e.id}/fail`, { workerId: 'w2', lockToken: j!.lockToken, error: 'boom', retryAfterMs: 0 });
  expect(fail.status, JSON.stringify(fail.json)).toBe(200);

  [j] = await claim('misc', 'w2');
  expect(j).toMatchObject({ id: e.id, attempt: 2, checkpoint: { step: 2 } });
  const rel = await post(`${api}/jobs/${e.id}/release`, { workerId: 'w2', lockToken: j!.lockToken, reason: 'shutting down' });
  expect(rel.status, JSON.stringify(rel.json)).toBe(200);

  const view = await jobView(e.id);
  expect(view.events.map((x) => x.type)).toEqual(['enqueued', 'deduplicated', 'claimed', 'retry_scheduled', 'claimed', 'released']);
});

test('queue settings, pause / resume, operator actions, reads, metrics, reaper endpoint', async () => {
  const s = await call('PATCH', `${api}/queues/ops/settings`, { leaseMs: 2000, heartbeatMs: 500, graceMs: 500, paused: true });
  expect(s.status, JSON.stringify(s.json)).toBe(200);
  const e = await enqueue('ops');
  expect(await claim('ops', 'w3')).toEqual([]);
  // The worker token cannot resume a queue; the admin token can.
  expect((await post(`${api}/queues/ops/resume`, {})).status).toBe(403);
  expect((await call('POST', `${api}/queues/ops/resume`, {})).status).toBe(200);
  const [j] = await claim('ops', 'w3');
  expect(j).toMatchObject({ id: e.id, leaseMs: 2000 });

  const e2 = await enqueue('ops');
  expect((await call('POST', `${api}/jobs/${e2.id}/cancel`, { reason: 'no longer needed' })).status).toBe(200);
  expect((await call('POST', `${api}/jobs/${e2.id}/retry`, {})).status).toBe(200);

  expect((await post(`${api}/workers/beat`, { workerId: 'w3', host: 'edge', pid: 1, version: 't', queues: ['ops'], runningCount: 1 })).status).toBe(200);
  const list = await get(`${api}/jobs?queue=ops&limit=10`);
  expect(list.status, JSON.stringify(list.json)).toBe(200);
  const queues = await get(`${api}/queues`);
  expect(queues.status, JSON.stringify(queues.json)).toBe(200);
  const one = await get(`${api}/queues/ops`);
  expect(one.status, JSON.stringify(one.json)).toBe(200);
  const metrics = await get('/metrics');
  expect(metrics.status).toBe(200);
  const reap = await call('POST', `${api}/reaper/run`, {});
  expect(reap.status, JSON.stringify(reap.json)).toBe(200);
  const spec = await get(`${api}/openapi.json`, null);
  expect(spec.status).toBe(200);
});

test('on D1 too: lone surrogates and NUL in stored strings are a 400 naming the field; inside JSON documents they round-trip', async () => {
  const doc = { high: 'x\ud83d', low: '\ude00y', nul: 'a\u0000b', ['k\ud800']: ['\u0000'] };
  for (const [body, field] of [
    [{ payload: 1, idempotencyKey: 'x\ud83d' }, 'idempotencyKey'],
    [{ payload: 1, idempotencyKey: 'trusted\u0000tail' }, 'idempotencyKey'],
    [{ jobs: [{ payload: 1, idempotencyKey: '\udfff' }] }, 'jobs[0].idempotencyKey'],
  ] as const) {
    const res = await post(`${api}/queues/text/jobs`, body);
    expect(res.status, JSON.stringify(res.json)).toBe(400);
    expect(res.json.error.field).toBe(field);
  }
  expect((await post(`${api}/queues/text/claim`, { workerId: 'w\u0000evil' })).status).toBe(400);

  const e = await enqueue('text', { payload: doc });
  expect(e.payload).toEqual(doc);
  const [j] = await claim('text', 'w9');
  const own = { workerId: 'w9', lockToken: j!.lockToken };
  expect((await post(`${api}/jobs/${e.id}/heartbeat`, { ...own, progress: doc })).status).toBe(200);
  expect((await post(`${api}/jobs/${e.id}/checkpoint`, { ...own, checkpoint: doc })).status).toBe(200);
  expect((await post(`${api}/jobs/${e.id}/effects/start`, { ...own, key: 'fx' })).json.state).toBe('run');
  expect((await post(`${api}/jobs/${e.id}/effects/finish`, { ...own, key: 'fx', result: doc })).json.result).toEqual(doc);
  expect((await post(`${api}/jobs/${e.id}/complete`, { ...own, result: doc })).status).toBe(200);
  const view = await jobView(e.id);
  expect(view.job).toMatchObject({ payload: doc, progress: doc, checkpoint: doc, result: doc });
});
