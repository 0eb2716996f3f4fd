/**
 * GET /api/v1/openapi.json, through the real app: an OpenAPI 3 document that
 * lists every worker route, and whose request schemas are the validators
 * themselves: every field the document calls required is one the server
 * refuses a body without, naming that field.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { Validator } from '@seriousme/openapi-schema-validator';
import { errorStatuses } from '../../src/api/openapi.ts';
import { setup, type TestBed } from '../support/helpers.ts';
import { operationsOf, sample } from '../support/openapi.ts';

type Schema = Record<string, any>;

let t: TestBed;
let doc: Schema;

beforeAll(async () => {
  t = await setup();
  const res = await t.get('/api/v1/openapi.json');
  expect(res.status).toBe(200);
  doc = res.json;
});
afterAll(() => t.close());

/** What the worker routes require, read from src/api/worker-routes.ts. */
const WORKER_ROUTES: Record<string, string[]> = {
  '/api/v1/queues/{queue}/claim': ['workerId'],
  '/api/v1/jobs/{id}/heartbeat': ['workerId', 'lockToken'],
  '/api/v1/heartbeats': ['workerId', 'leases'],
  '/api/v1/jobs/{id}/checkpoint': ['workerId', 'lockToken', 'checkpoint'],
  '/api/v1/jobs/{id}/complete': ['workerId', 'lockToken'],
  '/api/v1/completions': ['workerId', 'results'],
  '/api/v1/jobs/{id}/fail': ['workerId', 'lockToken', 'error'],
  '/api/v1/jobs/{id}/release': ['workerId', 'lockToken'],
  '/api/v1/jobs/{id}/extend': ['workerId', 'lockToken'],
  '/api/v1/workers/beat': ['workerId'],
  '/api/v1/jobs/{id}/effects/start': ['workerId', 'lockToken', 'key'],
  '/api/v1/jobs/{id}/effects/finish': ['workerId', 'lockToken', 'key'],
};

/** Bulk actions need a reason unless they are a dry run (src/api/ops-routes.ts). */
const CONDITIONALLY_REQUIRED: Record<string, Record<string, unknown>> = {
  '/api/v1/queues/{queue}/bulk': { reason: 'x' },
  '/api/v1/queues/{queue}/redrive': { reason: 'x' },
  '/api/v1/queues/{queue}/canary': { reason: 'x' },
  // At least one lease, unless the call carries the worker's beat.
  '/api/v1/heartbeats': { leases: [{ id: '1', lockToken: 'x' }] },
  // A schedule needs cron or intervalMs (one of the two, so neither is required by the schema).
  '/api/v1/schedules': { intervalMs: 60_000 },
};

const bodySchema = (op: Schema): Schema | undefined => op.requestBody?.content?.['application/json']?.schema;

/** Every required field, nested ones (inside sampled arrays and objects) by their path. */
function requiredPaths(schema: Schema, value: unknown, path = ''): { path: string; without: unknown }[] {
  if (schema.oneOf) return requiredPaths(schema.oneOf[0], value, path);
  const out: { path: string; without: unknown }[] = [];
  if (schema.type === 'object') {
    const record = value as Record<string, unknown>;
    for (const key of schema.required ?? []) {
      const field = path ? `${path}.${key}` : key;
      const { [key]: _dropped, ...rest } = record;
      out.push({ path: field, without: rest });
      for (const inner of requiredPaths(schema.properties[key], record[key], field)) out.push({ path: inner.path, without: { ...record, [key]: inner.without } });
    }
  } else if (schema.type === 'array' && Array.isArray(value) && value.length > 0) {
    for (const inner of requiredPaths(schema.items, value[0], `${path}[0]`)) out.push({ path: inner.path, without: [inner.without, ...value.slice(1)] });
  }
  return out;
}

const concrete = (path: string) => path.replace('/api/v1', '').replace('{queue}', 'q').replace('{id}', '1').replace('{name}', 'nightly');

