/**
 * The document's security and statuses are what the server does: every
 * operation it lists is called for real with each kind of token (admin,
 * worker, read-only, none), and each answer's status must be one the
 * document lists for that operation; a token the operation's security names
 * must be admitted (not 401/403), and one it does not name refused. Then
 * the same in open mode (no tokens), where a foreign page is refused too,
 * and the calls without fields of their own (pause, resume, the reaper, a
 * schedule's delete) as a generated client sends them.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';
import { concretePath, operationsOf, sample } from '../support/openapi.ts';

type Schema = Record<string, any>;

const TOKENS = { admin: 'a'.repeat(24), worker: 'w'.repeat(24), readonly: 'r'.repeat(24) } as const;
const SCHEME: Record<keyof typeof TOKENS, string> = { admin: 'adminToken', worker: 'workerToken', readonly: 'readonlyToken' };
const KINDS = ['admin', 'worker', 'readonly', 'none'] as const;

/** The body the document says the operation takes, smallest form (none when it takes none). */
function bodyFor(op: Schema): string | undefined {
  const schema = op.requestBody?.content?.['application/json']?.schema;
  return schema ? JSON.stringify(sample(schema)) : undefined;
}

/** Calls an operation as a generated client would: JSON type only when it sends a body. */
async function callOp(t: TestBed, path: string, method: string, op: Schema, headers: Record<string, string>) {
  const body = bodyFor(op);
  const res = await t.app.request(concretePath(path), {
    method: method.toUpperCase(),
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body,
  });
  await res.arrayBuffer();
  return res.status;
}

describe('with all three tokens', () => {
  let t: TestBed;
  let doc: Schema;
  beforeAll(async () => {
    t = await setup({ adminToken: TOKENS.admin, workerToken: TOKENS.worker, readonlyToken: TOKENS.readonly });
    doc = (await t.get('/api/v1/openapi.json')).json;
    // Something to find: a job, a queue and a schedule named as concretePath names them.
    const A = { authorization: `Bearer ${TOKENS.admin}` };
    await t.post('/api/v1/queues/q/jobs', { payload: 1 }, A);
    await t.post('/api/v1/schedules', { name: 'nightly', queue: 'q', intervalMs: 60_000 }, A);
  });
  afterAll(() => t.close());

  test('every operation, with every kind of token: a listed status, admitted exactly by the tokens its security names', async () => {
    const ops = operationsOf(doc);
    expect(ops.length).toBeGreaterThanOrEqual(40);
    const seen = new Set<string>();
    for (const { path, method, op } of ops) {
      const listed = Object.keys(op.responses);
      for (const kind of KINDS) {
        const where = `${method} ${path} with ${kind === 'none' ? 'no token' : `the ${kind} token`}`;
        const status = await callOp(t, path, method, op, kind === 'none' ? {} : { authorization: `Bearer ${TOKENS[kind]}` });
        expect(listed, `${where} answered ${status}`).toContain(String(status));
        // An open operation (security []) takes anyone; any other exactly the tokens it names.
        const named = op.security.length === 0 || (kind !== 'none' && op.security.some((s: Schema) => SCHEME[kind] in s));
        const admitted = status !== 401 && status !== 403;
        expect(admitted, `${where} answered ${status}; its security is ${JSON.stringify(op.security)}`).toBe(named);
        seen.add(`${kind} ${status}`);
      }
    }
    // The refusals were met, not only listed.
    expect([...seen]).toEqual(expect.arrayContaining(['none 401', 'worker 403', 'readonly 403', 'admin 200']));
    expect(t.errors).toEqual([]);
  });

  test('/metrics takes the read-only token, as its security says; the worker token is refused', async () => {
    const op = doc.paths['/metrics'].get;
    expect(op.security).toEqual([{ readonlyToken: [] }, { adminToken: [] }]);
    const scrape = (token: string) => t.app.request('/metrics', { headers: { authorization: `Bearer ${token}` } });
    expect((await scrape(TOKENS.readonly)).status).toBe(200);
    expect((await scrape(TOKENS.worker)).status).toBe(403);
  });

  test('the calls without fields take {} or an empty JSON body, refuse a field they do not know, and a DELETE needs no type', async () => {
    const A = { authorization: `Bearer ${TOKENS.admin}` };
    const send = (method: string, path: string, headers: Record<string, string>, body?: string) => t.app.request(path, { method, headers: { ...A, ...headers }, body });
    for (const path of ['/api/v1/queues/q/pause', '/api/v1/queues/q/resume', '/api/v1/reaper/run']) {
      expect((await send('POST', path, { 'content-type': 'application/json' }, '{}')).status, path).toBe(200);
      expect((await send('POST', path, { 'content-type': 'application/json' })).status, path).toBe(200);
      const unknown = await send('POST', path, { 'content-type': 'application/json' }, '{"queue":"other"}');
      expect(unknown.status, path).toBe(400);
      expect((await unknown.json()).error.field).toBe('queue');
      // Still JSON only: the token admits, and the type is what keeps a page's simple POST out in open mode.
      expect((await send('POST', path, {})).status, path).toBe(415);
    }
    const schema = doc.paths['/api/v1/queues/{queue}/pause'].post.requestBody.content['application/json'].schema;
    expect(schema).toMatchObject({ type: 'object', properties: {}, additionalProperties: false });
    expect(doc.paths['/api/v1/schedules/{name}'].delete.requestBody).toBeUndefined();
    await t.post('/api/v1/schedules', { name: 'nightly', queue: 'q', intervalMs: 60_000 }, A);
    expect((await send('DELETE', '/api/v1/schedules/nightly', {})).status).toBe(200);
    expect((await send('DELETE', '/api/v1/schedules/nightly', {})).status).toBe(404);
  });
});

