/**
 * Bad input (docs/http-api.md, errors): every bad request gets a 4xx with a JSON error
 * naming the field, never a 500, and changes nothing in the database.
 */
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';

let t: TestBed;
let claimedToken: string;
let claimedId: string;
beforeEach(async () => {
  t = await setup({ maxPayloadBytes: 4096 });
  // Some state to keep unchanged: a pending job and a running one.
  await t.enqueue('q', { payload: { keep: 1 }, idempotencyKey: 'k' });
  await t.enqueue('q', { payload: { keep: 2 } });
  const [c] = await t.claim('q', 'w');
  claimedToken = c!.lockToken;
  claimedId = c!.id;
});
afterEach(() => t.close());

const api = '/api/v1';

/** Everything a request could change, as plain data. */
async function snapshot() {
  const read = async (q: string) => JSON.stringify((await t.client.execute(q)).rows);
  return {
    jobs: await read('select * from jobs order by id'),
    events: await read('select * from events order by id'),
    queues: await read('select * from queues order by name'),
    workers: await read('select * from workers order by id'),
  };
}

async function expectRejected(
  send: () => Promise<{ status: number; json: any; text: string }>,
  status: number | number[],
  field?: string,
) {
  const before = await snapshot();
  const res = await send();
  const allowed = Array.isArray(status) ? status : [status];
  expect(allowed, `got ${res.status}: ${res.text}`).toContain(res.status);
  expect(res.json?.error?.code, res.text).toEqual(expect.any(String));
  expect(typeof res.json.error.message).toBe('string');
  if (field !== undefined && res.status === 400) expect(res.json.error.field).toBe(field);
  expect(res.text).not.toMatch(/at .*\.ts:\d+|SQLITE|stack/i);
  expect(await snapshot()).toEqual(before);
  return res;
}

afterEach(() => {
  expect(t.errors).toEqual([]);
});

describe('bodies', () => {
  test('malformed JSON: 400 naming body', async () => {
    const res = await expectRejected(() => t.post(`${api}/queues/q/jobs`, '{"payload": '), 400, 'body');
    expect(res.json.error.code).toBe('invalid_request');
  });

  test('empty body: 400 naming body', async () => {
    await expectRejected(() => t.post(`${api}/queues/q/jobs`, ''), 400, 'body');
    await expectRejected(() => t.post(`${api}/queues/q/claim`, '   '), 400, 'body');
  });

  test('not an object: 400 naming body', async () => {
    for (const body of ['[]', 'null', '42', '"text"', '[{"payload":1}]']) {
      await expectRejected(() => t.post(`${api}/queues/q/jobs`, body), 400, 'body');
    }
  });

  test('wrong or missing content-type: 415', async () => {
    const send = (headers: Record<string, string>) => async () => {
      const res = await t.app.request(`${api}/queues/q/jobs`, { method: 'POST', headers, body: JSON.stringify({ payload: 1 }) });
      const text = await res.text();
      return { status: res.status, json: JSON.parse(text), text };
    };
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonp']) {
      const res = await expectRejected(send({ 'content-type': type }), 415);
      expect(res.json.error).toMatchObject({ code: 'unsupported_media_type', field: 'content-type' });
    }
    await expectRejected(send({}), 415);
  });

  test('application/json with a charset is accepted', async () => {
    const res = await t.post(`${api}/queues/q/jobs`, { payload: 1 }, { 'content-type': 'application/json; charset=utf-8' });
    expect(res.status).toBe(201);
  });

  test('an oversize body: 413, nothing stored', async () => {
    const res = await expectRejected(() => t.post(`${api}/queues/q/jobs`, { payload: 'x'.repeat(10_000) }), 413);
    expect(res.json.error.code).toBe('payload_too_large');
    await expectRejected(() => t.post(`${api}/jobs/${claimedId}/complete`, { workerId: 'w', lockToken: claimedToken, result: 'y'.repeat(10_000) }), 413);
    expect((await t.get(`${api}/jobs/${claimedId}`)).json.job.status).toBe('running');
  });

  // The limit judges a body that declares its length by the header (Hono's
  // streamed count only for bodies without one): both ways must refuse it.
  test('an oversize body that declares its Content-Length: 413 naming body, nothing stored', async () => {
    const body = JSON.stringify({ payload: 'x'.repeat(10_000) });
    const res = await expectRejected(() => t.post(`${api}/queues/q/jobs`, body, { 'content-length': String(Buffer.byteLength(body)) }), 413);
    expect(res.json.error).toMatchObject({ code: 'payload_too_large', field: 'body' });
  });

  test('a body just under the limit that declares its Content-Length is read whole', async () => {
    const payload = 'x'.repeat(3_900);
    const body = JSON.stringify({ payload });
    const res = await t.post(`${api}/queues/q/jobs`, body, { 'content-length': String(Buffer.byteLength(body)) });
    expect(res.status).toBe(201);
    expect(res.json.job.payload).toBe(payload);
  });
});

