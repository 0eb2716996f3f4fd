/**
 * Auth (docs/deploy.md and docs/configuration.md, the tokens): a worker token for worker calls, an admin
 * token for everything; wrong or missing tokens are refused before any write.
 */
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';

const ADMIN = 'a'.repeat(20);
const WORKER = 'w'.repeat(20);
const admin = { authorization: `Bearer ${ADMIN}` };
const worker = { authorization: `Bearer ${WORKER}` };

let t: TestBed;
beforeEach(async () => {
  t = await setup({ adminToken: ADMIN, workerToken: WORKER });
});
afterEach(() => {
  expect(t.errors).toEqual([]);
  t.close();
});

const api = '/api/v1';

async function countRows(table: string) {
  return Number((await t.client.execute(`select count(*) as n from ${table}`)).rows[0]!.n);
}

type Call = [method: 'GET' | 'POST' | 'PATCH', path: string, body?: unknown];

const workerCalls: Call[] = [
  ['POST', `${api}/queues/q/jobs`, { payload: 1 }],
  ['POST', `${api}/queues/q/claim`, { workerId: 'w1' }],
  ['POST', `${api}/jobs/1/heartbeat`, { workerId: 'w1', lockToken: 'x' }],
  ['POST', `${api}/heartbeats`, { workerId: 'w1', leases: [{ id: '1', lockToken: 'x' }] }],
  ['POST', `${api}/jobs/1/complete`, { workerId: 'w1', lockToken: 'x' }],
  ['POST', `${api}/completions`, { workerId: 'w1', results: [{ id: '1', lockToken: 'x' }] }],
  ['POST', `${api}/jobs/1/fail`, { workerId: 'w1', lockToken: 'x', error: 'e' }],
  ['POST', `${api}/jobs/1/release`, { workerId: 'w1', lockToken: 'x' }],
  // A producer reads back the jobs it enqueued (leasehold/client's getJob and waitForJob).
  ['GET', `${api}/jobs/1`],
];

const adminCalls: Call[] = [
  ['GET', `${api}/jobs`],
  ['GET', `${api}/queues`],
  ['GET', `${api}/queues/q`],
  ['PATCH', `${api}/queues/q/settings`, { graceMs: 20_000 }],
  ['POST', `${api}/queues/q/pause`],
  ['POST', `${api}/jobs/1/cancel`, {}],
  ['POST', `${api}/jobs/1/retry`, {}],
  ['POST', `${api}/jobs/1/requeue`, { force: true, reason: 'r' }],
  ['POST', `${api}/reaper/run`],
  ['GET', '/metrics'],
  ['GET', `${api}/metrics`],
  ['GET', `${api}/alerts`],
  ['GET', `${api}/tuning`],
];

const send = ([method, path, body]: Call, headers: Record<string, string>) =>
  method === 'GET' ? t.get(path, headers) : t.call(method, path, body ?? {}, headers);

describe.each([...workerCalls, ...adminCalls])('%s %s', (method, path, body) => {
  test('no header, a wrong token, a malformed header: 401, nothing written', async () => {
    await t.enqueue('q', { payload: 0 }).catch(() => undefined);
    const before = [await countRows('jobs'), await countRows('events'), await countRows('workers'), await countRows('queues')];
    const attempts: Record<string, string>[] = [
      {},
      { authorization: 'Bearer ' + 'x'.repeat(20) },
      { authorization: `Bearer ${ADMIN}x` },
      { authorization: `Basic ${ADMIN}` },
      { authorization: ADMIN },
      { authorization: 'Bearer' },
    ];
    for (const headers of attempts) {
      const res = await send([method, path, body], headers);
      expect(res.status).toBe(401);
      expect(res.json.error).toMatchObject({ code: 'unauthorized', field: 'authorization' });
    }
    expect([await countRows('jobs'), await countRows('events'), await countRows('workers'), await countRows('queues')]).toEqual(before);
  });

  test('the admin token is accepted', async () => {
    const res = await send([method, path, body], admin);
    expect(res.status).not.toBe(401);
    expect(res.status).not.toBe(403);
    expect(res.status).toBeLessThan(500);
  });
});

describe.each(workerCalls)('worker call %s %s', (method, path, body) => {
  test('the worker token is accepted', async () => {
    const res = await send([method, path, body], worker);
    expect([200, 201, 404, 409]).toContain(res.status);
  });
});

describe.each(adminCalls)('admin call %s %s', (method, path, body) => {
  test('the worker token is forbidden (403)', async () => {
    await t.post(`${api}/queues/q/jobs`, { payload: 0 }, worker);
    const before = [await countRows('jobs'), await countRows('events'), await countRows('queues')];
    const res = await send([method, path, body], worker);
    expect(res.status).toBe(403);
    expect(res.json.error).toMatchObject({ code: 'forbidden' });
    expect([await countRows('jobs'), await countRows('events'), await countRows('queues')]).toEqual(before);
  });
});

test('/healthz is open', async () => {
  const res = await t.get('/healthz');
  expect(res.status).toBe(200);
  expect(res.json.ok).toBe(true);
});

test('a worker with its token runs a job end to end; an admin reads it', async () => {
  const enq = await t.post(`${api}/queues/q/jobs`, { payload: { n: 1 } }, worker);
  expect(enq.status).toBe(201);
  const claim = await t.post(`${api}/queues/q/claim`, { workerId: 'w1' }, worker);
  const [c] = claim.json.jobs;
  expect((await t.post(`${api}/jobs/${c.id}/heartbeat`, { workerId: 'w1', lockToken: c.lockToken }, worker)).status).toBe(200);
  expect((await t.post(`${api}/jobs/${c.id}/complete`, { workerId: 'w1', lockToken: c.lockToken, result: 1 }, worker)).status).toBe(200);
  const read = await t.get(`${api}/jobs/${c.id}`, admin);
  expect(read.json.job.status).toBe('completed');
  const metrics = await t.get('/metrics', admin);
  expect(metrics.status).toBe(200);
  expect(metrics.text).toContain('leasehold_jobs{queue="q",status="completed"} 1');
});

test('the bearer scheme is case-insensitive', async () => {
  expect((await t.get(`${api}/queues`, { authorization: `bearer ${ADMIN}` })).status).toBe(200);
});

test('without tokens configured, everything is open (loopback default)', async () => {
  const open = await setup();
  try {
    expect((await open.get(`${api}/queues`)).status).toBe(200);
    expect((await open.get('/metrics')).status).toBe(200);
    expect((await open.post(`${api}/queues/q/jobs`, { payload: 1 })).status).toBe(201);
  } finally {
    open.close();
  }
});

describe('token settings the start would refuse still guard an app built without that check (fail closed)', () => {
  const enqueue = (bed: TestBed, headers: Record<string, string> = {}) =>
    bed.app.request(`${api}/queues/q/jobs`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ payload: 1 }) });

  test('a too-short token is still required, and still works', async () => {
    const bed = await setup({ adminToken: 'short-admin', workerToken: 'short-w' });
    try {
      expect((await enqueue(bed)).status).toBe(401);
      expect((await enqueue(bed, { authorization: 'Bearer short-w' })).status).toBe(201);
    } finally {
      bed.close();
    }
  });

  test('a token list where no entry can be read leaves the role closed, not open', async () => {
    const bed = await setup({ adminTokens: 'no-colon-here', workerTokens: ':' });
    try {
      expect((await enqueue(bed)).status).toBe(401);
      expect((await bed.app.request(`${api}/queues`)).status).toBe(401);
    } finally {
      bed.close();
    }
  });
});