test('it is an OpenAPI 3 document of the running version', () => {
  expect(doc.openapi).toMatch(/^3\.\d+\.\d+$/);
  expect(doc.info).toMatchObject({ title: 'leasehold', version: expect.any(String) });
  expect(doc.components.securitySchemes).toHaveProperty('workerToken');
  expect(doc.components.schemas.Error.properties.error.required).toEqual(['code', 'message']);
});

test('it lists every worker route, as a worker-token POST with a JSON body whose required fields are what the server enforces', () => {
  for (const [path, required] of Object.entries(WORKER_ROUTES)) {
    const op = doc.paths[path]?.post;
    expect(op, `${path} is missing`).toBeDefined();
    expect(op.security, path).toEqual([{ workerToken: [] }, { adminToken: [] }]);
    expect(op.summary, path).toEqual(expect.any(String));
    expect(op.requestBody.required, path).toBe(true);
    const schema = bodySchema(op)!;
    expect(schema.type, path).toBe('object');
    expect(schema.additionalProperties, path).toBe(false);
    expect([...schema.required].sort(), path).toEqual([...required].sort());
    for (const name of path.matchAll(/\{(\w+)\}/g)) {
      expect(op.parameters, path).toContainEqual(expect.objectContaining({ name: name[1], in: 'path', required: true, schema: expect.objectContaining({ type: 'string', pattern: expect.any(String) }) }));
    }
  }
  // Batch entries are fenced one by one, so each names its job and token.
  expect(bodySchema(doc.paths['/api/v1/heartbeats'].post)!.properties.leases.items.required).toEqual(['id', 'lockToken']);
  expect(bodySchema(doc.paths['/api/v1/completions'].post)!.properties.results.items.required).toEqual(['id', 'lockToken']);
});

test('it is generated from the validators: a body without any required field is refused with 400 naming that field', async () => {
  const checked: string[] = [];
  for (const [path, methods] of Object.entries(doc.paths as Record<string, Record<string, Schema>>)) {
    for (const [method, op] of Object.entries(methods)) {
      const schema = bodySchema(op);
      if (!schema) continue;
      const url = `/api/v1${concrete(path)}`;
      // Fields a route requires in some cases only, so the schema cannot call them required.
      const minimal = { ...(sample(schema) as object), ...CONDITIONALLY_REQUIRED[path] };
      // The sampled body itself passes validation (the route may still say 404 or 409: no such job or lease).
      const ok = await t.call(method.toUpperCase(), url, minimal);
      expect(ok.status, `${method} ${path} ${JSON.stringify(minimal)}: ${ok.text}`).not.toBe(400);
      for (const { path: field, without } of requiredPaths(schema, minimal)) {
        const res = await t.call(method.toUpperCase(), url, without);
        expect(res.status, `${method} ${path} without ${field}: ${res.text}`).toBe(400);
        expect(res.json.error, `${method} ${path} without ${field}`).toMatchObject({ code: 'invalid_request', field });
        checked.push(`${method} ${path} ${field}`);
      }
      // And a field the schema does not list is refused too (additionalProperties: false).
      if (schema.additionalProperties === false) {
        const res = await t.call(method.toUpperCase(), url, { ...(minimal as object), notAField: 1 });
        expect(res.status, `${method} ${path} with an unknown field`).toBe(400);
        expect(res.json.error.field).toBe('notAField');
      }
    }
  }
  // Every worker route's required fields were among those proven.
  for (const [path, required] of Object.entries(WORKER_ROUTES)) {
    for (const field of required) expect(checked).toContain(`post ${path} ${field}`);
  }
  expect(checked).toContain('post /api/v1/heartbeats leases[0].lockToken');
  expect(checked).toContain('post /api/v1/queues/{queue}/jobs payload');
  expect(t.errors).toEqual([]);
});