describe('enqueue fields', () => {
  test.each([
    [{}, 'payload'],
    [{ payload: 1, idempotencyKey: 5 }, 'idempotencyKey'],
    [{ payload: 1, idempotencyKey: '' }, 'idempotencyKey'],
    [{ payload: 1, idempotencyKey: 'k'.repeat(256) }, 'idempotencyKey'],
    [{ payload: 1, priority: '1' }, 'priority'],
    [{ payload: 1, priority: 1.5 }, 'priority'],
    [{ payload: 1, priority: 1001 }, 'priority'],
    [{ payload: 1, priority: null }, 'priority'],
    [{ payload: 1, delayMs: -1 }, 'delayMs'],
    [{ payload: 1, delayMs: '10' }, 'delayMs'],
    [{ payload: 1, runAt: 'tomorrow' }, 'runAt'],
    [{ payload: 1, runAt: 1893456000000 }, 'runAt'],
    [{ payload: 1, runAt: '2030-13-45T00:00:00Z' }, 'runAt'],
    [{ payload: 1, runAt: '2030-02-31T00:00:00Z' }, 'runAt'], // Date.parse would roll it into March
    [{ payload: 1, runAt: '2030-01-01T00:00:00Z', delayMs: 5 }, 'runAt'],
    [{ payload: 1, maxAttempts: 0 }, 'maxAttempts'],
    [{ payload: 1, maxAttempts: true }, 'maxAttempts'],
    [{ payload: 1, timeoutMs: 0 }, 'timeoutMs'],
    [{ payload: 1, timeoutMs: 'never' }, 'timeoutMs'],
    [{ payload: 1, priorty: 3 }, 'priorty'],
    [{ payload: 1, queue: 'other' }, 'queue'],
  ])('%j: 400 naming %s', async (body, field) => {
    const res = await expectRejected(() => t.post(`${api}/queues/q/jobs`, body), 400, field);
    expect(res.json.error.code).toBe('invalid_request');
  });

  test('a bulk with one bad job stores none, and names the job by index', async () => {
    await expectRejected(() => t.post(`${api}/queues/q/jobs`, { jobs: [{ payload: 1 }, { payload: 2, priority: 'high' }] }), 400, 'jobs[1].priority');
    await expectRejected(() => t.post(`${api}/queues/q/jobs`, { jobs: [{ payload: 1 }, { payload: 2, runAt: 'soon' }] }), 400, 'jobs[1].runAt');
    await expectRejected(() => t.post(`${api}/queues/q/jobs`, { jobs: [{ payload: 1 }, {}] }), 400, 'jobs[1].payload');
    await expectRejected(() => t.post(`${api}/queues/q/jobs`, { jobs: [] }), 400, 'jobs');
    await expectRejected(() => t.post(`${api}/queues/q/jobs`, { jobs: 'x' }), 400, 'jobs');
    await expectRejected(() => t.post(`${api}/queues/q/jobs`, { jobs: [{ payload: 1 }], payload: 2 }), 400, 'payload');
  });
});

describe('claim fields', () => {
  test.each([
    [{}, 'workerId'],
    [{ workerId: 5 }, 'workerId'],
    [{ workerId: '' }, 'workerId'],
    [{ workerId: 'w'.repeat(201) }, 'workerId'],
    [{ workerId: 'w', limit: 0 }, 'limit'],
    [{ workerId: 'w', limit: 'all' }, 'limit'],
    [{ workerId: 'w', limit: -1 }, 'limit'],
    [{ workerId: 'w', limit: 2 ** 53 }, 'limit'],
    [{ workerId: 'w', limit: 2.5 }, 'limit'],
    [{ workerId: 'w', leaseMs: 999 }, 'leaseMs'],
    [{ workerId: 'w', leaseMs: 86_400_001 }, 'leaseMs'],
    [{ workerId: 'w', leaseMs: '30000' }, 'leaseMs'],
    [{ workerId: 'w', lease: 30000 }, 'lease'],
  ])('%j: 400 naming %s', async (body, field) => {
    await expectRejected(() => t.post(`${api}/queues/q/claim`, body), 400, field);
  });
});

