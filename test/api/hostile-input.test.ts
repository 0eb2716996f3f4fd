/**
 * What a hostile client (or an unlucky one) found, pinned:
 * - a lone UTF-16 surrogate in a stored string crashed the process (libSQL
 *   panics reading it back), and NUL made two identifiers look the same;
 * - JSON documents carrying them must round-trip on every route;
 * - an unparseable Host header gave a 500 with a stack trace;
 * - in open mode (no tokens) any Host was served (DNS rebinding) and simple
 *   cross-site POSTs could act;
 * - effects/finish took no lock token.
 */
import { request as httpRequest } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createWorker } from '../../src/worker/index.ts';
import { dbTransport } from '../../src/embedded/db-transport.ts';
import { storableText, textProblem } from '../../src/core/text.ts';
import { setup, type TestBed } from '../support/helpers.ts';
import { startServerProcess, type ServerProcess } from '../support/process-helpers.ts';

const api = '/api/v1';
const LONE_HIGH = 'x\ud83d';
const LONE_LOW = '\ude00y';
const WITH_NUL = 'trusted\u0000tail';

/** A raw HTTP request, so the Host header and body bytes are exactly what we say. */
function rawRequest(url: string, o: { method: string; path: string; headers: Record<string, string>; body?: string }) {
  const { hostname, port } = new URL(url);
  return new Promise<{ status: number; text: string; headers: Record<string, unknown> }>((resolve, reject) => {
    const req = httpRequest({ hostname, port, method: o.method, path: o.path, headers: o.headers, setHost: false }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, text, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(o.body);
  });
}

describe('text the database cannot keep', () => {
  test('textProblem names lone surrogates and NUL; storableText repairs and cuts without splitting a pair', () => {
    expect(textProblem('ok 😀')).toBeUndefined();
    expect(textProblem(LONE_HIGH)).toMatch(/lone UTF-16 surrogate at index 1/);
    expect(textProblem(LONE_LOW)).toMatch(/lone UTF-16 surrogate at index 0/);
    expect(textProblem(WITH_NUL)).toMatch(/NUL character at index 7/);
    expect(storableText('ab😀', 3)).toBe('ab');
    expect(storableText('a\ud83d\u0000', 10)).toBe('a\ufffd\ufffd');
    expect(textProblem(storableText('😀'.repeat(200), 255))).toBeUndefined();
  });
});

describe('a real server survives lone surrogates and NUL in every stored string', () => {
  let server: ServerProcess;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'leasehold-hostile-'));
    server = await startServerProcess(['--database-url', `file:${join(dir, 'x.db')}`]);
  });
  afterAll(() => {
    server?.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${server.url}${api}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, json: (await res.json()) as any };
  };

  test('each is a 400 naming the field, and the process is still up afterwards', async () => {
    const job = (await post('/queues/q/jobs', { payload: 1 })).json.job;
    const claimed = (await post('/queues/q/claim', { workerId: 'w1' })).json.jobs[0];
    const own = { workerId: 'w1', lockToken: claimed.lockToken };
    const cases: [string, unknown, string][] = [];
    for (const bad of [LONE_HIGH, LONE_LOW, WITH_NUL]) {
      cases.push(
        ['/queues/q/jobs', { payload: 1, idempotencyKey: bad }, 'idempotencyKey'],
        ['/queues/q/jobs', { jobs: [{ payload: 1 }, { payload: 2, idempotencyKey: bad }] }, 'jobs[1].idempotencyKey'],
        ['/queues/q/claim', { workerId: bad }, 'workerId'],
        [`/jobs/${job.id}/heartbeat`, { ...own, lockToken: bad }, 'lockToken'],
        [`/jobs/${job.id}/heartbeat`, { ...own, workerId: bad }, 'workerId'],
        ['/heartbeats', { workerId: 'w1', leases: [{ id: job.id, lockToken: bad }] }, 'leases[0].lockToken'],
        [`/jobs/${job.id}/fail`, { ...own, error: `boom ${bad}` }, 'error'],
        [`/jobs/${job.id}/release`, { ...own, reason: bad }, 'reason'],
        [`/jobs/${job.id}/effects/start`, { ...own, key: bad }, 'key'],
        ['/workers/beat', { workerId: 'w1', host: bad }, 'host'],
        ['/workers/beat', { workerId: 'w1', version: bad }, 'version'],
        [`/jobs/${job.id}/requeue`, { reason: bad, force: true }, 'reason'],
        [`/jobs/${job.id}/cancel`, { actor: bad }, 'actor'],
      );
    }
    for (const [path, body, field] of cases) {
      const res = await post(path, body);
      expect(res.status, `${path} ${JSON.stringify(body)}: ${JSON.stringify(res.json)}`).toBe(400);
      expect(res.json.error.field).toBe(field);
    }
    // The query string too.
    const listed = await fetch(`${server.url}${api}/jobs?idempotencyKey=${encodeURIComponent('a\u0000b')}`);
    expect(listed.status).toBe(400);
    // Still serving, and the job is still its owner's.
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    expect((await post(`/jobs/${job.id}/heartbeat`, own)).status).toBe(200);
    expect(server.child.exitCode).toBeNull();
  });

  test('an unparseable Host header is a 400 with one log line, not a 500 with a stack trace', async () => {
    const before = server.output().length;
    for (const path of ['/healthz', `${api}/queues`, '/dashboard', '/nowhere']) {
      const res = await rawRequest(server.url, { method: 'GET', path, headers: { host: 'xn--' } });
      expect(res.status, `${path}: ${res.text}`).toBe(400);
      expect(JSON.parse(res.text).error).toMatchObject({ code: 'invalid_request', field: 'host' });
    }
    const res = await rawRequest(server.url, { method: 'POST', path: `${api}/queues/q/jobs`, headers: { host: 'xn--', 'content-type': 'application/json' }, body: '{"payload":1}' });
    expect(res.status).toBe(400);
    await new Promise((r) => setTimeout(r, 100));
    const logged = server.output().slice(before);
    expect(logged.trim().split('\n')).toHaveLength(5);
    expect(logged).not.toMatch(/\bat .*:\d+:\d+|TypeError/);
  });
});

