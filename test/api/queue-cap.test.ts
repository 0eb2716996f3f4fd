/**
 * LEASEHOLD_MAX_QUEUES counts the queues in use (holding jobs, settings of
 * their own or schedules), not every queue row ever made: a worker token
 * cannot use up the cap for good by making queues and letting their jobs be
 * pruned.
 */
import { afterEach, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';

const ADMIN = 'a'.repeat(20);
const WORKER = 'w'.repeat(20);
const admin = { authorization: `Bearer ${ADMIN}` };
const worker = { authorization: `Bearer ${WORKER}` };
const api = '/api/v1';
const DAY = 24 * 3600 * 1000;

let t: TestBed;
afterEach(() => {
  expect(t.errors).toEqual([]);
  t.close();
});

async function fillWithWorkerToken(queues: string[]) {
  for (const q of queues) expect((await t.post(`${api}/queues/${q}/jobs`, { payload: q }, worker)).status).toBe(201);
  for (const q of queues) {
    const [job] = (await t.post(`${api}/queues/${q}/claim`, { workerId: 'w1' }, worker)).json.jobs as { id: string; lockToken: string }[];
    expect((await t.post(`${api}/jobs/${job!.id}/complete`, { workerId: 'w1', lockToken: job!.lockToken }, worker)).status).toBe(200);
  }
}

async function pruneFinished() {
  t.clock.advance(t.config.retentionMs + DAY);
  const pass = await t.post(`${api}/reaper/run`, {}, admin);
  expect(pass.status).toBe(200);
  expect(Number((await t.client.execute('SELECT count(*) AS n FROM jobs')).rows[0]!.n)).toBe(0);
}

test('a worker that filled the cap, its jobs done and pruned, leaves room: enqueueing to a new queue succeeds', async () => {
  t = await setup({ adminToken: ADMIN, workerToken: WORKER, maxQueues: 39 });
  const made = Array.from({ length: 39 }, (_, i) => `spam-${i}`);
  await fillWithWorkerToken(made);
  // While their finished jobs are kept, the queues are in use: the cap holds.
  const refused = await t.post(`${api}/queues/fresh/jobs`, { payload: 1 }, worker);
  expect(refused.status).toBe(409);
  expect(refused.json.error).toMatchObject({ code: 'conflict', field: 'queue' });
  expect(refused.json.error.message).toMatch(/already has 39 queues \(LEASEHOLD_MAX_QUEUES\) holding jobs, settings or schedules/);
  await pruneFinished();
  expect((await t.post(`${api}/queues/fresh/jobs`, { payload: 1 }, worker)).status).toBe(201);
});

test('an empty queue row left behind is a new queue again: it must fit under the cap', async () => {
  t = await setup({ adminToken: ADMIN, workerToken: WORKER, maxQueues: 2 });
  await fillWithWorkerToken(['a', 'b']);
  await pruneFinished();
  // Two new queues take the two places...
  for (const q of ['c', 'd']) expect((await t.post(`${api}/queues/${q}/jobs`, { payload: 1 }, worker)).status).toBe(201);
  // ...and the old, empty rows cannot be filled past the cap.
  for (const q of ['a', 'b']) expect((await t.post(`${api}/queues/${q}/jobs`, { payload: 1 }, worker)).status).toBe(409);
  const inJobs = await t.client.execute('SELECT DISTINCT queue_name AS q FROM jobs ORDER BY 1');
  expect(inJobs.rows.map((r) => r.q)).toEqual(['c', 'd']);
});

test('settings and schedules keep an empty queue in use', async () => {
  t = await setup({ adminToken: ADMIN, workerToken: WORKER, maxQueues: 3 });
  await fillWithWorkerToken(['tuned', 'paused', 'scheduled']);
  expect((await t.call('PATCH', `${api}/queues/tuned/settings`, { maxAttempts: 7 }, admin)).status).toBe(200);
  expect((await t.post(`${api}/queues/paused/pause`, {}, admin)).status).toBe(200);
  const schedule = await t.post(`${api}/schedules`, { name: 'nightly', queue: 'scheduled', intervalMs: 366 * DAY, payload: {}, paused: true }, admin);
  expect(schedule.status).toBe(201);
  await pruneFinished();
  expect((await t.post(`${api}/queues/other/jobs`, { payload: 1 }, worker)).status).toBe(409);
  // Back to the server's defaults: the place is free again.
  expect((await t.call('PATCH', `${api}/queues/tuned/settings`, { maxAttempts: null }, admin)).status).toBe(200);
  expect((await t.post(`${api}/queues/other/jobs`, { payload: 1 }, worker)).status).toBe(201);
});

test('every settable queue column keeps a queue in use (a new column must join QUEUE_SETTING_COLUMNS)', async () => {
  t = await setup();
  const { QUEUE_SETTING_COLUMNS } = await import('../../src/db/store/queue-use.ts');
  const columns = (await t.client.execute('PRAGMA table_info(queues)')).rows.map((r) => String(r.name));
  const bookkeeping = ['name', 'created_at', 'updated_at', 'paused', 'rate_window_start', 'rate_claims', 'grouped_pending', 'group_serves'];
  expect(columns.filter((c) => !bookkeeping.includes(c)).sort()).toEqual([...QUEUE_SETTING_COLUMNS].sort());
});