test("GET /jobs lists its query parameters, from the validator that checks them", async () => {
  const params = doc.paths['/api/v1/jobs'].get.parameters as { name: string; in: string; required: boolean; schema: Schema }[];
  expect(params.filter((p) => p.in === 'query').map((p) => p.name).sort()).toEqual(['after', 'idempotencyKey', 'limit', 'order', 'queue', 'status', 'where']);
  expect(params.every((p) => p.required === false)).toBe(true);
  // Typed as what they mean, and the documented bounds are the ones enforced: 500 passes, 501 does not.
  const byName = Object.fromEntries(params.map((p) => [p.name, p.schema]));
  expect(byName.limit).toMatchObject({ type: 'integer', minimum: 1, maximum: 500 });
  expect(byName.status).toMatchObject({ type: 'string', enum: ['pending', 'running', 'completed', 'failed', 'cancelled'] });
  expect(byName.order).toMatchObject({ type: 'string', enum: ['asc', 'desc'] });
  // Repeated, as OpenAPI's default form style sends an array: ?where=a&where=b.
  expect(byName.where).toMatchObject({ type: 'array', items: { type: 'string' }, maxItems: 5 });
  for (const [query, status] of [['limit=501', 400], ['limit=0', 400], ['limit=5x', 400], ['limit=1.5', 400], ['limit=500', 200], ['status=zombie', 400], ['order=up', 400], ['order=asc&status=pending', 200]] as const) {
    const res = await t.get(`/api/v1/jobs?${query}`);
    expect(res.status, query).toBe(status);
    if (status === 400) expect(res.json.error.field, query).toBe(query.split('=')[0]);
  }
  // Every query parameter is typed: a string with a pattern only for a name or an opaque id, never for a number, a boolean or a choice.
  const query = operations().flatMap(({ path, method, op }) => (op.parameters ?? []).filter((p: Schema) => p.in === 'query').map((p: Schema) => ({ where: `${method} ${path} ?${p.name}`, ...p })));
  expect(query.length).toBeGreaterThan(10);
  for (const p of query) if (p.schema.pattern) expect(['queue', 'after', 'before'], p.where).toContain(p.name);
  expect(doc.paths['/api/v1/workers'].get.parameters.find((p: Schema) => p.name === 'alive').schema).toMatchObject({ type: 'boolean' });
  expect(doc.paths['/api/v1/audit'].get.parameters.find((p: Schema) => p.name === 'limit').schema).toMatchObject({ type: 'integer', maximum: 500 });
  expect((await t.get('/api/v1/workers?alive=yes')).status).toBe(400);
  expect((await t.get('/api/v1/workers?alive=false')).status).toBe(200);
});

const operations = () => operationsOf(doc);

test('a real OpenAPI validator accepts the document', async () => {
  const result = await new Validator().validate(structuredClone(doc) as never);
  expect(result.errors ?? [], JSON.stringify(result.errors, null, 2)?.slice(0, 2000)).toEqual([]);
  expect(result.valid).toBe(true);
  // And it is not a validator that accepts anything: a document with a broken response is refused.
  const broken = structuredClone(doc);
  broken.paths['/healthz'].get.responses = { '200': { content: {} } };
  expect((await new Validator().validate(broken as never)).valid).toBe(false);
});

test('every operation has a unique operationId, a tag, a summary and a schema for each of its statuses', () => {
  const ops = operations();
  expect(ops.length).toBeGreaterThanOrEqual(30);
  const ids = ops.map(({ op }) => op.operationId);
  expect(new Set(ids).size).toBe(ids.length);
  const tags = new Set((doc.tags as { name: string }[]).map((t) => t.name));
  for (const { path, method, op } of ops) {
    const where = `${method} ${path}`;
    expect(op.operationId, where).toMatch(/^[a-z][A-Za-z]+$/);
    expect(op.tags, where).toHaveLength(1);
    expect(tags.has(op.tags[0]), where).toBe(true);
    expect(op.summary, where).toEqual(expect.any(String));
    const statuses = Object.keys(op.responses);
    expect(statuses.some((s) => s.startsWith('2')), where).toBe(true);
    for (const status of statuses) {
      // A 304 has no body by definition.
      if (status === '304') continue;
      const response = op.responses[status].$ref ? doc.components.responses[op.responses[status].$ref.split('/').at(-1)] : op.responses[status];
      expect(response, `${where} ${status}`).toBeDefined();
      const content = response.content?.['application/json'] ?? response.content?.['text/plain'];
      expect(content?.schema, `${where} ${status} has no schema`).toBeDefined();
    }
  }
  expect(doc.paths['/healthz'].get.responses['200'].content['application/json'].schema.required).toEqual(['ok', 'databaseTime', 'maintenance']);
  expect(doc.paths['/metrics'].get.responses['200'].content['text/plain']).toBeDefined();
});

