/**
 * DELETE /api/v1/queues/:queue: admin only, refused (409 saying why) while
 * the queue holds pending or running jobs, a schedule, or finished jobs
 * without purge=true; a deleted queue's settings and bookkeeping go, in the
 * audit trail with who did it.
 */
import { afterEach, beforeEach, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';

const ADMIN = 'a'.repeat(20);
const WORKER = 'w'.repeat(20);
const admin = { authorization: `Bearer ${ADMIN}` };
const worker = { authorization: `Bearer ${WORKER}` };
const api = '/api/v1';

let t: TestBed;
beforeEach(async () => {
  t = await setup({ adminToken: ADMIN, workerToken: WORKER, maxQueues: 2 });
});
afterEach(() => {
  expect(t.errors).toEqual([]);
  t.close();
});

const del = (queue: string, headers: Record<string, string> = admin, query = '') =>
  t.call('DELETE', `${api}/queues/${queue}${query}`, undefined, { 'content-type': 'application/json', ...headers });
const count = async (table: string, where = '1') => Number((await t.client.execute(`SELECT count(*) AS n FROM ${table} WHERE ${where}`)).rows[0]!.n);

async function finishOne(queue: string) {
  await t.post(`${api}/queues/${queue}/jobs`, { payload: 1 }, worker);
  const [job] = (await t.post(`${api}/queues/${queue}/claim`, { workerId: 'w1' }, worker)).json.jobs as { id: string; lockToken: string }[];
  expect((await t.post(`${api}/jobs/${job!.id}/complete`, { workerId: 'w1', lockToken: job!.lockToken }, worker)).status).toBe(200);
}

test('an empty queue is deleted with its settings and bookkeeping, audited with the operator, and its place under the cap is free', async () => {
  await finishOne('old');
  await t.post(`${api}/queues/other/jobs`, { payload: 1 }, worker);
  expect((await t.call('PATCH', `${api}/queues/old/settings`, { maxAttempts: 9 }, admin)).status).toBe(200);
  expect((await t.post(`${api}/queues/third/jobs`, { payload: 1 }, worker)).status).toBe(409);

  const refused = await del('old');
  expect(refused.status).toBe(409);
  expect(refused.json.error).toMatchObject({ code: 'conflict', field: 'queue' });
  expect(refused.json.error.message).toBe('queue old still holds 1 finished jobs kept for retention (purge deletes them with the queue); nothing was deleted');

  const done = await del('old', admin, '?purge=true');
  expect(done.status).toBe(200);
  expect(done.json).toEqual({ deleted: 'old', purgedFinishedJobs: 1 });
  expect(await count('queues', "name = 'old'")).toBe(0);
  expect(await count('jobs', "queue_name = 'old'")).toBe(0);
  for (const table of ['finished_counts', 'live_counts', 'counters', 'queue_minutes']) expect(await count(table, "queue_name = 'old'")).toBe(0);
  expect((await t.get(`${api}/queues/old`, admin)).status).toBe(404);

  const [entry] = (await t.get(`${api}/audit?action=queue.delete`, admin)).json.entries as Record<string, any>[];
  expect(entry).toMatchObject({ action: 'queue.delete', queue: 'old', actor: 'admin', target: 'queue old', source: 'api' });
  expect(entry!.before.max_attempts).toBe(9);
  expect(entry!.after).toEqual({ deleted: true, purgedFinishedJobs: 1 });

  // The place it held is free again.
  expect((await t.post(`${api}/queues/third/jobs`, { payload: 1 }, worker)).status).toBe(201);
});

test('a queue with work waiting or running, or a schedule, is refused with the reason, and nothing changes', async () => {
  await t.post(`${api}/queues/busy/jobs`, { jobs: [{ payload: 1 }, { payload: 2 }] }, worker);
  await t.post(`${api}/queues/busy/claim`, { workerId: 'w1', limit: 1 }, worker);
  for (const query of ['', '?purge=true']) {
    const refused = await del('busy', admin, query);
    expect(refused.status).toBe(409);
    expect(refused.json.error.message).toMatch(/^queue busy still holds 1 pending and 1 running jobs \(cancel them or let them finish/);
  }
  expect(await count('jobs', "queue_name = 'busy'")).toBe(2);

  expect((await t.post(`${api}/schedules`, { name: 'nightly', queue: 'sched', intervalMs: 3_600_000, payload: {} }, admin)).status).toBe(201);
  await finishOne('sched');
  const bySchedule = await del('sched', admin, '?purge=true');
  expect(bySchedule.status).toBe(409);
  expect(bySchedule.json.error.message).toBe('queue sched still holds schedules that enqueue to it (nightly: delete them first); nothing was deleted');
  // A refused purge deletes nothing: its finished job is still there.
  expect(await count('jobs', "queue_name = 'sched'")).toBe(1);
  expect(await count('operator_audit', "action = 'queue.delete'")).toBe(0);
});

test('bad names are a 4xx naming the queue, a missing queue 404, and only the admin token may delete', async () => {
  await finishOne('q');
  expect((await del('q', worker)).status).toBe(403);
  expect((await del('q', {})).status).toBe(401);
  expect((await del('q', { authorization: 'Bearer nope-nope-nope-nope' })).status).toBe(401);
  const missing = await del('nothing-here');
  expect(missing.status).toBe(404);
  expect(missing.json.error).toMatchObject({ code: 'not_found', field: 'queue' });
  for (const bad of ['a'.repeat(300), '%20bad%20', 'x%00y']) {
    const res = await del(bad);
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(res.json.error.field).toBe('queue');
  }
  const badPurge = await del('q', admin, '?purge=yes');
  expect(badPurge.status).toBe(400);
  expect(badPurge.json.error.field).toBe('purge');
  expect(await count('jobs', "queue_name = 'q'")).toBe(1);
  expect(await count('queues')).toBe(1);
});