describe('worker write fields', () => {
  test('heartbeat, complete, fail and batch bodies are validated before any write', async () => {
    const id = claimedId;
    await expectRejected(() => t.post(`${api}/jobs/${id}/heartbeat`, { workerId: 'w' }), 400, 'lockToken');
    await expectRejected(() => t.post(`${api}/jobs/${id}/heartbeat`, { workerId: 'w', lockToken: claimedToken, leaseMs: 10 }), 400, 'leaseMs');
    await expectRejected(() => t.post(`${api}/jobs/${id}/complete`, { workerId: 'w', lockToken: claimedToken, extra: 1 }), 400, 'extra');
    await expectRejected(() => t.post(`${api}/jobs/${id}/fail`, { workerId: 'w', lockToken: claimedToken }), 400, 'error');
    await expectRejected(() => t.post(`${api}/jobs/${id}/fail`, { workerId: 'w', lockToken: claimedToken, error: 'x', retryable: 'no' }), 400, 'retryable');
    await expectRejected(() => t.post(`${api}/jobs/${id}/fail`, { workerId: 'w', lockToken: claimedToken, error: 'x', retryAfterMs: -1 }), 400, 'retryAfterMs');
    await expectRejected(() => t.post(`${api}/jobs/${id}/checkpoint`, { workerId: 'w', lockToken: claimedToken }), 400, 'checkpoint');
    await expectRejected(() => t.post(`${api}/heartbeats`, { workerId: 'w', leases: [] }), 400, 'leases');
    await expectRejected(() => t.post(`${api}/heartbeats`, { workerId: 'w', leases: [{ id: 'abc', lockToken: claimedToken }] }), 400, 'leases[0].id');
    await expectRejected(() => t.post(`${api}/heartbeats`, { workerId: 'w', leases: [{ id: 7, lockToken: claimedToken }] }), 400, 'leases[0].id');
    await expectRejected(() => t.post(`${api}/completions`, { workerId: 'w', results: [{ id: id, lockToken: claimedToken }, { id: '0', lockToken: 'x' }] }), 400, 'results[1].id');
    await expectRejected(() => t.post(`${api}/jobs/${id}/requeue`, { force: 'yes' }), 400, 'force');
    expect((await t.get(`${api}/jobs/${id}`)).json.job.status).toBe('running');
  });
});

describe('queue names', () => {
  test.each([
    ['a space', 'my%20queue'],
    ['an encoded slash', 'a%2Fb'],
    ['unicode', encodeURIComponent('wärme')],
    ['an emoji', encodeURIComponent('🔥')],
    ['200 characters', 'q'.repeat(200)],
    ['a leading dot', '.hidden'],
    ['a leading dash', '-x'],
    ['an encoded dot-dot', '%2E%2E'],
    ['a quote', encodeURIComponent(`a'b`)],
    ['a percent sign', '100%25'],
  ])('%s: 400 naming queue (or 404), never 5xx, on enqueue and claim', async (_name, segment) => {
    await expectRejected(() => t.post(`${api}/queues/${segment}/jobs`, { payload: 1 }), [400, 404], 'queue');
    await expectRejected(() => t.post(`${api}/queues/${segment}/claim`, { workerId: 'w' }), [400, 404], 'queue');
    await expectRejected(() => t.post(`${api}/queues/${segment}/pause`), [400, 404], 'queue');
    await expectRejected(() => t.call('PATCH', `${api}/queues/${segment}/settings`, { graceMs: 20_000 }), [400, 404], 'queue');
    await expectRejected(() => t.get(`${api}/queues/${segment}`), [400, 404], 'queue');
  });

  test("a literal '..' segment: 400 or 404, never 5xx", async () => {
    await expectRejected(() => t.post(`${api}/queues/../jobs`, { payload: 1 }), [400, 404], 'queue');
    await expectRejected(() => t.post(`${api}/queues/a/../../jobs`, { payload: 1 }), [400, 404], 'queue');
  });

  test('the longest valid name (128) works, 129 does not', async () => {
    expect((await t.post(`${api}/queues/${'n'.repeat(128)}/jobs`, { payload: 1 })).status).toBe(201);
    await expectRejected(() => t.post(`${api}/queues/${'n'.repeat(129)}/jobs`, { payload: 1 }), 400, 'queue');
  });
});