describe('in open mode (no tokens)', () => {
  let t: TestBed;
  let doc: Schema;
  beforeAll(async () => {
    t = await setup();
    doc = (await t.get('/api/v1/openapi.json')).json;
  });
  afterAll(() => t.close());

  test('every operation answers a listed status, and every write from a foreign page is a listed 403', async () => {
    for (const { path, method, op } of operationsOf(doc)) {
      const listed = Object.keys(op.responses);
      const status = await callOp(t, path, method, op, {});
      expect(listed, `${method} ${path} answered ${status}`).toContain(String(status));
      expect([401, 403], `${method} ${path}`).not.toContain(status);
      if (method === 'get') continue;
      const foreigns: Record<string, string>[] = [{ origin: 'https://evil.example' }, { 'sec-fetch-site': 'cross-site' }];
      for (const foreign of foreigns) {
        const refused = await callOp(t, path, method, op, foreign);
        expect(refused, `${method} ${path} from ${JSON.stringify(foreign)}`).toBe(403);
        expect(listed).toContain('403');
      }
    }
    expect(t.errors).toEqual([]);
  });

  test("a page's simple POST is still refused: no type, or a form's, is 415 on a call without fields; a DELETE from a page is 403", async () => {
    const pause = (headers: Record<string, string>, body?: string) => t.app.request('/api/v1/queues/q/pause', { method: 'POST', headers, body });
    expect((await pause({})).status).toBe(415);
    expect((await pause({ 'content-type': 'text/plain' }, '{}')).status).toBe(415);
    expect((await pause({ 'content-type': 'application/x-www-form-urlencoded' }, 'a=1')).status).toBe(415);
    await t.post('/api/v1/schedules', { name: 'nightly', queue: 'q', intervalMs: 60_000 });
    const del = (headers: Record<string, string>) => t.app.request('/api/v1/schedules/nightly', { method: 'DELETE', headers });
    expect((await del({ origin: 'https://evil.example' })).status).toBe(403);
    expect((await del({ 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await del({})).status).toBe(200);
  });
});
