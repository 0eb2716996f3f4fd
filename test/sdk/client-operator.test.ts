/**
 * Everything an operator's script does over HTTP is a client call: every
 * route but the worker protocol (which is the SDK's) has one, and each is
 * run here against the real app (app.request as its fetch, a fresh database).
 */
import { afterEach, beforeEach, expect, test } from 'vitest';
import { createClient, type Client } from '../../src/client/index.ts';
import { setup, type TestBed } from '../support/helpers.ts';

const ADMIN = 'a'.repeat(24);
const WORKER = 'w'.repeat(24);
const auth = { authorization: `Bearer ${WORKER}` };

let t: TestBed;
let paths: string[];
beforeEach(async () => {
  t = await setup({ adminToken: ADMIN, workerToken: WORKER });
  paths = [];
});
afterEach(() => {
  expect(t.errors).toEqual([]);
  t.close();
});

function client(token = ADMIN): Client {
  const fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = new URL(String(input));
    paths.push(`${init?.method ?? 'GET'} ${url.pathname}${url.search}`);
    return t.app.request(url.pathname + url.search, init);
  };
  return createClient({ url: 'http://leasehold.test', token, fetch: fetch as typeof globalThis.fetch });
}

/** The client call(s) of each route a producer or an operator uses. A new route needs its call here, and in the client. */
const CALLS: Record<string, (keyof Client)[]> = {
  enqueueJobs: ['enqueue', 'enqueueMany'],
  enqueueFlow: ['enqueueFlow'],
  getJobDependencies: ['getJobDependencies'],
  getJob: ['getJob', 'getJobWithEvents'],
  listJobs: ['listJobs'],
  cancelJob: ['cancel'],
  retryJob: ['retry'],
  requeueJob: ['requeue'],
  waitForJobs: ['waitForJob', 'waitForJobs', 'events'],
  listQueues: ['listQueues'],
  getQueue: ['getQueue'],
  updateQueueSettings: ['updateQueueSettings'],
  setQueueAlertThresholds: ['setQueueAlertThresholds'],
  setQueueIndexedFields: ['setQueueIndexedFields'],
  pauseQueue: ['pauseQueue'],
  resumeQueue: ['resumeQueue'],
  deleteQueue: ['deleteQueue'],
  bulkQueueAction: ['bulk'],
  redriveDeadLetters: ['redrive'],
  runReaper: ['runReaper'],
  listSchedules: ['listSchedules'],
  createSchedule: ['createSchedule'],
  getSchedule: ['getSchedule'],
  updateSchedule: ['updateSchedule'],
  deleteSchedule: ['deleteSchedule'],
  listWorkers: ['listWorkers'],
  getMetrics: ['getMetrics'],
  listAlerts: ['listAlerts'],
  getTuning: ['getTuning'],
  getTuningWhatIf: ['getTuningWhatIf'],
  listAudit: ['listAudit'],
  startCanaryRequeue: ['startCanaryRequeue', 'planCanaryRequeue'],
  listHeldJobs: ['listHeldJobs'],
  releaseHeldJob: ['releaseHeldJob'],
  completeHeldJob: ['completeHeldJob'],
  failHeldJob: ['failHeldJob'],
  listCanaryRuns: ['listCanaryRuns'],
  getCanaryRun: ['getCanaryRun'],
  cancelCanaryRun: ['cancelCanaryRun'],
};

test('every route but the worker protocol has a client call', () => {
  const c = client();
  const routes = t.app.routeSpecs.filter((s) => s.tag !== 'worker').map((s) => s.operationId);
  expect(routes.filter((id) => !CALLS[id]), 'routes without a client call').toEqual([]);
  for (const id of routes) for (const call of CALLS[id]!) expect(typeof c[call], `${id}: client.${call}`).toBe('function');
});

