/**
 * The OpenAPI document tells the truth about answers: real answers from the
 * real app (successes and refusals, on every worker call and the producer
 * and admin calls) are checked with Ajv against the response schema the
 * document gives for that operation and status. A status the document does
 * not list for the operation fails too.
 */
import Ajv, { type ValidateFunction } from 'ajv';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';

type Schema = Record<string, any>;

let t: TestBed;
let doc: Schema;
const ajv = new Ajv({ strict: false, allErrors: true });
ajv.addFormat('date-time', (s: string) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/.test(s) && !Number.isNaN(Date.parse(s)));
const compiled = new Map<string, ValidateFunction>();
const checked = new Set<string>();

beforeAll(async () => {
  t = await setup({ workerToken: 'w'.repeat(20), adminToken: 'a'.repeat(20) });
  doc = (await t.get('/api/v1/openapi.json')).json;
  // Schemas refer to #/components/schemas/...: the document is Ajv's root for them.
  ajv.addSchema({ components: doc.components }, 'doc');
});
afterAll(() => t.close());

const W = { authorization: `Bearer ${'w'.repeat(20)}` };
const A = { authorization: `Bearer ${'a'.repeat(20)}` };

/** The schema the document gives for this operation and status (its $refs pointed at the document). */
function validatorFor(method: string, path: string, status: number): ValidateFunction {
  const key = `${method} ${path} ${status}`;
  let v = compiled.get(key);
  if (v) return v;
  const op = doc.paths[path]?.[method];
  if (!op) throw new Error(`the document has no ${method} ${path}`);
  let response = op.responses[String(status)];
  if (!response) throw new Error(`${method} ${path} answered ${status}, which the document does not list (${Object.keys(op.responses).join(', ')})`);
  if (response.$ref) response = doc.components.responses[response.$ref.split('/').at(-1)];
  const schema = JSON.parse(JSON.stringify(response.content['application/json'].schema).replaceAll('"#/components/', '"doc#/components/'));
  v = ajv.compile(schema);
  compiled.set(key, v);
  return v;
}

/** Calls the app and checks the answer against the document; returns the answer. */
async function call(method: string, docPath: string, url: string, body?: unknown, headers: Record<string, string> = W) {
  const res = await t.call(method.toUpperCase(), url, body, headers);
  const validate = validatorFor(method, docPath, res.status);
  const ok = validate(res.json);
  expect(ok, `${method} ${docPath} ${res.status}: ${ajv.errorsText(validate.errors)}\n${res.text.slice(0, 500)}`).toBe(true);
  checked.add(`${method} ${docPath} ${res.status}`);
  return res;
}

test('producer answers: enqueue (one, duplicate, bulk), get, list, cancel, retry, wait, and their refusals', async () => {
  const one = await call('post', '/api/v1/queues/{queue}/jobs', '/api/v1/queues/mail/jobs', { payload: { to: 'ada' }, idempotencyKey: 'k1' });
  expect(one.status).toBe(201);
  expect((await call('post', '/api/v1/queues/{queue}/jobs', '/api/v1/queues/mail/jobs', { payload: {}, idempotencyKey: 'k1' })).status).toBe(200);
  const bulk = await call('post', '/api/v1/queues/{queue}/jobs', '/api/v1/queues/mail/jobs', { jobs: [{ payload: 1 }, { payload: 2, idempotencyKey: 'k1' }] });
  expect(bulk.json.jobs[1].deduplicated).toBe(true);
  await call('get', '/api/v1/jobs/{id}', `/api/v1/jobs/${one.json.job.id}`);
  await call('get', '/api/v1/jobs', '/api/v1/jobs?queue=mail&limit=2', undefined, A);
  const pending = bulk.json.jobs[0].id;
  await call('post', '/api/v1/jobs/{id}/cancel', `/api/v1/jobs/${pending}/cancel`, { reason: 'test' }, A);
  expect((await call('post', '/api/v1/jobs/{id}/cancel', `/api/v1/jobs/${pending}/cancel`, {}, A)).status).toBe(409);
  await call('post', '/api/v1/jobs/{id}/retry', `/api/v1/jobs/${pending}/retry`, {}, A);
  const waited = await call('post', '/api/v1/jobs/wait', '/api/v1/jobs/wait', { jobs: [{ id: one.json.job.id, seen: '' }, { id: '99999' }] });
  expect(waited.json).toMatchObject({ jobs: [{ job: { id: one.json.job.id } }], missing: ['99999'], more: false });
  expect((await call('post', '/api/v1/jobs/wait', '/api/v1/jobs/wait', { jobs: [] })).status).toBe(400);

  expect((await call('get', '/api/v1/jobs/{id}', '/api/v1/jobs/99999')).status).toBe(404);
  expect((await call('post', '/api/v1/queues/{queue}/jobs', '/api/v1/queues/mail/jobs', { payload: 1, priority: 'high' })).status).toBe(400);
  expect((await call('post', '/api/v1/queues/{queue}/jobs', '/api/v1/queues/mail/jobs', { payload: 1 }, {})).status).toBe(401);
  expect((await call('get', '/api/v1/jobs', '/api/v1/jobs', undefined, W)).status).toBe(403);
  const unsupported = await t.app.request('/api/v1/queues/mail/jobs', { method: 'POST', headers: { ...W, 'content-type': 'text/plain' }, body: '{"payload":1}' });
  expect(unsupported.status).toBe(415);
  expect(validatorFor('post', '/api/v1/queues/{queue}/jobs', 415)(await unsupported.json())).toBe(true);
  const big = await call('post', '/api/v1/queues/{queue}/jobs', '/api/v1/queues/mail/jobs', { payload: 'x'.repeat(t.config.maxPayloadBytes + 10) });
  expect(big.status).toBe(413);
});

