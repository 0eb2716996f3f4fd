/**
 * Property-based bad-input sweep (fast-check): every route the app declares
 * (`t.app.routeSpecs`), plus /healthz, /metrics, the OpenAPI document and
 * unknown paths, gets random requests: JSON shapes of every kind, objects with
 * the right field names and wrong values (1e308, -0, "NaN", huge integers,
 * long strings, lone surrogates, deep nesting), odd path params and query
 * strings, random content types and Authorization headers, and bodies over the
 * size limit.
 *
 * For every response: status < 500; a JSON `{error: {code, message}}` body
 * whenever status >= 400; no stack frame or SQLite text in the body; no error
 * logged by the app. For every 4xx: the database is exactly as before.
 *
 * One database per property: the fixture (a pending, a running and a completed
 * job, an effect) is copied to `pristine_*` tables once, and restored after any
 * request that changed something (a 2xx may legitimately do so).
 *
 * Seeds are fixed (override with FC_SEED=n); fast-check prints the seed and
 * the shrunk counterexample on failure, and the assertion message prints the
 * request.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { RouteSpec } from '../../src/api/router.ts';
import { setup, type TestBed } from '../support/helpers.ts';

const SEED = process.env.FC_SEED ? Number(process.env.FC_SEED) : 0x1ea5e;
const ADMIN = 'a'.repeat(20);
const WORKER = 'w'.repeat(20);

interface Req {
  method: string;
  path: string;
  headers: Record<string, string>;
  /** A string, or raw bytes (invalid UTF-8), or none. */
  body?: string | { bytes: number[] };
}

interface Fixture {
  pendingId: string;
  runningId: string;
  completedId: string;
  runningToken: string;
}

// ---------------------------------------------------------------------------
// Database fixture, snapshot and restore

const TABLES = ['jobs', 'events', 'workers', 'effects', 'queues'] as const;

async function rows(t: TestBed, q: string) {
  return JSON.stringify((await t.client.execute(q)).rows);
}

/**
 * What a rejected request must not change. Two exclusions, both by design:
 * - events of type `stale_write_rejected`: a 409 lease_lost records one (the
 *   refusal itself is audited, src/db/store/owned.ts);
 * - workers.last_seen_at: every claim and owned write touches the caller's
 *   liveness row, even when the write is refused.
 * Everything else (every column of every row) must be identical.
 */
type Guarded = Awaited<ReturnType<typeof guardedSnapshot>>;
async function guardedSnapshot(t: TestBed) {
  return {
    counts: await rows(
      t,
      `select (select count(*) from jobs) j, (select count(*) from events where type <> 'stale_write_rejected') e,
        (select count(*) from workers) w, (select count(*) from effects) x, (select count(*) from queues) q`,
    ),
    checksum: await rows(t, `select group_concat(id||status||coalesce(lock_token,'')||attempt_count) from jobs`),
    jobs: await rows(t, 'select * from jobs order by id'),
    events: await rows(t, `select * from events where type <> 'stale_write_rejected' order by id`),
    workers: await rows(t, 'select id, host, pid, version, queues, running_count, started_at from workers order by id'),
    effects: await rows(t, 'select * from effects order by job_id, key'),
    queues: await rows(t, 'select * from queues order by name'),
  };
}

/** Everything, exclusions included: decides whether a restore is needed. */
async function fullSnapshot(t: TestBed) {
  const out: string[] = [];
  for (const table of TABLES) out.push(await rows(t, `select * from ${table} order by rowid`));
  return out.join('\n');
}