describe('JSON documents carrying lone surrogates and NUL round-trip on every route', () => {
  let t: TestBed;
  beforeAll(async () => {
    t = await setup();
  });
  afterAll(() => t?.close());

  const doc = { high: LONE_HIGH, low: LONE_LOW, nul: WITH_NUL, [LONE_HIGH]: 'key', nested: [WITH_NUL, { [WITH_NUL]: LONE_LOW }] };

  test('payload (single and bulk), progress, checkpoint, result and effect results', async () => {
    const single = await t.post(`${api}/queues/docs/jobs`, { payload: doc });
    expect(single.status).toBe(201);
    expect(single.json.job.payload).toEqual(doc);
    const bulk = await t.post(`${api}/queues/docs/jobs`, { jobs: [{ payload: doc, priority: -1 }] });
    expect(bulk.status).toBe(201);
    expect((await t.get(`${api}/jobs/${bulk.json.jobs[0].id}`)).json.job.payload).toEqual(doc);

    const [a, b] = await t.claim('docs', 'w1', { limit: 2 });
    expect(a!.payload).toEqual(doc);
    expect((await t.post(`${api}/jobs/${a!.id}/heartbeat`, { workerId: 'w1', lockToken: a!.lockToken, progress: doc })).status).toBe(200);
    expect((await t.get(`${api}/jobs/${a!.id}`)).json.job.progress).toEqual(doc);
    expect((await t.post(`${api}/heartbeats`, { workerId: 'w1', leases: [{ id: b!.id, lockToken: b!.lockToken, progress: doc }] })).json.results[0].ok).not.toBe(false);
    expect((await t.get(`${api}/jobs/${b!.id}`)).json.job.progress).toEqual(doc);
    expect((await t.post(`${api}/jobs/${a!.id}/checkpoint`, { workerId: 'w1', lockToken: a!.lockToken, checkpoint: doc })).status).toBe(200);
    expect((await t.get(`${api}/jobs/${a!.id}`)).json.job.checkpoint).toEqual(doc);

    expect((await t.post(`${api}/jobs/${a!.id}/effects/start`, { workerId: 'w1', lockToken: a!.lockToken, key: 'e' })).json.state).toBe('run');
    const fin = await t.post(`${api}/jobs/${a!.id}/effects/finish`, { workerId: 'w1', lockToken: a!.lockToken, key: 'e', result: doc });
    expect(fin.json.result).toEqual(doc);

    expect((await t.post(`${api}/jobs/${a!.id}/complete`, { workerId: 'w1', lockToken: a!.lockToken, result: doc })).json.job.result).toEqual(doc);
    const many = await t.post(`${api}/completions`, { workerId: 'w1', results: [{ id: b!.id, lockToken: b!.lockToken, result: doc }] });
    expect(many.json.results[0].ok).not.toBe(false);
    expect((await t.get(`${api}/jobs/${b!.id}`)).json.job.result).toEqual(doc);
    // The dashboard renders them without error.
    expect((await t.get(`/dashboard/jobs/${a!.id}`)).status).toBe(200);
    expect(t.errors).toEqual([]);
  });

  test('NUL: two keys or workers that differ after a NUL are refused, not stored as the same', async () => {
    expect((await t.post(`${api}/queues/n/jobs`, { payload: 1, idempotencyKey: 'trusted' })).status).toBe(201);
    const res = await t.post(`${api}/queues/n/jobs`, { payload: 2, idempotencyKey: WITH_NUL });
    expect(res.status).toBe(400);
    expect(res.json.error.field).toBe('idempotencyKey');
    expect((await t.post(`${api}/queues/n/claim`, { workerId: 'trusted-worker\u0000evil' })).status).toBe(400);
    expect((await t.client.execute(`select count(*) n from jobs where queue_name = 'n'`)).rows[0]!.n).toBe(1);
  });
});