test('worker answers: claim, heartbeat, extend, checkpoint, effects, steps, duplicates, complete, completions, fail, release (one and many), snooze, beat; lease_lost', async () => {
  const q = '/api/v1/queues/work/jobs';
  for (let i = 0; i < 4; i++) await call('post', '/api/v1/queues/{queue}/jobs', q, { payload: i });
  const claim = await call('post', '/api/v1/queues/{queue}/claim', '/api/v1/queues/work/claim', { workerId: 'w1', limit: 3 });
  const [a, b, c] = claim.json.jobs as { id: string; lockToken: string }[];
  const own = (j: { lockToken: string }) => ({ workerId: 'w1', lockToken: j.lockToken });
  await call('post', '/api/v1/jobs/{id}/heartbeat', `/api/v1/jobs/${a!.id}/heartbeat`, { ...own(a!), progress: { pct: 10 } });
  await call('post', '/api/v1/jobs/{id}/extend', `/api/v1/jobs/${a!.id}/extend`, { ...own(a!), leaseMs: 60_000 });
  await call('post', '/api/v1/jobs/{id}/checkpoint', `/api/v1/jobs/${a!.id}/checkpoint`, { ...own(a!), checkpoint: { step: 2 } });
  await call('post', '/api/v1/heartbeats', '/api/v1/heartbeats', { workerId: 'w1', leases: [{ id: a!.id, lockToken: a!.lockToken }, { id: b!.id, lockToken: 'stale' }] });
  expect((await call('post', '/api/v1/jobs/{id}/effects/start', `/api/v1/jobs/${a!.id}/effects/start`, { ...own(a!), key: 'charge' })).json.state).toBe('run');
  await call('post', '/api/v1/jobs/{id}/effects/finish', `/api/v1/jobs/${a!.id}/effects/finish`, { ...own(a!), key: 'charge', result: { receipt: 1 } });
  expect((await call('post', '/api/v1/jobs/{id}/effects/start', `/api/v1/jobs/${a!.id}/effects/start`, { ...own(a!), key: 'charge' })).json.state).toBe('done');
  await call('post', '/api/v1/jobs/{id}/steps', `/api/v1/jobs/${a!.id}/steps`, own(a!));
  await call('post', '/api/v1/jobs/{id}/steps', `/api/v1/jobs/${a!.id}/steps`, { ...own(a!), lockToken: 'stale' });
  await call('post', '/api/v1/jobs/{id}/duplicates', `/api/v1/jobs/${a!.id}/duplicates`, { ...own(a!), key: 'charge ch_1' });
  await call('post', '/api/v1/jobs/{id}/duplicates', `/api/v1/jobs/${a!.id}/duplicates`, { ...own(a!), lockToken: 'stale', key: 'charge ch_1' });
  await call('post', '/api/v1/jobs/{id}/complete', `/api/v1/jobs/${a!.id}/complete`, { ...own(a!), result: 'ok' });
  const lost = await call('post', '/api/v1/jobs/{id}/complete', `/api/v1/jobs/${a!.id}/complete`, own(a!));
  expect(lost.json.error).toMatchObject({ code: 'lease_lost', status: 'completed' });
  await call('post', '/api/v1/jobs/{id}/fail', `/api/v1/jobs/${b!.id}/fail`, { ...own(b!), error: 'boom', retryable: false });
  await call('post', '/api/v1/jobs/{id}/release', `/api/v1/jobs/${c!.id}/release`, own(c!));
  // The same release again would be answered as stored (a repeat): a stale token is refused.
  const released = await call('post', '/api/v1/releases', '/api/v1/releases', { workerId: 'w1', leases: [{ id: c!.id, lockToken: 'stale' }] });
  expect(released.json.results[0]).toMatchObject({ ok: false, error: { code: 'lease_lost', status: 'pending' } });
  const [d] = (await call('post', '/api/v1/queues/{queue}/claim', '/api/v1/queues/work/claim', { workerId: 'w1' })).json.jobs;
  const both = await call('post', '/api/v1/completions', '/api/v1/completions', { workerId: 'w1', results: [{ id: d.id, lockToken: d.lockToken }, { id: a!.id, lockToken: 'stale' }], claim: { queue: 'work', limit: 2 } });
  expect(both.json.results.map((r: { ok: boolean }) => r.ok)).toEqual([true, false]);
  await call('post', '/api/v1/completions', '/api/v1/completions', { workerId: 'w1', results: [{ id: a!.id, lockToken: 'stale' }] });
  await call('post', '/api/v1/queues/{queue}/jobs', q, { payload: 'later' });
  const [e] = (await call('post', '/api/v1/queues/{queue}/claim', '/api/v1/queues/work/claim', { workerId: 'w1' })).json.jobs;
  await call('post', '/api/v1/jobs/{id}/snooze', `/api/v1/jobs/${e.id}/snooze`, { ...own(e), delayMs: 60_000 });
  expect((await call('post', '/api/v1/jobs/{id}/snooze', `/api/v1/jobs/${e.id}/snooze`, { ...own(e), lockToken: 'stale', delayMs: 60_000 })).status).toBe(409);
  await call('post', '/api/v1/workers/beat', '/api/v1/workers/beat', { workerId: 'w1', queues: ['work'], runningCount: 0 });
  // An empty claim is still a claim answer.
  expect((await call('post', '/api/v1/queues/{queue}/claim', '/api/v1/queues/empty/claim', { workerId: 'w1' })).json.jobs).toEqual([]);
});