async function makeFixture(t: TestBed, auth: Record<string, string>): Promise<{ fixture: Fixture; fx: { pristine: string; guarded: Guarded } }> {
  const api = '/api/v1';
  // A scratch database: durability does not matter, and every restore is a write.
  await t.client.execute('pragma synchronous = off');
  const enqueue = async (body: unknown) => {
    const res = await t.post(`${api}/queues/q/jobs`, body, auth);
    if (res.status !== 201) throw new Error(`fixture enqueue: ${res.text}`);
    return res.json.job.id as string;
  };
  const claim = async () => {
    const res = await t.post(`${api}/queues/q/claim`, { workerId: 'w1' }, auth);
    if (res.status !== 200 || res.json.jobs.length !== 1) throw new Error(`fixture claim: ${res.text}`);
    return res.json.jobs[0] as { id: string; lockToken: string };
  };
  // completed: claimed and completed first, so the next claim takes the running one.
  await enqueue({ payload: { n: 'completed' }, priority: 10 });
  const done = await claim();
  const fin = await t.post(`${api}/jobs/${done.id}/complete`, { workerId: 'w1', lockToken: done.lockToken, result: { ok: 1 } }, auth);
  if (fin.status !== 200) throw new Error(`fixture complete: ${fin.text}`);
  await enqueue({ payload: { n: 'running' }, priority: 5, idempotencyKey: 'k-running' });
  const running = await claim();
  const pendingId = await enqueue({ payload: { n: 'pending' }, idempotencyKey: 'k-pending', delayMs: 60_000 });
  // An effect started and one finished, under the running job's lease.
  for (const key of ['e-started', 'e-done']) {
    const res = await t.post(`${api}/jobs/${running.id}/effects/start`, { workerId: 'w1', lockToken: running.lockToken, key }, auth);
    if (res.status !== 200) throw new Error(`fixture effect: ${res.text}`);
  }
  await t.post(`${api}/jobs/${running.id}/effects/finish`, { workerId: 'w1', lockToken: running.lockToken, key: 'e-done', result: 42 }, auth);
  await t.post(`${api}/queues/q/pause`, {}, auth);
  await t.post(`${api}/queues/q/resume`, {}, auth);
  for (const table of TABLES) await t.client.execute(`create table pristine_${table} as select * from ${table}`);
  await t.client.execute(`create table pristine_seq as select * from sqlite_sequence`);
  expect(t.errors).toEqual([]);
  return {
    fixture: { pendingId, runningId: running.id, completedId: done.id, runningToken: running.lockToken },
    fx: { pristine: await fullSnapshot(t), guarded: await guardedSnapshot(t) },
  };
}

/** Back to the fixture. Jobs first: its insert trigger writes events, which are replaced next. */
async function restore(t: TestBed) {
  await t.client.batch(
    [
      ...TABLES.flatMap((table) => [`delete from ${table}`, `insert into ${table} select * from pristine_${table}`]),
      'delete from sqlite_sequence',
      'insert into sqlite_sequence select * from pristine_seq',
    ],
    'write',
  );
}

// ---------------------------------------------------------------------------
// Sending and checking

function show(req: Req): string {
  const body = req.body === undefined ? '(none)' : typeof req.body === 'string' ? JSON.stringify(req.body.slice(0, 300)) + (req.body.length > 300 ? `… (${req.body.length} chars)` : '') : `bytes[${req.body.bytes.length}]`;
  return `${req.method} ${req.path.slice(0, 300)} headers=${JSON.stringify(req.headers).slice(0, 300)} body=${body}`;
}

/** fast-check prints counterexamples with this: short, whatever the body's size. */
function printable(req: Req): Req {
  return Object.defineProperty(req, fc.toStringMethod, { value: () => show(req), enumerable: false });
}

/** The Request a real client could send, or null when the platform refuses to build it (not the app's business). */
function toRequest(req: Req): Request | null {
  try {
    const body = req.body === undefined ? undefined : typeof req.body === 'string' ? req.body : new Uint8Array(req.body.bytes);
    return new Request(`http://localhost${req.path}`, { method: req.method, headers: req.headers, body });
  } catch {
    return null;
  }
}

async function send(t: TestBed, req: Req) {
  const request = toRequest(req);
  if (!request) return null;
  const res = await t.app.request(request);
  return { status: res.status, text: await res.text(), contentType: res.headers.get('content-type') ?? '' };
}

function checkResponse(req: Req, res: { status: number; text: string }, t: TestBed) {
  const why = `${show(req)}\n→ ${res.status} ${res.text.slice(0, 500)}`;
  expect(res.status, why).toBeLessThan(500);
  expect(t.errors, why).toEqual([]);
  expect(res.text, why).not.toMatch(/SQLITE|\bat \S+ \(|\bat .*:\d+:\d+|\.ts:\d+|stack/i);
  if (res.status >= 400 && req.method !== 'HEAD') {
    let json: any;
    try {
      json = JSON.parse(res.text);
    } catch {
      json = undefined;
    }
    expect(json?.error, why).toEqual(expect.objectContaining({ code: expect.any(String), message: expect.any(String) }));
  }
}

/**
 * One run, from the fixture state: send, check the response, check that a
 * rejection changed nothing, and restore the fixture if anything changed.
 */
async function probe(t: TestBed, fx: { pristine: string; guarded: Guarded }, req: Req) {
  t.errors.length = 0; // errors belong to this run only (keeps shrinking honest)
  try {
    const res = await send(t, req);
    if (!res) return;
    checkResponse(req, res, t);
    if (res.status >= 400) {
      const after = await guardedSnapshot(t);
      expect(after, `a rejected request changed the database: ${show(req)}\n→ ${res.status} ${res.text.slice(0, 300)}`).toEqual(fx.guarded);
    }
    return res;
  } finally {
    // Also after a failure: the shrinker's next runs must start from the fixture.
    if ((await fullSnapshot(t)) !== fx.pristine) await restore(t);
  }
}

// ---------------------------------------------------------------------------
// Arbitraries

/** Every property name in a validator's JSON Schema, at any depth. */
function fieldNames(schema: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(schema)) schema.forEach((s) => fieldNames(s, out));
  else if (schema && typeof schema === 'object') {
    const s = schema as Record<string, unknown>;
    if (s.properties && typeof s.properties === 'object') for (const k of Object.keys(s.properties)) out.add(k);
    for (const v of Object.values(s)) fieldNames(v, out);
  }
  return out;
}

