/**
 * The operator's API (src/api/ops-routes.ts): GET /workers, and
 * POST /queues/:queue/bulk with its dry run, cap, guards and audit trail.
 */
import { afterEach, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';

let t: TestBed;
afterEach(() => {
  expect(t.errors).toEqual([]);
  t.close();
});

const ADMIN = 'a'.repeat(24);
const WORKER = 'w'.repeat(24);

async function statuses(ids: string[]): Promise<string[]> {
  return Promise.all(ids.map(async (id) => (await t.get(`/api/v1/jobs/${id}`)).json.job.status as string));
}

async function eventCount(): Promise<number> {
  return Number((await t.client.execute('select count(*) as n from events')).rows[0]!.n);
}

async function pendingJobs(n: number, queue = 'mail'): Promise<string[]> {
  const res = await t.post(`/api/v1/queues/${queue}/jobs`, { jobs: Array.from({ length: n }, (_, i) => ({ payload: { i } })) });
  return (res.json.jobs as { id: string }[]).map((j) => j.id);
}

test('GET /workers lists the registry: liveness, queues, host, pid, version, reported and held jobs', async () => {
  t = await setup();
  await t.post('/api/v1/workers/beat', { workerId: 'old', host: 'h0', pid: 1, version: '0.0.9', queues: ['sms'], runningCount: 0 });
  t.clock.advance(60_000);
  await t.post('/api/v1/workers/beat', { workerId: 'w1', host: 'box-1', pid: 4242, version: '0.1.0', queues: ['mail', 'sms'], runningCount: 2 });
  await pendingJobs(3);
  await t.claim('mail', 'w1', { limit: 2, leaseMs: 5_000 });

  const res = await t.get('/api/v1/workers');
  expect(res.status).toBe(200);
  expect(res.json.alive).toBe(1);
  expect(res.json.workerAliveMs).toBe(t.config.workerAliveMs);
  const [w1, old] = res.json.workers;
  expect(w1).toMatchObject({
    id: 'w1',
    alive: true,
    queues: ['mail', 'sms'],
    host: 'box-1',
    pid: 4242,
    version: '0.1.0',
    runningCount: 2,
    heldJobs: 2,
    expiredLeases: 0,
    lastSeenAgoMs: 0,
  });
  expect(w1.startedAt).toBe(w1.lastSeenAt);
  expect(w1).toHaveProperty('restarts');
  expect(old).toMatchObject({ id: 'old', alive: false, heldJobs: 0, lastSeenAgoMs: 60_000 });
  expect((await t.get('/api/v1/workers?alive=true')).json.workers.map((w: { id: string }) => w.id)).toEqual(['w1']);

  // The held jobs' leases run out: the database says so, whatever the worker last reported.
  t.clock.advance(20_000);
  const later = await t.get('/api/v1/workers?alive=false');
  expect(later.json.workers.map((w: { id: string }) => w.id)).toEqual(['w1', 'old']);
  expect(later.json.workers[0]).toMatchObject({ alive: false, runningCount: 2, heldJobs: 2, expiredLeases: 2 });

  const mail = await t.get('/api/v1/workers?queue=sms');
  expect(mail.json.workers.map((w: { id: string }) => w.id)).toEqual(['w1', 'old']);
  expect((await t.get('/api/v1/workers?queue=mail')).json.workers.map((w: { id: string }) => w.id)).toEqual(['w1']);

  const bad = await t.get('/api/v1/workers?alive=maybe');
  expect(bad.status).toBe(400);
  expect(bad.json.error).toMatchObject({ code: 'invalid_request', field: 'alive' });
});

test('a bulk dry run lists the jobs it would touch, up to the limit, and changes nothing', async () => {
  t = await setup();
  const ids = await pendingJobs(5);
  const before = await eventCount();
  const res = await t.post('/api/v1/queues/mail/bulk', { action: 'cancel', dryRun: true, limit: 3 });
  expect(res.status).toBe(200);
  expect(res.json).toMatchObject({ queue: 'mail', action: 'cancel', status: 'pending', dryRun: true, matching: 5, matchingCapped: false, cap: 100, limit: 3, wouldChange: 3 });
  expect(res.json.jobs.map((j: { id: string }) => j.id)).toEqual(ids.slice(0, 3));
  expect(res.json.jobs[0]).toMatchObject({ queue: 'mail', status: 'pending', attempt: 0, lockedBy: null, leaseExpiresAt: null });
  expect(await statuses(ids)).toEqual(Array(5).fill('pending'));
  expect(await eventCount()).toBe(before);
});

test('a bulk action changes at most limit jobs, lowest id first, each audited with who and why', async () => {
  t = await setup();
  const ids = await pendingJobs(4);
  const res = await t.post('/api/v1/queues/mail/bulk', { action: 'cancel', limit: 2, reason: 'bad batch', actor: 'cli:ada' });
  expect(res.status).toBe(200);
  expect(res.json).toMatchObject({ dryRun: false, matching: 4, limit: 2, changed: 2, ids: ids.slice(0, 2) });
  expect(await statuses(ids)).toEqual(['cancelled', 'cancelled', 'pending', 'pending']);
  const events = await t.events(ids[0]!);
  expect(events.at(-1)).toMatchObject({ type: 'cancelled', reason: 'bad batch' });
  expect((await t.get(`/api/v1/jobs/${ids[0]}`)).json.events.at(-1).actor).toBe('cli:ada');

  // retry takes them back (cancelled is not the default status of retry: it must be named).
  const retried = await t.post('/api/v1/queues/mail/bulk', { action: 'retry', status: 'cancelled', reason: 'undo' });
  expect(retried.json).toMatchObject({ changed: 2, ids: ids.slice(0, 2) });
  expect(await statuses(ids)).toEqual(Array(4).fill('pending'));
});

test('the cap: a limit above it is refused, and without a limit at most the cap is acted on', async () => {
  t = await setup({ bulkActionCap: 3 });
  const ids = await pendingJobs(5);
  const over = await t.post('/api/v1/queues/mail/bulk', { action: 'cancel', limit: 4, reason: 'x' });
  expect(over.status).toBe(400);
  expect(over.json.error).toMatchObject({ code: 'invalid_request', field: 'limit' });
  expect(over.json.error.message).toContain('between 1 and 3');
  expect(await statuses(ids)).toEqual(Array(5).fill('pending'));

  const dry = await t.post('/api/v1/queues/mail/bulk', { action: 'cancel', dryRun: true });
  expect(dry.json).toMatchObject({ matching: 5, cap: 3, limit: 3, wouldChange: 3 });
  const done = await t.post('/api/v1/queues/mail/bulk', { action: 'cancel', reason: 'x' });
  expect(done.json.changed).toBe(3);
  expect(await statuses(ids)).toEqual(['cancelled', 'cancelled', 'cancelled', 'pending', 'pending']);
});

test.each([
  [{ action: 'delete', reason: 'x' }, 'action'],
  [{ reason: 'x' }, 'action'],
  [{ action: 'cancel', status: 'failed', reason: 'x' }, 'status'],
  [{ action: 'retry', status: 'zombie', reason: 'x' }, 'status'],
  [{ action: 'cancel' }, 'reason'],
  [{ action: 'cancel', reason: '' }, 'reason'],
  [{ action: 'cancel', reason: 'x', force: true }, 'force'],
  [{ action: 'requeue', force: true, dryRun: true }, 'reason'],
  [{ action: 'cancel', reason: 'x', limit: 0 }, 'limit'],
  [{ action: 'cancel', reason: 'x', limit: 2.5 }, 'limit'],
  [{ action: 'cancel', reason: 'x', dryRun: 'yes' }, 'dryRun'],
  [{ action: 'cancel', reason: 'x', everything: true }, 'everything'],
])('bad input %j is a 400 naming %s, and changes nothing', async (body, field) => {
  t = await setup();
  const ids = await pendingJobs(2);
  const before = await eventCount();
  const res = await t.post('/api/v1/queues/mail/bulk', body);
  expect(res.status).toBe(400);
  expect(res.json.error).toMatchObject({ code: 'invalid_request', field });
  expect(await statuses(ids)).toEqual(['pending', 'pending']);
  expect(await eventCount()).toBe(before);
});

test('a bad queue name in the path is a 400 naming queue', async () => {
  t = await setup();
  const res = await t.post('/api/v1/queues/-bad/bulk', { action: 'cancel', reason: 'x' });
  expect(res.status).toBe(400);
  expect(res.json.error.field).toBe('queue');
});

test('bulk requeue takes what the reaper would take now; force (with a reason) takes live leases too', async () => {
  t = await setup();
  await pendingJobs(2);
  const [short] = await t.claim('mail', 'w1', { limit: 1, leaseMs: 1_000 });
  const [long] = await t.claim('mail', 'w2', { limit: 1, leaseMs: 60_000 });
  // Past lease + grace, and w1 not seen for longer than workerAliveMs: the reaper would take it now.
  t.clock.advance(1_000 + t.config.graceMs + t.config.workerAliveMs + 1_000);

  const dry = await t.post('/api/v1/queues/mail/bulk', { action: 'requeue', dryRun: true });
  expect(dry.json).toMatchObject({ status: 'running', matching: 1, force: false });
  expect(dry.json.jobs).toMatchObject([{ id: short!.id, lockedBy: 'w1', status: 'running' }]);

  const res = await t.post('/api/v1/queues/mail/bulk', { action: 'requeue', reason: 'w1 is gone' });
  expect(res.json).toMatchObject({ changed: 1, ids: [short!.id] });
  expect(await statuses([short!.id, long!.id])).toEqual(['pending', 'running']);

  const forcedDry = await t.post('/api/v1/queues/mail/bulk', { action: 'requeue', force: true, dryRun: true, reason: 'w2 is stuck' });
  expect(forcedDry.json).toMatchObject({ matching: 1, force: true, jobs: [{ id: long!.id, lockedBy: 'w2' }] });
  expect(await statuses([long!.id])).toEqual(['running']);
  const forced = await t.post('/api/v1/queues/mail/bulk', { action: 'requeue', force: true, reason: 'w2 is stuck' });
  expect(forced.json).toMatchObject({ changed: 1, ids: [long!.id] });
  expect((await t.events(long!.id)).at(-1)).toMatchObject({ type: 'force_requeued_by_operator', reason: 'w2 is stuck' });
  // The old owner's token is void.
  const late = await t.post(`/api/v1/jobs/${long!.id}/complete`, { workerId: 'w2', lockToken: long!.lockToken });
  expect(late.status).toBe(409);
});

test('the worker token cannot list workers or act in bulk (403); no token is 401', async () => {
  t = await setup({ adminToken: ADMIN, workerToken: WORKER });
  const ids = await (async () => {
    const res = await t.post('/api/v1/queues/mail/jobs', { payload: {} }, { authorization: `Bearer ${WORKER}` });
    return [res.json.job.id as string];
  })();
  const worker = { authorization: `Bearer ${WORKER}` };
  expect((await t.get('/api/v1/workers', worker)).status).toBe(403);
  const bulk = await t.post('/api/v1/queues/mail/bulk', { action: 'cancel', reason: 'x' }, worker);
  expect(bulk.status).toBe(403);
  expect(bulk.json.error.code).toBe('forbidden');
  expect((await t.post('/api/v1/queues/mail/bulk', { action: 'cancel', reason: 'x' })).status).toBe(401);
  const admin = { authorization: `Bearer ${ADMIN}` };
  expect((await t.get(`/api/v1/jobs/${ids[0]}`, admin)).json.job.status).toBe('pending');
  expect((await t.get('/api/v1/workers', admin)).status).toBe(200);
});

test('the zombies, workers and alerts pages point to the playbook', async () => {
  t = await setup();
  for (const page of ['/dashboard/zombies', '/dashboard/workers', '/dashboard/alerts']) {
    const res = await t.app.request(page);
    expect(res.status, page).toBe(200);
    expect(await res.text(), page).toMatch(/class="hint playbook"[^]*docs\/playbook\.md[^]*this page is step/);
  }
});
