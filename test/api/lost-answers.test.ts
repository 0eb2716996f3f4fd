/**
 * A request whose answer was lost, sent again over HTTP: a completion,
 * failure or release already stored under its token is answered as stored
 * (not 409, not a stale write); a claim with a `claimId` answers the same
 * jobs and tokens instead of claiming more, also when it rides on a
 * completion; a beat naming claims the worker gave up on gives their jobs
 * back without costing an attempt. Bad claim ids are a 400 naming the field
 * and change nothing.
 */
import { afterEach, beforeEach, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';

let t: TestBed;
beforeEach(async () => {
  t = await setup();
});
afterEach(() => t.close());

const api = '/api/v1';

/** What /metrics and the events say about stale writes and duplicate runs. */
async function refusalsAndDuplicates() {
  const metrics = (await t.get('/metrics')).text;
  const total = (name: string) => [...metrics.matchAll(new RegExp(`^${name}\\{[^}]*\\} (\\d+)$`, 'gm'))].reduce((n, m) => n + Number(m[1]), 0);
  const events = await t.client.execute(`select type, count(*) as n from events where type in ('stale_write_rejected', 'duplicate_execution') group by type`);
  return { staleMetric: total('leasehold_stale_writes_rejected_total'), duplicateMetric: total('leasehold_duplicate_executions_total'), events: events.rows.length };
}

const NONE = { staleMetric: 0, duplicateMetric: 0, events: 0 };

test('a completion sent again is answered 200 with the job as stored, single and batched', async () => {
  const a = await t.enqueue('q');
  const b = await t.enqueue('q');
  const [ca, cb] = await t.claim('q', 'w', { limit: 2 });
  const one = { workerId: 'w', lockToken: ca!.lockToken, result: { n: 1 } };
  const first = await t.post(`${api}/jobs/${a.id}/complete`, one);
  expect(first.status).toBe(200);
  t.clock.advance(1_000);
  const again = await t.post(`${api}/jobs/${a.id}/complete`, one);
  expect(again).toMatchObject({ status: 200, json: first.json });

  const batch = { workerId: 'w', results: [{ id: b.id, lockToken: cb!.lockToken, result: 'two' }] };
  const firstBatch = await t.post(`${api}/completions`, batch);
  const againBatch = await t.post(`${api}/completions`, batch);
  expect(againBatch.json).toEqual(firstBatch.json);
  expect(againBatch.json.results).toMatchObject([{ id: b.id, ok: true, status: 'completed' }]);
  expect(await refusalsAndDuplicates()).toEqual(NONE);

  // Another result from the same token is not a repeat.
  const other = await t.post(`${api}/jobs/${a.id}/complete`, { ...one, result: { n: 2 } });
  expect(other.status).toBe(409);
  expect((await t.get(`${api}/jobs/${a.id}`)).json.job.result).toEqual({ n: 1 });
  expect((await refusalsAndDuplicates()).staleMetric).toBe(1);
  expect(t.errors).toEqual([]);
});

test('a failure and a release sent again are answered 200 as stored', async () => {
  const f = await t.enqueue('q');
  const r = await t.enqueue('q');
  const [cf, cr] = await t.claim('q', 'w', { limit: 2 });
  const fail = { workerId: 'w', lockToken: cf!.lockToken, error: 'boom', retryable: false };
  const failed = await t.post(`${api}/jobs/${f.id}/fail`, fail);
  expect(failed.json.job).toMatchObject({ status: 'failed', lastError: 'boom' });
  expect(await t.post(`${api}/jobs/${f.id}/fail`, fail)).toMatchObject({ status: 200, json: failed.json });
  const release = { workerId: 'w', leases: [{ id: r.id, lockToken: cr!.lockToken }] };
  const released = await t.post(`${api}/releases`, release);
  expect(await t.post(`${api}/releases`, release)).toMatchObject({ status: 200, json: released.json });
  expect(await refusalsAndDuplicates()).toEqual(NONE);
});

test('a claim sent again with its claimId answers the same jobs and tokens and claims nothing more', async () => {
  for (let i = 0; i < 4; i++) await t.enqueue('q');
  const first = await t.claim('q', 'w', { limit: 2, claimId: 'i1-1' });
  t.clock.advance(2_000);
  const again = await t.claim('q', 'w', { limit: 2, claimId: 'i1-1' });
  expect(again.map((j) => [j.id, j.lockToken, j.attempt, j.fencingToken])).toEqual(first.map((j) => [j.id, j.lockToken, j.attempt, j.fencingToken]));
  expect(Date.parse(again[0]!.leaseExpiresAt)).toBe(Date.parse(first[0]!.leaseExpiresAt) + 2_000);
  const pending = (await t.get(`${api}/jobs?queue=q&status=pending`)).json.jobs;
  expect(pending).toHaveLength(2);
  expect((await t.events(first[0]!.id)).map((e) => e.type)).toEqual(['enqueued', 'claimed', 'claim_replayed']);
  // Old clients (no claimId) claim as before.
  expect(await t.claim('q', 'w', { limit: 1 })).toHaveLength(1);
  expect(await t.claim('q', 'w', { limit: 1 })).toHaveLength(1);
  expect(await refusalsAndDuplicates()).toEqual(NONE);
});

test('a completion that claims, sent again: its completion is answered as stored and its claim answers the same jobs', async () => {
  const done = await t.enqueue('q');
  const [c] = await t.claim('q', 'w');
  for (let i = 0; i < 3; i++) await t.enqueue('q');
  const body = { workerId: 'w', instanceId: 'i1', results: [{ id: done.id, lockToken: c!.lockToken, result: 'r' }], claim: { queue: 'q', limit: 2, claimId: 'i1-9' } };
  const first = await t.post(`${api}/completions`, body);
  expect(first.json.jobs).toHaveLength(2);
  const again = await t.post(`${api}/completions`, body);
  expect(again.status).toBe(200);
  expect(again.json.results).toEqual(first.json.results);
  expect(again.json.jobs.map((j: { id: string; lockToken: string }) => [j.id, j.lockToken])).toEqual(first.json.jobs.map((j: { id: string; lockToken: string }) => [j.id, j.lockToken]));
  expect((await t.get(`${api}/jobs?queue=q&status=pending`)).json.jobs).toHaveLength(1);
  expect(await refusalsAndDuplicates()).toEqual(NONE);
});

test('a beat naming a claim the worker gave up on gives its jobs back at once: pending, no attempt counted, an event', async () => {
  await t.enqueue('q');
  await t.enqueue('q');
  const [lost] = await t.claim('q', 'w', { instanceId: 'i1', claimId: 'i1-1' });
  const [held] = await t.claim('q', 'w', { instanceId: 'i1', claimId: 'i1-2' });
  t.clock.advance(1_000);
  const res = await t.post(`${api}/heartbeats`, { workerId: 'w', leases: [{ id: held!.id, lockToken: held!.lockToken }], worker: { instanceId: 'i1', lostClaims: ['i1-1'] } });
  expect(res.json.results).toMatchObject([{ id: held!.id, ok: true }]);
  const job = (await t.get(`${api}/jobs/${lost!.id}`)).json;
  expect(job.job).toMatchObject({ status: 'pending', attempt: 0, lostAttempts: 0, lockedBy: null });
  expect(job.events.at(-1)).toMatchObject({ type: 'released', reason: 'claim_answer_lost', workerId: 'w', from: 'running', to: 'pending' });
  // Claimed again at once (no backoff), and not as a duplicate execution.
  const [next] = await t.claim('q', 'w2');
  expect(next).toMatchObject({ id: lost!.id, attempt: 1 });
  // The beat on its own does the same.
  await t.enqueue('q');
  const [again] = await t.claim('q', 'w3', { instanceId: 'i3', claimId: 'i3-2' });
  expect((await t.post(`${api}/workers/beat`, { workerId: 'w3', instanceId: 'i3', lostClaims: ['i3-2'] })).status).toBe(200);
  expect((await t.get(`${api}/jobs/${again!.id}`)).json.job.status).toBe('pending');
  expect(await refusalsAndDuplicates()).toEqual(NONE);
  expect(t.errors).toEqual([]);
});

test('a bad claimId or lostClaims entry is a 400 naming the field, and nothing is claimed or released', async () => {
  await t.enqueue('q');
  for (const claimId of ['', 'x'.repeat(101), 'has space', 7]) {
    const res = await t.post(`${api}/queues/q/claim`, { workerId: 'w', claimId });
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ code: 'invalid_request', field: 'claimId' });
  }
  const [c] = await t.claim('q', 'w', { claimId: 'ok-1' });
  const bad = await t.post(`${api}/completions`, { workerId: 'w', results: [{ id: c!.id, lockToken: c!.lockToken }], claim: { queue: 'q', limit: 1, claimId: 'no/slash' } });
  expect(bad.json.error).toMatchObject({ field: 'claim.claimId' });
  expect((await t.get(`${api}/jobs/${c!.id}`)).json.job.status).toBe('running');
  const beat = await t.post(`${api}/heartbeats`, { workerId: 'w', leases: [], worker: { lostClaims: ['ok-1', 'bad id'] } });
  expect(beat.status).toBe(400);
  expect(beat.json.error.field).toBe('worker.lostClaims[1]');
  const many = await t.post(`${api}/workers/beat`, { workerId: 'w', lostClaims: Array.from({ length: 101 }, (_, i) => `c${i}`) });
  expect(many.json.error.field).toBe('lostClaims');
  expect((await t.get(`${api}/jobs/${c!.id}`)).json.job.status).toBe('running');
  expect(t.errors).toEqual([]);
});