const nested = (open: string, close: string, n: number, inner = '0') => open.repeat(n) + inner + close.repeat(n);

const oddStrings = fc.oneof(
  fc.constantFrom('', ' ', 'NaN', 'Infinity', '-0', '1e3', 'null', 'true', '0x10', '\u0000', '\u2028', 'é', '\u{1F600}', '../..', '%2F', 'a/b', '<script>'),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.integer({ min: 0, max: 300_000 }).map((n) => 'x'.repeat(n)),
);

/** A JSON text fragment: valid JSON of a weird kind (or near-valid numbers JSON.parse still takes). */
function weirdValue(f: Fixture) {
  return fc.oneof(
    { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v) ?? 'null') },
    {
      weight: 4,
      arbitrary: fc.constantFrom(
        '1e308', '-1e308', '1e309', '-0', '0', '-1', '1.5', '99999999999999999999', '9007199254740993', '2147483648', '4294967296',
        '1e-320', '"NaN"', '"Infinity"', '"-0"', '"1"', '"\\ud800"', '"\\udfff"', '"a\\ud800b"', '"\\u0000"', 'null', 'true', 'false',
        '[]', '{}', '[[]]', '{"":{}}', '"2030-01-01T00:00:00Z"', '"2030-13-45T99:99:99Z"', '"9999-01-01T00:00:00Z"',
        '"+275760-09-13T00:00:00Z"', '"0000-01-01T00:00:00Z"',
      ),
    },
    { weight: 3, arbitrary: oddStrings.map((s) => JSON.stringify(s)) },
    { weight: 1, arbitrary: fc.double().map((d) => (Number.isFinite(d) ? JSON.stringify(d) : '1e999')) },
    { weight: 1, arbitrary: fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }).map(String) },
    // Deep nesting: arrays and objects, up to 100k levels (within the default 1 MB limit).
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 100_000 }).map((n) => nested('[', ']', n)) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 60_000 }).map((n) => nested('{"a":', '}', n)) },
    // Values that reach the handlers: the fixture's real ids, worker and token.
    { weight: 3, arbitrary: fc.constantFrom(`"${f.pendingId}"`, `"${f.runningId}"`, `"${f.completedId}"`, '"w1"', `"${f.runningToken}"`, '"q"', '"e-started"', '"e-done"', '1000', '1', '60000') },
  );
}

/** A JSON object text with field names taken from the route's schema (and a few unknown ones). */
function shapedBody(names: string[], f: Fixture) {
  const key = fc.oneof({ weight: 8, arbitrary: fc.constantFrom(...(names.length ? names : ['x'])) }, { weight: 1, arbitrary: fc.constantFrom('__proto__', 'constructor', 'unknown', '') }, { weight: 1, arbitrary: fc.string({ maxLength: 8 }) });
  const { value } = fc.letrec<{ value: string; object: string }>((tie) => ({
    value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, weirdValue(f), tie('object'), fc.array(tie('object'), { maxLength: 4 }).map((a) => `[${a.join(',')}]`)),
    object: fc.array(fc.tuple(key, tie('value')), { maxLength: 6 }).map((entries) => `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`),
  }));
  return fc.array(fc.tuple(key, value), { maxLength: 7 }).map((entries) => `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`);
}

const rawBodies = fc.oneof(
  fc.constantFrom('', ' ', '\n', '{', '}', '{"', '[', 'null', '[]', '"x"', '42', '1e308', '-0', 'true', '{}{}', '{} x', '{"a":1,}', "{'a':1}", '\uFEFF{}', '{"payload": 1', '{"\\ud800": 1}', '{"payload": "\ud800"}', 'NaN', '{"payload": NaN}', '{"payload": undefined}'),
  fc.jsonValue().map((v) => JSON.stringify(v) ?? ''),
  fc.string({ unit: 'binary', maxLength: 50 }),
  fc.integer({ min: 1, max: 200_000 }).map((n) => nested('[', ']', n)),
);