describe('job ids', () => {
  const bad = ['abc', '0', '-1', '1e3', '99999999999999999999', '1.0', '01', '%20', '0x1', '1%00'];
  test.each(bad)('%j: 404 on every job route, never 500', async (id) => {
    await expectRejected(() => t.get(`${api}/jobs/${id}`), 404);
    for (const [path, body] of [
      ['heartbeat', { workerId: 'w', lockToken: claimedToken }],
      ['extend', { workerId: 'w', lockToken: claimedToken, leaseMs: 60_000 }],
      ['checkpoint', { workerId: 'w', lockToken: claimedToken, checkpoint: 1 }],
      ['complete', { workerId: 'w', lockToken: claimedToken }],
      ['fail', { workerId: 'w', lockToken: claimedToken, error: 'x' }],
      ['release', { workerId: 'w', lockToken: claimedToken }],
      ['cancel', {}],
      ['retry', {}],
      ['requeue', { force: true, reason: 'x' }],
    ] as const) {
      const res = await expectRejected(() => t.post(`${api}/jobs/${id}/${path}`, body), 404);
      expect(res.json.error.code).toBe('not_found');
    }
  });

  test('a well-formed id that does not exist: 404', async () => {
    await expectRejected(() => t.get(`${api}/jobs/999999999999999`), 404);
    await expectRejected(() => t.post(`${api}/jobs/999999999999999/complete`, { workerId: 'w', lockToken: claimedToken }), 404);
  });
});

describe('list query parameters', () => {
  test.each([
    ['status=bogus', 'status'],
    ['status=', 'status'],
    ['limit=0', 'limit'],
    ['limit=501', 'limit'],
    ['limit=abc', 'limit'],
    ['limit=-1', 'limit'],
    ['limit=1.5', 'limit'],
    ['after=-1', 'after'],
    ['after=abc', 'after'],
    ['after=99999999999999999999', 'after'],
    ['order=up', 'order'],
    ['queue=bad%20name', 'queue'],
    ['queue=', 'queue'],
    ['foo=1', 'foo'],
    ['idempotencyKey=', 'idempotencyKey'],
    [`idempotencyKey=${'k'.repeat(256)}`, 'idempotencyKey'],
  ])('?%s: 400 naming %s', async (query, field) => {
    await expectRejected(() => t.get(`${api}/jobs?${query}`), 400, field);
  });

  test('valid parameters page through the jobs', async () => {
    for (let i = 0; i < 3; i++) await t.enqueue('q', { payload: i });
    const first = await t.get(`${api}/jobs?queue=q&limit=2&order=asc`);
    expect(first.status).toBe(200);
    expect(first.json.jobs).toHaveLength(2);
    expect(first.json.next).toBe(first.json.jobs[1].id);
    const second = await t.get(`${api}/jobs?queue=q&limit=2&order=asc&after=${first.json.next}`);
    expect(second.json.jobs.map((j: any) => Number(j.id))).toEqual([3, 4]);
    const third = await t.get(`${api}/jobs?queue=q&limit=2&order=asc&after=${second.json.next}`);
    expect(third.json.jobs).toHaveLength(1);
    expect(third.json.next).toBeNull();
    const running = await t.get(`${api}/jobs?status=running`);
    expect(running.json.jobs.map((j: any) => j.id)).toEqual([claimedId]);
  });

  test('idempotencyKey finds the job enqueued with it, in any queue or in one', async () => {
    const a = await t.enqueue('q', { payload: 1, idempotencyKey: 'invoice-7' });
    const b = await t.enqueue('r', { payload: 2, idempotencyKey: 'invoice-7' });
    await t.enqueue('q', { payload: 3, idempotencyKey: 'invoice-8' });
    expect((await t.get(`${api}/jobs?idempotencyKey=invoice-7`)).json.jobs.map((j: any) => j.id)).toEqual([b.id, a.id]);
    expect((await t.get(`${api}/jobs?idempotencyKey=invoice-7&queue=q`)).json.jobs.map((j: any) => j.id)).toEqual([a.id]);
    expect((await t.get(`${api}/jobs?idempotencyKey=nope`)).json.jobs).toEqual([]);
  });
});

test('an unknown route: 404 JSON', async () => {
  await expectRejected(() => t.get(`${api}/nothing-here`), 404);
  await expectRejected(() => t.post(`${api}/jobs`, { payload: 1 }), 404);
});