test('admin and meta answers: queues, settings, alerts, pause, reaper, metrics, tuning, health', async () => {
  await call('post', '/api/v1/queues/{queue}/jobs', '/api/v1/queues/adm/jobs', { payload: 1 });
  await call('get', '/api/v1/queues', '/api/v1/queues', undefined, A);
  await call('get', '/api/v1/queues/{queue}', '/api/v1/queues/adm', undefined, A);
  expect((await call('get', '/api/v1/queues/{queue}', '/api/v1/queues/nope', undefined, A)).status).toBe(404);
  await call('patch', '/api/v1/queues/{queue}/settings', '/api/v1/queues/adm/settings', { leaseMs: 60_000 }, A);
  await call('put', '/api/v1/queues/{queue}/alerts', '/api/v1/queues/adm/alerts', {}, A);
  await call('post', '/api/v1/queues/{queue}/pause', '/api/v1/queues/adm/pause', {}, A);
  await call('post', '/api/v1/queues/{queue}/resume', '/api/v1/queues/adm/resume', {}, A);
  await call('post', '/api/v1/reaper/run', '/api/v1/reaper/run', {}, A);
  await call('get', '/api/v1/metrics', '/api/v1/metrics', undefined, A);
  await call('get', '/api/v1/alerts', '/api/v1/alerts', undefined, A);
  await call('get', '/api/v1/tuning', '/api/v1/tuning', undefined, A);
  await call('get', '/healthz', '/healthz', undefined, {});
  expect((await call('get', '/api/v1/queues', '/api/v1/queues', undefined, W)).status).toBe(403);
  expect(t.errors).toEqual([]);
});