/** Invalid UTF-8 in JSON text: lone surrogates as CESU-8, overlongs, stray continuation bytes. */
const badUtf8 = fc
  .tuple(fc.constantFrom([0xed, 0xa0, 0x80], [0xed, 0xbf, 0xbf], [0xc0, 0xaf], [0xff], [0x80], [0xf4, 0x90, 0x80, 0x80], [0xef, 0xbb, 0xbf]), fc.constantFrom('payload', 'workerId', 'lockToken', 'key', 'x'))
  .map(([bytes, field]) => ({ bytes: [...new TextEncoder().encode(`{"${field}":"`), ...bytes, ...new TextEncoder().encode('"}')] }));

function bodyArb(spec: RouteSpec | undefined, f: Fixture): fc.Arbitrary<string | { bytes: number[] } | undefined> {
  const names = spec?.body ? [...fieldNames(spec.body.schema)] : [];
  return fc.oneof(
    { weight: 6, arbitrary: shapedBody(names, f) },
    { weight: 2, arbitrary: rawBodies },
    { weight: 1, arbitrary: badUtf8 },
    { weight: 1, arbitrary: fc.array(shapedBody(names, f), { maxLength: 3 }).map((a) => `[${a.join(',')}]`) },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
}

const idParams = (f: Fixture) =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(f.pendingId, f.runningId, f.completedId) },
    {
      weight: 3,
      arbitrary: fc.constantFrom('0', '-1', '1e3', '01', '1.0', ' 1', '1%20', '0x10', 'NaN', 'Infinity', '99999999999999999999', '999999999999999', '9007199254740993', '%D9%A1', '%2F', '1%2F2', '%ZZ', '%E0%A4%A', '%00', '%F0%9F%98%80', '..', '%2E%2E', ''),
    },
    { weight: 1, arbitrary: fc.string({ maxLength: 20 }).map(encodeURIComponent) },
  );

const queueParams = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('q', 'other', 'a.b:c-d_e') },
  { weight: 3, arbitrary: fc.constantFrom('', '-q', '.q', '_q', 'a%20b', '%2F', 'a%2Fb', '%ZZ', '%00', 'caf%C3%A9', '%F0%9F%98%80', 'x'.repeat(128), 'x'.repeat(129), 'q%3F', 'q%23', '..') },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }).map(encodeURIComponent) },
);

const queryStrings = fc.oneof(
  { weight: 2, arbitrary: fc.constant('') },
  {
    weight: 3,
    arbitrary: fc
      .array(
        fc.tuple(
          fc.constantFrom('queue', 'status', 'after', 'limit', 'order', 'x', '', 'limit[]', '__proto__'),
          fc.oneof(fc.constantFrom('', '0', '1', '500', '501', '9999', '99999', '-1', '1e3', 'asc', 'desc', 'ASC', 'pending', 'running', 'nope', 'q', '%ZZ', '%00', '999999999999999', '9999999999999999'), fc.string({ maxLength: 10 }).map(encodeURIComponent)),
        ),
        { maxLength: 5 },
      )
      .map((kv) => '?' + kv.map(([k, v]) => `${k}=${v}`).join('&')),
  },
  { weight: 1, arbitrary: fc.constantFrom('?', '?&&', '?limit', '?=1', '?queue=q&queue=r', '?%ZZ=1') },
);