describe('paths that skip the HTTP validators', () => {
  let t: TestBed;
  beforeAll(async () => {
    t = await setup();
  });
  afterAll(() => t?.close());

  test('the in-process transport refuses bad text with an error instead of crashing', async () => {
    const transport = dbTransport(t.engine);
    await t.enqueue('p');
    const {
      jobs: [c],
    } = await transport.claim({ queue: 'p', workerId: 'w1', limit: 1 });
    await expect(transport.heartbeat({ workerId: 'w1', leases: [{ id: c!.id, lockToken: LONE_HIGH }] })).rejects.toMatchObject({ code: 'invalid_request', field: 'lockToken' });
    await expect(transport.claim({ queue: 'p', workerId: WITH_NUL, limit: 1 })).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(transport.fail({ workerId: 'w1', lease: c!, error: LONE_LOW, retryable: true })).rejects.toMatchObject({ code: 'invalid_request' });
    // The owner's lease is untouched.
    expect((await transport.heartbeat({ workerId: 'w1', leases: [c!] }))[0]!.ok).toBe(true);
  });

  test('createWorker refuses a bad worker id or queue at once; once() a bad key; a thrown error with a cut emoji is still recorded', async () => {
    const transport = dbTransport(t.engine);
    expect(() => createWorker({ transport, queue: 'p', workerId: WITH_NUL, handler: async () => {}, handleSignals: false })).toThrow(/NUL/);
    expect(() => createWorker({ transport, queue: LONE_HIGH, handler: async () => {}, handleSignals: false })).toThrow(/surrogate/);

    const job = await t.enqueue('cut', { payload: {}, maxAttempts: 1 });
    let onceError: unknown;
    const worker = createWorker({
      transport,
      queue: 'cut',
      handleSignals: false,
      pollMs: 10,
      handler: async (ctx) => {
        await ctx.once(LONE_HIGH, () => 1).catch((e) => (onceError = e));
        throw new Error(('😀'.repeat(10_000) + 'x').slice(0, 15_999));
      },
    });
    const failed = new Promise((resolve) => worker.on('failed', resolve));
    worker.start();
    await failed;
    await worker.close();
    expect(String(onceError)).toMatch(/surrogate/);
    const view = (await t.get(`${api}/jobs/${job.id}`)).json.job;
    expect(view.status).toBe('failed');
    expect(textProblem(view.lastError)).toBeUndefined();
  });
});