test('operator views: workers, schedules, bulk (dry run and real), audit, and metrics, alerts, tuning and the reaper with something to show', async () => {
  const q = '/api/v1/queues/ops/jobs';
  for (let i = 0; i < 4; i++) await call('post', '/api/v1/queues/{queue}/jobs', q, { payload: i });
  const beat = { workerId: 'w-ops', instanceId: 'i-1', host: 'box', pid: 42, version: '1.0', queues: ['ops'], runningCount: 2, eventLoopBlocks: 1, longestEventLoopBlockMs: 250, heartbeatFailures: 0, leasesLost: 0 };
  await call('post', '/api/v1/workers/beat', '/api/v1/workers/beat', beat);
  const claim = await call('post', '/api/v1/queues/{queue}/claim', '/api/v1/queues/ops/claim', { workerId: 'w-ops', instanceId: 'i-1', limit: 2 });
  const [done, left] = claim.json.jobs as { id: string; lockToken: string }[];
  await call('post', '/api/v1/jobs/{id}/complete', `/api/v1/jobs/${done!.id}/complete`, { workerId: 'w-ops', lockToken: done!.lockToken, result: 1 });
  const workers = await call('get', '/api/v1/workers', '/api/v1/workers?alive=true&queue=ops', undefined, A);
  expect(workers.json.workers[0]).toMatchObject({ id: 'w-ops', counters: { eventLoopBlocks: 1 }, heldJobs: 1 });
  await call('get', '/api/v1/metrics', '/api/v1/metrics', undefined, A);
  await call('get', '/api/v1/tuning', '/api/v1/tuning', undefined, A);
  const requeueDry = await call('post', '/api/v1/queues/{queue}/bulk', '/api/v1/queues/ops/bulk', { action: 'requeue', dryRun: true }, A);
  expect(requeueDry.json).toMatchObject({ dryRun: true, action: 'requeue', status: 'running' });

  // The worker goes away and its lease runs out: the reaper takes the job back, and the views say so.
  t.clock.advance(60 * 60_000);
  const reaped = await call('post', '/api/v1/reaper/run', '/api/v1/reaper/run', {}, A);
  expect(reaped.json.requeued.map((r: { id: string }) => r.id)).toContain(left!.id);
  const metrics = await call('get', '/api/v1/metrics', '/api/v1/metrics', undefined, A);
  expect(metrics.json.queues.find((m: { queue: string }) => m.queue === 'ops').reapedTotal.total).toBeGreaterThan(0);
  await call('get', '/api/v1/alerts', '/api/v1/alerts', undefined, A);
  await call('get', '/api/v1/tuning', '/api/v1/tuning', undefined, A);
  await call('get', '/api/v1/workers', '/api/v1/workers?alive=false', undefined, A);

  const dry = await call('post', '/api/v1/queues/{queue}/bulk', '/api/v1/queues/ops/bulk', { action: 'cancel', dryRun: true, limit: 2 }, A);
  expect(dry.json.jobs).toHaveLength(2);
  const bulk = await call('post', '/api/v1/queues/{queue}/bulk', '/api/v1/queues/ops/bulk', { action: 'cancel', reason: 'test' }, A);
  expect(bulk.json).toMatchObject({ dryRun: false, changed: 3 });

  const schedule = { name: 'nightly', queue: 'ops', cron: '0 3 * * *', timeZone: 'Europe/Berlin', payload: { report: true }, jobOptions: { priority: 2 } };
  expect((await call('post', '/api/v1/schedules', '/api/v1/schedules', schedule, A)).status).toBe(201);
  expect((await call('post', '/api/v1/schedules', '/api/v1/schedules', schedule, A)).status).toBe(409);
  await call('post', '/api/v1/schedules', '/api/v1/schedules', { name: 'hourly', queue: 'ops', intervalMs: 3_600_000, paused: true }, A);
  await call('get', '/api/v1/schedules', '/api/v1/schedules', undefined, A);
  await call('get', '/api/v1/schedules/{name}', '/api/v1/schedules/nightly', undefined, A);
  await call('patch', '/api/v1/schedules/{name}', '/api/v1/schedules/nightly', { paused: true }, A);
  await call('delete', '/api/v1/schedules/{name}', '/api/v1/schedules/nightly', undefined, A);
  expect((await call('get', '/api/v1/schedules/{name}', '/api/v1/schedules/nightly', undefined, A)).status).toBe(404);
  const audit = await call('get', '/api/v1/audit', '/api/v1/audit?limit=5&action=jobs.bulk', undefined, A);
  expect(audit.json.entries).toHaveLength(1);
  expect(t.errors).toEqual([]);
});

test('the schemas are strict enough to catch a wrong answer', async () => {
  const answer = (await t.get(`/api/v1/jobs/1`, W)).json;
  const validate = validatorFor('get', '/api/v1/jobs/{id}', 200);
  expect(validate(answer)).toBe(true);
  const { status: _status, ...withoutStatus } = answer.job;
  expect(validate({ ...answer, job: withoutStatus })).toBe(false);
  expect(validate({ ...answer, job: { ...answer.job, status: 'zombie' } })).toBe(false);
  expect(validate({ ...answer, job: { ...answer.job, createdAt: 'yesterday' } })).toBe(false);
  expect(validate({ ...answer, job: { ...answer.job, lockToken: 'never sent' } })).toBe(false);
});

test('every worker operation was checked with a success and a refusal', () => {
  for (const path of ['/api/v1/jobs/{id}/complete']) {
    expect(checked).toContain(`post ${path} 200`);
    expect(checked).toContain(`post ${path} 409`);
  }
  const worker = Object.entries(doc.paths as Record<string, Record<string, Schema>>).flatMap(([path, m]) => Object.entries(m).filter(([, op]) => op.tags[0] === 'worker').map(([method]) => `${method} ${path}`));
  for (const op of worker) expect([...checked].some((c) => c.startsWith(`${op} 2`)), op).toBe(true);
});