const contentTypes = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON', 'application/json;charset=latin1') },
  {
    weight: 3,
    arbitrary: fc.constantFrom(undefined, '', 'text/plain', 'application/jsonx', 'application/json-patch+json', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', '*/*', ' application/json', 'application/json,text/plain'),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
);

const authHeaders = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(`Bearer ${ADMIN}`, `Bearer ${WORKER}`, `bearer ${ADMIN}`, `Bearer   ${WORKER}  `) },
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      undefined, '', 'Bearer', 'Bearer ', `Bearer ${ADMIN.slice(1)}`, `Bearer ${ADMIN}a`, `Bearer ${WORKER} x`, `Basic ${btoa(`admin:${ADMIN}`)}`, ADMIN,
      `Token ${ADMIN}`, `Bearer "${ADMIN}"`, `Bearer ${ADMIN},Bearer ${WORKER}`, `Bearer ${'a'.repeat(10_000)}`, 'Bearer \u00e9\u00e9', `Bearer\t${ADMIN}`,
    ),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }).map((s) => `Bearer ${s}`) },
);

const EXTRA_ROUTES = [
  { method: 'get', path: '/healthz' },
  { method: 'get', path: '/metrics' },
  { method: 'get', path: '/api/v1/openapi.json' },
] as const;

const UNKNOWN_PATHS = ['/', '/api', '/api/v1', '/api/v1/', '/api/v2/queues', '/api/v1/nope', '/API/V1/QUEUES', '/api/v1/queues/q/jobs/extra', '/api/v1/jobs/1/2/3', '/%', '/%ZZ', '/api/v1/queues//claim', '/api/v1/jobs/1/effects', '/healthz/x', '/metrics.json', '//api/v1/queues', '/api/v1/./queues', '/api/v1/queues/q/settings'];

/** Any request: one of the app's routes (with odd params) or an extra / unknown path, any method now and then. */
function requestArb(specs: readonly RouteSpec[], f: Fixture, auth: fc.Arbitrary<string | undefined>): fc.Arbitrary<Req> {
  const routes = [...specs.map((s) => ({ method: s.method, path: `/api/v1${s.path}`, spec: s as RouteSpec | undefined })), ...EXTRA_ROUTES.map((r) => ({ ...r, spec: undefined }))];
  const known = fc.constantFrom(...routes).chain((route) => {
    const params = route.path.split('/').map((seg) => (seg === ':id' ? idParams(f) : seg === ':queue' ? queueParams : fc.constant(seg)));
    return fc.record({ route: fc.constant(route), segs: fc.tuple(...params) }).map(({ route, segs }) => ({ route, path: segs.join('/') }));
  });
  const unknown = fc.constantFrom(...UNKNOWN_PATHS).map((path) => ({ route: { method: 'post' as const, path, spec: undefined as RouteSpec | undefined }, path }));
  return fc
    .oneof({ weight: 12, arbitrary: known }, { weight: 1, arbitrary: unknown })
    .chain(({ route, path }) =>
      fc.record({
        method: fc.oneof({ weight: 12, arbitrary: fc.constant(route.method.toUpperCase()) }, { weight: 1, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD') }),
        query: route.method === 'get' ? queryStrings : fc.constantFrom('', '', '', '?x=1'),
        body: bodyArb(route.spec, f),
        contentType: contentTypes,
        authorization: auth,
        path: fc.constant(path),
      }),
    )
    .map(({ method, query, body, contentType, authorization, path }) => {
      const headers: Record<string, string> = {};
      if (contentType !== undefined) headers['content-type'] = contentType;
      if (authorization !== undefined) headers.authorization = authorization;
      const bodyAllowed = method !== 'GET' && method !== 'HEAD';
      return printable({ method, path: path + query, headers, ...(bodyAllowed && body !== undefined ? { body } : {}) });
    });
}

/**
 * The string fields of a body schema, each with its path as the API names it
 * (`leases[0].lockToken`) and the keys that reach it in `base` (arrays in
 * `base` have one element to reach into). Fields with a pattern (ids, queue
 * names) are left out: their pattern refuses any odd character first.
 */
function stringFields(schema: any, base: unknown): { path: string; keys: (string | number)[]; base: unknown }[] {
  const out: { path: string; keys: (string | number)[]; base: unknown }[] = [];
  const walk = (s: any, path: string, keys: (string | number)[]) => {
    if (s?.type === 'object' && s.properties) {
      for (const [key, sub] of Object.entries<any>(s.properties)) walk(sub, path ? `${path}.${key}` : key, [...keys, key]);
    } else if (s?.type === 'array' && s.items?.type === 'object') {
      walk(s.items, `${path}[0]`, [...keys, 0]);
    } else if (s?.type === 'string' && !s.pattern) {
      out.push({ path, keys, base });
    }
  };
  walk(schema, '', []);
  return out;
}

/** Sets `value` at `keys` in `body`, creating nothing: the base already holds the parents. */
function setAt(body: any, keys: (string | number)[], value: unknown) {
  const parent = keys.slice(0, -1).reduce((o, k) => o[k], body);
  parent[keys[keys.length - 1]!] = value;
}

/** A branch of a body schema that is a oneOf (enqueue: 0 is one job, 1 is `{jobs: [...]}`), or undefined. */
function enqueueBranch(spec: RouteSpec, i: number): unknown {
  return (spec.body!.schema as { oneOf?: unknown[] }).oneOf?.[i];
}

/**
 * Each sweep runs a fixed number of requests, each checked against a snapshot of
 * the database; the route list grows with the API (about 80 s per sweep on a
 * quiet 2-core machine), so the budget is generous: a slow host is not a failure.
 */
const SWEEP_BUDGET_MS = 300_000;

// ---------------------------------------------------------------------------
// Properties

describe('bad-input sweep: open server (no tokens), every route', () => {
  let t: TestBed;
  let fixture: Fixture;
  let fx: { pristine: string; guarded: Guarded };
  beforeAll(async () => {
    t = await setup();
    ({ fixture, fx } = await makeFixture(t, {}));
  });
  afterAll(() => t?.close());

  test('no 5xx, JSON errors, no leaks, rejected requests change nothing', async () => {
    await fc.assert(
      fc.asyncProperty(requestArb(t.app.routeSpecs, fixture, fc.constant(undefined)), async (req) => {
        await probe(t, fx, req);
      }),
      { numRuns: 300, seed: SEED },
    );
  }, SWEEP_BUDGET_MS);

  /** A body the route accepts, from the fixture's real worker and token. */
  const valid = (spec: RouteSpec): Record<string, unknown> => {
    const w = { workerId: 'w1', lockToken: fixture.runningToken };
    const byPath: Record<string, Record<string, unknown>> = {
      '/queues/:queue/jobs': { payload: { a: 1 } },
      '/queues/:queue/claim': { workerId: 'w1' },
      '/heartbeats': { workerId: 'w1', leases: [{ id: fixture.runningId, lockToken: fixture.runningToken }], worker: {} },
      '/completions': { workerId: 'w1', results: [{ id: fixture.runningId, lockToken: fixture.runningToken }] },
      '/releases': { workerId: 'w1', leases: [{ id: fixture.runningId, lockToken: fixture.runningToken }] },
      '/jobs/:id/fail': { ...w, error: 'boom' },
      '/jobs/:id/checkpoint': { ...w, checkpoint: {} },
      '/jobs/:id/effects/start': { ...w, key: 'k' },
      '/jobs/:id/effects/finish': { ...w, key: 'e-started' },
      '/jobs/:id/duplicates': { ...w, key: 'payment-1' },
      '/workers/beat': { workerId: 'w1' },
      '/queues/:queue/settings': { leaseMs: 30_000 },
      '/queues/:queue/bulk': { action: 'cancel', dryRun: true, reason: 'x' },
      '/queues/:queue/canary': { first: 1, dryRun: true, reason: 'x' },
      '/canary/:id/cancel': { reason: 'x' },
      '/jobs/:id/held/release': { reason: 'x' },
      '/jobs/:id/held/complete': { reason: 'x' },
      '/jobs/:id/held/fail': { reason: 'x' },
      '/schedules': { name: 'nightly', queue: 'q', cron: '0 * * * *' },
      // seen: '' counts at once, so no sweep request waits.
      '/jobs/wait': { jobs: [{ id: fixture.runningId, seen: '' }] },
      '/flows': { jobs: [{ queue: 'q', payload: { a: 1 } }] },
    };
    if (byPath[spec.path]) return byPath[spec.path]!;
    return /lockToken/.test(JSON.stringify(spec.body?.schema ?? {})) ? w : {};
  };

  test('every route with the fixture’s real worker and token, and one field made wrong', async () => {
    // Closer to valid: a correct body for the route, then one field replaced by a weird value.
    const posts = t.app.routeSpecs.filter((s) => s.body);
    const arb = fc
      .constantFrom(...posts)
      .chain((spec) => {
        const names = [...fieldNames(spec.body!.schema)];
        return fc.record({ spec: fc.constant(spec), field: fc.constantFrom(...names), value: weirdValue(fixture) });
      })
      .map(({ spec, field, value }): Req => {
        const base = JSON.stringify(valid(spec));
        const obj = base.slice(1, -1).split(/,(?="[^"]+":)/).filter((kv) => kv && !kv.startsWith(`"${field}":`));
        const text = `{${[...obj, `${JSON.stringify(field)}:${value}`].join(',')}}`;
        const path = '/api/v1' + spec.path.replace(':id', fixture.runningId).replace(':queue', 'q');
        return printable({ method: spec.method.toUpperCase(), path, headers: { 'content-type': 'application/json' }, body: text });
      });
    await fc.assert(
      fc.asyncProperty(arb, async (req) => {
        await probe(t, fx, req);
      }),
      { numRuns: 250, seed: SEED + 1 },
    );
  }, SWEEP_BUDGET_MS);

  test('every string field the API stores: a lone surrogate or NUL anywhere in it is a 400 naming that field, and changes nothing', async () => {
    // Found by hand, missed by the random sweep: "x\ud83d" as an idempotency
    // key crashed the process (libSQL panics on the row it reads back).
    const targets = t.app.routeSpecs
      .filter((s) => s.body)
      .flatMap((spec) => stringFields(enqueueBranch(spec, 0) ?? spec.body!.schema, valid(spec)).map((field) => ({ spec, ...field })));
    const enqueue = t.app.routeSpecs.find((s) => s.path === '/queues/:queue/jobs')!;
    targets.push(...stringFields(enqueueBranch(enqueue, 1), { jobs: [{ payload: 1 }] }).map((field) => ({ spec: enqueue, ...field })));
    expect(targets.map((x) => x.path)).toEqual(expect.arrayContaining(['idempotencyKey', 'jobs[0].idempotencyKey', 'workerId', 'lockToken', 'leases[0].lockToken', 'results[0].lockToken', 'error', 'reason', 'actor', 'key', 'host', 'version']));
    const badText = fc
      .tuple(fc.string({ maxLength: 8 }), fc.constantFrom('\ud800', '\udbff', '\udc00', '\udfff', '\u0000', '\ud83d\u0000', '\ude00\ud83d'), fc.string({ maxLength: 8 }))
      .map(([a, bad, b]) => a + bad + b);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...targets), badText, async (target, text) => {
        const body = structuredClone(target.base);
        setAt(body, target.keys, text);
        const path = '/api/v1' + target.spec.path.replace(':id', fixture.runningId).replace(':queue', 'q');
        const req = printable({ method: target.spec.method.toUpperCase(), path, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
        const res = await probe(t, fx, req);
        expect(res?.status, `${show(req)} → ${res?.text}`).toBe(400);
        expect(JSON.parse(res!.text).error.field).toBe(target.path);
      }),
      { numRuns: 300, seed: SEED + 4 },
    );
  }, SWEEP_BUDGET_MS);
});

describe('bad-input sweep: tokens set, random Authorization headers', () => {
  let t: TestBed;
  let fixture: Fixture;
  let fx: { pristine: string; guarded: Guarded };
  const specs = new Map<string, RouteSpec>();
  beforeAll(async () => {
    t = await setup({ adminToken: ADMIN, workerToken: WORKER });
    ({ fixture, fx } = await makeFixture(t, { authorization: `Bearer ${ADMIN}` }));
    for (const s of t.app.routeSpecs) specs.set(`${s.method.toUpperCase()} /api/v1${s.path}`, s);
  });
  afterAll(() => t?.close());

  test('no 5xx, no success without the right token, rejected requests change nothing', async () => {
    const tokenOf = (h: string | undefined) => /^Bearer\s+(\S+)\s*$/i.exec(h ?? '')?.[1];
    await fc.assert(
      fc.asyncProperty(requestArb(t.app.routeSpecs, fixture, authHeaders), async (req) => {
        const res = await probe(t, fx, req);
        if (!res || res.status >= 300) return;
        // A success on a guarded route needs an accepted token: admin for admin and reader routes (no
        // read-only token is set here), admin or worker for worker routes.
        const pathOnly = req.path.split('?')[0]!;
        const open = pathOnly === '/healthz' || pathOnly === '/api/v1/openapi.json';
        if (open) return;
        const token = tokenOf(req.headers.authorization);
        const spec = t.app.routeSpecs.find((s) => s.method.toUpperCase() === req.method && new RegExp(`^/api/v1${s.path.replace(/:[a-z]+/g, '[^/]+')}$`).test(pathOnly));
        const role = pathOnly === '/metrics' ? 'reader' : spec?.role;
        const accepted = role === 'admin' || role === 'reader' ? [ADMIN] : [ADMIN, WORKER];
        expect(accepted, `${show(req)} → ${res.status} without an accepted token`).toContain(token);
      }),
      { numRuns: 200, seed: SEED + 2 },
    );
  }, SWEEP_BUDGET_MS);
});

describe('bad-input sweep: bodies over the size limit (maxPayloadBytes 2048)', () => {
  let t: TestBed;
  let fixture: Fixture;
  let fx: { pristine: string; guarded: Guarded };
  beforeAll(async () => {
    t = await setup({ maxPayloadBytes: 2048 });
    ({ fixture, fx } = await makeFixture(t, {}));
  });
  afterAll(() => t?.close());

  test('over the limit: never a success, 413 from any route that reads a body, nothing changed', async () => {
    const routes = t.app.routeSpecs.filter((s) => s.body);
    const arb = fc
      .record({
        spec: fc.constantFrom(...routes),
        size: fc.oneof(fc.integer({ min: 2049, max: 2100 }), fc.integer({ min: 2049, max: 200_000 })),
        shape: fc.constantFrom('payload', 'string', 'array', 'garbage', 'multibyte'),
        contentLength: fc.constantFrom('none', 'true', 'small'),
        contentType: fc.constantFrom('application/json', 'text/plain'),
      })
      .map(({ spec, size, shape, contentLength, contentType }): Req => {
        const pad = (prefix: string, suffix: string, unit = 'x') => prefix + unit.repeat(Math.max(0, Math.ceil((size - prefix.length - suffix.length) / new TextEncoder().encode(unit).length))) + suffix;
        const body =
          shape === 'payload' ? pad('{"payload":"', '"}')
          : shape === 'string' ? pad('{"workerId":"w1","lockToken":"', '"}')
          : shape === 'array' ? pad('{"jobs":[', '{"payload":1}]}', '{"payload":1},')
          : shape === 'multibyte' ? pad('{"payload":"', '"}', 'é')
          : pad('', '', '{');
        const headers: Record<string, string> = { 'content-type': contentType };
        const bytes = new TextEncoder().encode(body).length;
        if (contentLength === 'true') headers['content-length'] = String(bytes);
        if (contentLength === 'small') headers['content-length'] = '10';
        const path = '/api/v1' + spec.path.replace(':id', fixture.runningId).replace(':queue', 'q');
        return printable({ method: spec.method.toUpperCase(), path, headers, body });
      });
    await fc.assert(
      fc.asyncProperty(arb, async (req) => {
        const res = await probe(t, fx, req);
        if (!res) return;
        const lying = req.headers['content-length'] === '10';
        // A lying content-length is the platform's business (a real HTTP server cuts the body there); otherwise 413, or 415 first.
        if (!lying) expect([413, 415], `${show(req)} → ${res.status} ${res.text.slice(0, 200)}`).toContain(res.status);
      }),
      { numRuns: 100, seed: SEED + 3 },
    );
  }, SWEEP_BUDGET_MS);
});

describe('bad-input sweep: what it found, pinned', () => {
  test('JSON nested past the limit is a 400 naming the field, not a 500 (stack or SQLite JSON depth)', async () => {
    const t = await setup();
    try {
      const [c] = (await t.enqueue('q'), await t.claim('q', 'w1'));
      const deep = (n: number) => nested('[', ']', n);
      const cases: [string, (n: number) => string, string][] = [
        ['/api/v1/queues/q/jobs', (n) => `{"payload":${deep(n)}}`, 'payload'],
        [`/api/v1/jobs/${c!.id}/heartbeat`, (n) => `{"workerId":"w1","lockToken":"${c!.lockToken}","progress":${deep(n)}}`, 'progress'],
        [`/api/v1/jobs/${c!.id}/checkpoint`, (n) => `{"workerId":"w1","lockToken":"${c!.lockToken}","checkpoint":${deep(n)}}`, 'checkpoint'],
      ];
      for (const [path, body, field] of cases) {
        for (const n of [1001, 5000]) {
          const res = await t.post(path, body(n));
          expect(res.status, `${path} depth ${n}: ${res.text.slice(0, 200)}`).toBe(400);
          expect(res.json.error.field).toBe(field);
        }
        expect((await t.post(path, body(256))).status).toBeLessThan(300);
      }
      expect(t.errors).toEqual([]);
    } finally {
      t.close();
    }
  });

  test('a refused owned write from an unknown worker id adds no workers row', async () => {
    const t = await setup();
    try {
      await t.enqueue('q');
      const [c] = await t.claim('q', 'w1');
      const count = async () => (await t.client.execute('select count(*) n from workers')).rows[0]!.n;
      const before = await count();
      expect((await t.post(`/api/v1/jobs/${c!.id}/heartbeat`, { workerId: 'stranger', lockToken: c!.lockToken })).status).toBe(409);
      expect((await t.post('/api/v1/jobs/999/complete', { workerId: 'stranger2', lockToken: 'x' })).status).toBe(404);
      expect(await count()).toBe(before);
      // The owner's own heartbeat still touches its row.
      expect((await t.post(`/api/v1/jobs/${c!.id}/heartbeat`, { workerId: 'w1', lockToken: c!.lockToken })).status).toBe(200);
    } finally {
      t.close();
    }
  });
});
