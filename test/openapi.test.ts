/**
 * GET /api/v1/openapi.json, through the real app: an OpenAPI 3 document that
 * lists every worker route, and whose request schemas are the validators
 * themselves: every field the document calls required is one the server
 * refuses a body without, naming that field.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { setup, type TestBed } from './helpers.ts';

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
const CONDITIONALLY_REQUIRED: Record<string, Record<string, unknown>> = { '/api/v1/queues/{queue}/bulk': { reason: 'x' } };

const bodySchema = (op: Schema): Schema | undefined => op.requestBody?.content?.['application/json']?.schema;

/** The smallest value the schema accepts (required fields only). */
function sample(schema: Schema): unknown {
  if (schema.oneOf) return sample(schema.oneOf[0]);
  switch (schema.type) {
    case 'object':
      return Object.fromEntries((schema.required ?? []).map((k: string) => [k, sample(schema.properties[k])]));
    case 'array':
      return Array.from({ length: schema.minItems ?? 0 }, () => sample(schema.items));
    case 'string': {
      // A choice of words (`^(retry|cancel|requeue)$`): its first word.
      const first = /^\^\(([a-z]+)\|/.exec(schema.pattern ?? '')?.[1];
      const fits = ['x', '1', 'q', ...(first ? [first] : [])].find((s) => s.length >= (schema.minLength ?? 0) && (!schema.pattern || new RegExp(schema.pattern).test(s)));
      if (fits === undefined) throw new Error(`no sample string for ${JSON.stringify(schema)}`);
      return fits;
    }
    case 'integer':
    case 'number':
      return schema.minimum ?? 0;
    case 'boolean':
      return true;
    default:
      return {}; // any JSON
  }
}

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

const concrete = (path: string) => path.replace('/api/v1', '').replace('{queue}', 'q').replace('{id}', '1');

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
    expect(op.security, path).toEqual([{ workerToken: [] }]);
    expect(op.summary, path).toEqual(expect.any(String));
    expect(op.requestBody.required, path).toBe(true);
    const schema = bodySchema(op)!;
    expect(schema.type, path).toBe('object');
    expect(schema.additionalProperties, path).toBe(false);
    expect([...schema.required].sort(), path).toEqual([...required].sort());
    for (const name of path.matchAll(/\{(\w+)\}/g)) {
      expect(op.parameters, path).toContainEqual({ name: name[1], in: 'path', required: true, schema: { type: 'string' } });
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
  const params = doc.paths['/api/v1/jobs'].get.parameters as { name: string; in: string; required: boolean; schema: { pattern?: string } }[];
  expect(params.filter((p) => p.in === 'query').map((p) => p.name).sort()).toEqual(['after', 'idempotencyKey', 'limit', 'order', 'queue', 'status']);
  expect(params.every((p) => p.required === false)).toBe(true);
  // The documented limit pattern is the one enforced: 500 passes, 501 does not.
  const limit = new RegExp(params.find((p) => p.name === 'limit')!.schema.pattern!);
  expect([limit.test('500'), limit.test('501'), limit.test('0')]).toEqual([true, false, false]);
  expect((await t.get('/api/v1/jobs?limit=501')).status).toBe(400);
  expect((await t.get('/api/v1/jobs?limit=500')).status).toBe(200);
});