test('enqueue answers 201 (200 for a deduplicated or replaced one); reads never answer 409; writes document 403 and 413, and those that read a body 415', () => {
  const enqueue = doc.paths['/api/v1/queues/{queue}/jobs'].post;
  expect(Object.keys(enqueue.responses)).toContain('201');
  expect(enqueue.responses['201'].content['application/json'].schema.oneOf).toHaveLength(2);
  expect(enqueue.responses['200'].content['application/json'].schema.oneOf.map((s: { required: string[] }) => s.required)).toEqual([['job', 'deduplicated'], ['job', 'replaced']]);
  for (const { path, method, op } of operations()) {
    const statuses = Object.keys(op.responses);
    if (method === 'get') expect(statuses, `${method} ${path}`).not.toContain('409');
    else expect(statuses, `${method} ${path}`).toEqual(expect.arrayContaining(['403', '413']));
    // Every POST reads a body (at least {}), so it needs the JSON type; a DELETE reads none.
    if (method === 'post' || op.requestBody) expect(statuses, `${method} ${path}`).toContain('415');
    if (method === 'post') expect(op.requestBody?.required, `${method} ${path}`).toBe(true);
    if (method === 'delete') expect(statuses, `${method} ${path}`).not.toContain('415');
    // A call that takes a token can answer 401 (none, or nobody's) and 403 (a token of another role).
    if (op.security.length > 0) expect(statuses, `${method} ${path}`).toEqual(expect.arrayContaining(['401', '403', '503']));
  }
  // 409 exactly where a lock token or a job's state can refuse the write.
  expect(Object.keys(doc.paths['/api/v1/jobs/{id}/complete'].post.responses)).toContain('409');
  expect(Object.keys(doc.paths['/api/v1/jobs/{id}/cancel'].post.responses)).toContain('409');
  expect(Object.keys(doc.paths['/api/v1/queues/{queue}/claim'].post.responses)).not.toContain('409');
  // The admin token is the only one for admin calls: the worker token gets 403.
  expect(Object.keys(doc.paths['/api/v1/queues'].get.responses)).toContain('403');
  // And the read-only token gets 403 on a worker call.
  expect(Object.keys(doc.paths['/api/v1/jobs/{id}'].get.responses)).toContain('403');
  expect(errorStatuses({ method: 'get', role: 'worker', path: '/jobs/:id', errors: ['not_found'] })).toEqual([400, 401, 403, 404, 421, 429, 500, 503]);
  expect(errorStatuses({ method: 'get', role: null, path: '/x' })).toEqual([400, 421, 500, 503]);
  expect(errorStatuses({ method: 'delete', role: 'admin', path: '/schedules/:name', errors: ['not_found'] })).toEqual([400, 401, 403, 404, 413, 421, 429, 500, 503]);
});

test('path parameters carry the patterns the server enforces', async () => {
  const params = operations().flatMap(({ op }) => (op.parameters ?? []).filter((p: Schema) => p.in === 'path'));
  const byName = new Map(params.map((p: Schema) => [p.name, p.schema.pattern]));
  expect([...byName.keys()].sort()).toEqual(['id', 'name', 'queue']);
  const queue = new RegExp(byName.get('queue'));
  const id = new RegExp(byName.get('id'));
  expect([queue.test('email.v2'), queue.test('bad name'), queue.test('-x')]).toEqual([true, false, false]);
  expect([id.test('42'), id.test('042'), id.test('x')]).toEqual([true, false, false]);
  // What the pattern refuses, the server refuses too.
  expect((await t.post('/api/v1/queues/bad%20name/jobs', { payload: 1 })).status).toBe(400);
  expect((await t.get('/api/v1/jobs/042')).status).toBe(404);
  expect(new RegExp(byName.get('name')).test('bad name')).toBe(false);
  expect((await t.get('/api/v1/schedules/bad%20name')).status).toBe(400);
});