describe('open mode: only loopback names, and no simple cross-site requests', () => {
  let t: TestBed;
  beforeAll(async () => {
    t = await setup({ port: 8787 });
  });
  afterAll(() => t?.close());

  const at = (host: string, path: string, init: RequestInit = {}) =>
    t.app.request(new Request(`http://localhost${path}`, { ...init, headers: { ...(init.headers as Record<string, string>), host } }));

  test('a rebinding Host is refused with 421 on the API and the dashboard, and no session cookie is set', async () => {
    await t.enqueue('secret', { payload: { card: '4111' } });
    for (const host of ['attacker.example:8787', 'attacker.example', '127.0.0.2:8787', 'localhost:9999', 'localhost.:8787']) {
      for (const path of [`${api}/jobs`, '/dashboard', '/metrics']) {
        const res = await at(host, path);
        expect(res.status, `${host} ${path}`).toBe(421);
        expect(res.headers.get('set-cookie')).toBeNull();
        expect(await res.text()).not.toContain('4111');
      }
    }
    for (const host of ['127.0.0.1:8787', 'localhost:8787', '[::1]:8787', 'localhost', 'LOCALHOST:8787']) {
      expect((await at(host, `${api}/jobs`)).status, host).toBe(200);
    }
  });

  test('with both tokens set, any Host is served (the token admits)', async () => {
    const secured = await setup({ port: 8787, adminToken: 'a'.repeat(20), workerToken: 'w'.repeat(20) });
    try {
      const res = await secured.app.request(new Request('http://x/api/v1/jobs', { headers: { host: 'queue.internal.example', authorization: `Bearer ${'a'.repeat(20)}` } }));
      expect(res.status).toBe(200);
    } finally {
      secured.close();
    }
  });

  test('bodyless admin POSTs need JSON, and a foreign Origin or Sec-Fetch-Site cannot act', async () => {
    const pause = (headers: Record<string, string>, body?: string) => t.app.request(`${api}/queues/email/pause`, { method: 'POST', headers, body });
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      expect((await pause({ 'content-type': type }, 'a=1')).status, type).toBe(415);
    }
    expect((await pause({})).status).toBe(415);
    expect((await pause({ 'content-type': 'application/json', origin: 'https://evil.example' })).status).toBe(403);
    expect((await pause({ 'content-type': 'application/json', 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await pause({ 'content-type': 'application/json', 'sec-fetch-site': 'same-site' })).status).toBe(403);
    expect((await pause({ 'content-type': 'application/json', origin: 'null' })).status).toBe(403);
    const reap = await t.app.request(`${api}/reaper/run`, { method: 'POST', headers: { 'content-type': 'text/plain', origin: 'https://evil.example' } });
    expect(reap.status).toBe(415);
    const queue = await t.get(`${api}/queues/email`);
    expect(queue.status === 404 || queue.json.queue.paused === false).toBe(true);
    // Our own origin, and non-browser clients, still can.
    expect((await pause({ 'content-type': 'application/json', origin: 'http://localhost', 'sec-fetch-site': 'same-origin' })).status).toBe(200);
    expect((await pause({ 'content-type': 'application/json' })).status).toBe(200);
  });
});

describe('effects/finish is an owned write', () => {
  test("a stranger cannot record another job's effect result; the owner can, once", async () => {
    const t = await setup();
    try {
      const job = await t.enqueue('fx');
      const [c] = await t.claim('fx', 'owner');
      const own = { workerId: 'owner', lockToken: c!.lockToken };
      expect((await t.post(`${api}/jobs/${job.id}/effects/start`, { ...own, key: 'send-email' })).json.state).toBe('run');

      // Without a token: refused by the validator. With a guessed or stolen one: lease_lost, recorded.
      const bare = await t.post(`${api}/jobs/${job.id}/effects/finish`, { workerId: 'stranger', key: 'send-email', result: { forged: true } });
      expect(bare.status).toBe(400);
      expect(bare.json.error.field).toBe('lockToken');
      const guessed = await t.post(`${api}/jobs/${job.id}/effects/finish`, { workerId: 'stranger', lockToken: 'guess', key: 'send-email', result: { forged: true } });
      expect(guessed.status).toBe(409);
      const stolen = await t.post(`${api}/jobs/${job.id}/effects/finish`, { workerId: 'stranger', lockToken: c!.lockToken, key: 'send-email', result: { forged: true } });
      expect(stolen.status).toBe(409);
      const refusals = (await t.events(job.id)).filter((e) => e.type === 'stale_write_rejected' && e.reason === 'effect_finish');
      expect(refusals).toHaveLength(2);

      // A key the owner never started is not a place to write either.
      expect((await t.post(`${api}/jobs/${job.id}/effects/finish`, { ...own, key: 'other', result: 1 })).status).toBe(404);

      const fin = await t.post(`${api}/jobs/${job.id}/effects/finish`, { ...own, key: 'send-email', result: { messageId: 'm1' } });
      expect(fin.status).toBe(200);
      expect(fin.json.result).toEqual({ messageId: 'm1' });
      // Sent again (a retry after a lost answer): the result on record.
      expect((await t.post(`${api}/jobs/${job.id}/effects/finish`, { ...own, key: 'send-email', result: { messageId: 'm2' } })).json.result).toEqual({ messageId: 'm1' });
      const row = (await t.client.execute(`select state, result from effects where job_id = ${job.id}`)).rows[0]!;
      expect(row.state).toBe('done');
      expect(JSON.parse(String(row.result))).toEqual({ messageId: 'm1' });
    } finally {
      t.close();
    }
  });

  test('after the lease is lost, the old owner cannot finish: the effect stays started and the next attempt runs it again', async () => {
    const t = await setup({ leaseMs: 1000, heartbeatMs: 300, graceMs: 300, workerAliveMs: 400, maxReapDeferMs: 100 });
    try {
      const job = await t.enqueue('fx');
      const [first] = await t.claim('fx', 'w1');
      await t.post(`${api}/jobs/${job.id}/effects/start`, { workerId: 'w1', lockToken: first!.lockToken, key: 'k' });
      t.clock.advance(10_000);
      expect((await t.post(`${api}/reaper/run`)).json.requeued).toHaveLength(1);
      t.clock.advance(60_000);
      const [second] = await t.claim('fx', 'w2');
      expect((await t.post(`${api}/jobs/${job.id}/effects/finish`, { workerId: 'w1', lockToken: first!.lockToken, key: 'k', result: 'late' })).status).toBe(409);
      expect((await t.post(`${api}/jobs/${job.id}/effects/start`, { workerId: 'w2', lockToken: second!.lockToken, key: 'k' })).json.state).toBe('run');
    } finally {
      t.close();
    }
  });
});