test('queues: settings, alert thresholds, pause and resume, bulk actions (dry run and real), the reaper', async () => {
  const c = client();
  const jobs = await c.enqueueMany('mail', [{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
  expect((await c.listQueues()).map((q) => q.name)).toEqual(['mail']);
  expect(await c.getQueue('mail')).toMatchObject({ name: 'mail', paused: false, counts: { pending: 3 } });
  expect((await c.updateQueueSettings('mail', { maxAttempts: 7, rateLimit: { max: 10, windowMs: 60_000 } })).settings).toMatchObject({ maxAttempts: 7 });
  await expect(c.updateQueueSettings('mail', { leaseMs: 10 })).rejects.toMatchObject({ status: 400, field: 'leaseMs' });
  expect((await c.setQueueAlertThresholds('mail', {})).name).toBe('mail');
  expect((await c.setQueueIndexedFields('mail', ['payload.customerId'])).indexedFields).toEqual(['payload.customerId']);
  await expect(c.setQueueIndexedFields('mail', ["payload.x'"])).rejects.toMatchObject({ status: 400, field: 'fields[0]' });
  expect((await c.setQueueIndexedFields('mail', [])).indexedFields).toEqual([]);
  expect(await c.pauseQueue('mail')).toEqual({ queue: 'mail', paused: true });
  expect((await c.getQueue('mail')).paused).toBe(true);
  expect(await c.resumeQueue('mail')).toEqual({ queue: 'mail', paused: false });
  const dry = await c.bulk('mail', { action: 'cancel', dryRun: true });
  expect(dry).toMatchObject({ dryRun: true, matching: 3, wouldChange: 3 });
  const done = await c.bulk('mail', { action: 'cancel', limit: 2, reason: 'test run' });
  expect(done).toMatchObject({ dryRun: false, changed: 2, ids: [jobs[0]!.id, jobs[1]!.id] });
  await expect(c.bulk('mail', { action: 'cancel' })).rejects.toMatchObject({ status: 400, field: 'reason' });
  expect(await c.runReaper()).toHaveProperty('requeued');
  await expect(c.deleteQueue('mail')).rejects.toMatchObject({ status: 409, code: 'conflict' });
  await c.bulk('mail', { action: 'cancel', reason: 'test run' });
  await expect(c.deleteQueue('mail')).rejects.toMatchObject({ status: 409 });
  expect(await c.deleteQueue('mail', { purge: true })).toEqual({ deleted: 'mail', purgedFinishedJobs: 3 });
  expect(await c.listQueues()).toEqual([]);
});

test('jobs: list pages, one job with its events, requeue (dry run, refused while the reaper would wait, forced)', async () => {
  const c = client();
  const [a, b] = await c.enqueueMany('q', [{ payload: 'a' }, { payload: 'b' }]);
  const first = await c.listJobs({ queue: 'q', limit: 1 });
  expect(first.jobs.map((j) => j.id)).toEqual([b!.id]);
  expect((await c.listJobs({ queue: 'q', after: first.next! })).jobs.map((j) => j.id)).toEqual([a!.id]);
  expect((await c.listJobs({ status: 'running' })).jobs).toEqual([]);
  // where: one clause as a string, several as an array (each its own where=).
  expect((await c.listJobs({ where: 'payload = "a"' })).jobs.map((j) => j.id)).toEqual([a!.id]);
  expect((await c.listJobs({ where: ['payload ^= "b"', 'payload exists'] })).jobs.map((j) => j.id)).toEqual([b!.id]);
  expect(paths).toContain(`GET /api/v1/jobs?where=${encodeURIComponent('payload ^= "b"').replaceAll('%20', '+')}&where=payload+exists`);
  await expect(c.listJobs({ where: 'payload.x ~ 1' })).rejects.toMatchObject({ status: 400, field: 'where' });
  expect(paths).toContain('GET /api/v1/jobs?queue=q&limit=1');
  const claimedRes = await t.post('/api/v1/queues/q/claim', { workerId: 'w1' }, auth);
  const claimed = claimedRes.json.jobs[0] as { id: string };
  const history = await c.getJobWithEvents(claimed!.id);
  expect(history.events.map((e) => e.type)).toEqual(['enqueued', 'claimed']);
  await expect(c.requeue(claimed!.id)).rejects.toMatchObject({ status: 409, code: 'conflict' });
  expect(await c.requeue(claimed!.id, { force: true, dryRun: true })).toMatchObject({ dryRun: true, requeue: { action: 'requeue', forced: true } });
  const forced = await c.requeue(claimed!.id, { force: true, reason: 'stuck' });
  expect(forced.job).toMatchObject({ id: claimed!.id, status: 'pending' });
  const audit = await c.listAudit({ action: 'job.force_requeue' });
  expect(audit.entries.map((e) => [e.jobId, e.reason])).toEqual([[claimed!.id, 'stuck']]);
  expect((await c.listAudit({ limit: 1 })).entries).toHaveLength(1);
});

test('schedules: create, read, change, list, delete', async () => {
  const c = client();
  const made = await c.createSchedule('nightly', { queue: 'reports', cron: '0 3 * * *', timeZone: 'Europe/Berlin', payload: { kind: 'daily' } });
  expect(made).toMatchObject({ name: 'nightly', queue: 'reports', cron: '0 3 * * *', timeZone: 'Europe/Berlin', paused: false });
  expect((await c.getSchedule('nightly')).nextRuns.length).toBeGreaterThan(0);
  expect(await c.updateSchedule('nightly', { paused: true })).toMatchObject({ paused: true, nextRuns: [] });
  expect((await c.listSchedules()).map((s) => s.name)).toEqual(['nightly']);
  await expect(c.createSchedule('bad', { queue: 'reports', cron: 'not cron' })).rejects.toMatchObject({ status: 400, field: 'cron' });
  expect(await c.deleteSchedule('nightly')).toEqual({ deleted: 'nightly' });
  await expect(c.getSchedule('nightly')).rejects.toMatchObject({ status: 404 });
});

test('observability: workers (filtered), metrics, alerts, tuning; the worker token is refused on admin calls', async () => {
  const c = client();
  await c.enqueue('q', {});
  await t.post('/api/v1/queues/q/claim', { workerId: 'w1' }, auth);
  await t.post('/api/v1/workers/beat', { workerId: 'w1', queues: ['q'] }, auth);
  expect((await c.listWorkers()).workers.map((w) => w.id)).toEqual(['w1']);
  expect((await c.listWorkers({ queue: 'other' })).workers).toEqual([]);
  expect((await c.listWorkers({ alive: true })).alive).toBe(1);
  expect(await c.getMetrics()).toHaveProperty('queues');
  expect(await c.listAlerts()).toHaveProperty('alerts');
  expect(await c.getTuning()).toHaveProperty('queues');
  await expect(client(WORKER).listQueues()).rejects.toMatchObject({ status: 403, code: 'forbidden' });
});

test('canary requeue: plan, start (first step taken), read, list, cancel; bad input names the field', async () => {
  const c = client();
  await c.enqueueMany('hung', [{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
  expect((await t.post('/api/v1/queues/hung/claim', { workerId: 'stuck', limit: 3 }, auth)).json.jobs).toHaveLength(3);
  expect(await c.planCanaryRequeue('hung', { first: 1, force: true, reason: 'stuck' })).toMatchObject({ dryRun: true, selected: 3, steps: [1, 2] });
  const run = await c.startCanaryRequeue('hung', { first: 1, force: true, reason: 'stuck workers' });
  expect(run).toMatchObject({ state: 'watching', step: 1, requeued: 1, remaining: 2 });
  expect((await c.getCanaryRun(run.id)).steps).toHaveLength(1);
  expect((await c.listCanaryRuns()).map((r) => r.id)).toEqual([run.id]);
  expect(await c.cancelCanaryRun(run.id, { reason: 'enough' })).toMatchObject({ state: 'cancelled', stopWhy: 'enough' });
  await expect(c.startCanaryRequeue('hung', { first: 0, reason: 'x' })).rejects.toMatchObject({ status: 400, field: 'first' });
});

test('held jobs: the list, and an action on a job that is not held is a 409 saying its status', async () => {
  const c = client();
  const [job] = await c.enqueueMany('mail', [{ payload: 1 }]);
  expect(await c.listHeldJobs()).toEqual([]);
  await expect(c.releaseHeldJob(job!.id, { reason: 'checked' })).rejects.toMatchObject({ status: 409, code: 'conflict' });
  await expect(c.failHeldJob(job!.id, { reason: '' })).rejects.toMatchObject({ status: 400, field: 'reason' });
});

test('flows: a parent waits for its child, reads its result once it completed; an unknown id names its field (worker token)', async () => {
  const c = client(WORKER);
  const [child, parent] = await c.enqueueFlow([
    { queue: 'thumbs', payload: { image: 1 } },
    { queue: 'albums', payload: { album: 7 }, dependsOn: ['#0'], priority: 3 },
  ]);
  expect(parent).toMatchObject({ queue: 'albums', status: 'pending', priority: 3 });
  expect((await t.post('/api/v1/queues/albums/claim', { workerId: 'w1' }, auth)).json.jobs).toEqual([]);
  const [claimed] = (await t.post('/api/v1/queues/thumbs/claim', { workerId: 'w1' }, auth)).json.jobs;
  expect(claimed.id).toBe(child!.id);
  await t.post(`/api/v1/jobs/${child!.id}/complete`, { workerId: 'w1', lockToken: claimed.lockToken, result: { url: 't1' } }, auth);
  const graph = await c.getJobDependencies(parent!.id);
  expect(graph.dependencies).toEqual([expect.objectContaining({ id: child!.id, state: 'completed', result: { url: 't1' } })]);
  expect((await c.getJobDependencies(child!.id)).dependents.map((d) => d.id)).toEqual([parent!.id]);
  expect((await t.post('/api/v1/queues/albums/claim', { workerId: 'w1' }, auth)).json.jobs.map((j: { id: string }) => j.id)).toEqual([parent!.id]);
  await expect(c.enqueueFlow([{ queue: 'albums', payload: 1, dependsOn: ['987654'] }])).rejects.toMatchObject({ status: 400, field: 'jobs[0].dependsOn[0]' });
  await expect(c.getJobDependencies('987654')).rejects.toMatchObject({ status: 404 });
});
