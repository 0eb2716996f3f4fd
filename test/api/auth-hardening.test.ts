/**
 * Dashboard and token hardening: cross-origin forms refused even with a valid
 * CSRF token, read-only sessions tied to the read-only token, the Secure
 * cookie behind a trusted HTTPS proxy, and back-off after wrong tokens (login
 * form and bearer auth).
 */
import { afterEach, expect, test } from 'vitest';
import { silentLogger } from '../../src/core/log.ts';
import { AuthThrottle } from '../../src/api/throttle.ts';
import { recordingLogger, setup, type TestBed, appOn } from '../support/helpers.ts';
import type { LogRecord } from '../../src/core/log.ts';

const ADMIN = 'a'.repeat(24);
const READONLY = 'r'.repeat(24);
const WORKER = 'w'.repeat(24);

let t: TestBed;
afterEach(() => t.close());

type App = TestBed['app'];

function request(app: App, path: string, init: { cookie?: string; form?: Record<string, string>; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...init.headers };
  if (init.cookie) headers.cookie = init.cookie;
  if (init.form) headers['content-type'] = 'application/x-www-form-urlencoded';
  return app.request(path, { method: init.form ? 'POST' : 'GET', headers, body: init.form ? new URLSearchParams(init.form).toString() : undefined, redirect: 'manual' });
}

async function login(app: App, token: string, headers: Record<string, string> = {}): Promise<{ res: Response; cookie: string }> {
  const res = await request(app, '/dashboard/login', { form: { name: 'Ada', token, next: '/dashboard' }, headers });
  const m = /leasehold_session=([^;]*)/.exec(res.headers.get('set-cookie') ?? '');
  return { res, cookie: m ? `leasehold_session=${m[1]}` : '' };
}

async function csrfOf(app: App, cookie: string): Promise<string> {
  const html = await (await request(app, '/dashboard', { cookie })).text();
  return /name="_csrf" value="([^"]+)"/.exec(html)![1]!;
}

test('a form posted from another origin is refused even with a valid session and CSRF token', async () => {
  t = await setup({ adminToken: ADMIN });
  const job = await t.enqueue('q');
  const { cookie } = await login(t.app, ADMIN);
  const csrf = await csrfOf(t.app, cookie);
  const foreign: Record<string, string>[] = [{ origin: 'http://evil.example' }, { 'sec-fetch-site': 'cross-site' }, { 'sec-fetch-site': 'same-site' }, { origin: 'null' }];
  for (const headers of foreign) {
    const res = await request(t.app, `/dashboard/jobs/${job.id}/cancel`, { cookie, form: { _csrf: csrf, reason: 'x' }, headers });
    expect(res.status, JSON.stringify(headers)).toBe(403);
    expect(await res.text()).toMatch(/cannot change anything here/);
  }
  expect((await t.get(`/api/v1/jobs/${job.id}`, { authorization: `Bearer ${ADMIN}` })).json.job.status).toBe('pending');

  // Our own pages send the same origin (or nothing): accepted.
  const own = await request(t.app, `/dashboard/jobs/${job.id}/cancel`, { cookie, form: { _csrf: csrf, reason: 'x' }, headers: { origin: 'http://localhost', 'sec-fetch-site': 'same-origin' } });
  expect(own.status).toBe(303);
  expect((await t.get(`/api/v1/jobs/${job.id}`, { authorization: `Bearer ${ADMIN}` })).json.job.status).toBe('cancelled');
});

test('a login form posted from another site is refused', async () => {
  t = await setup({ adminToken: ADMIN });
  const { res, cookie } = await login(t.app, ADMIN, { 'sec-fetch-site': 'cross-site' });
  expect(res.status).toBe(403);
  expect(cookie).toBe('');
});

test('a read-only session ends when the read-only token is changed or removed; admin sessions stay', async () => {
  t = await setup({ adminToken: ADMIN, readonlyToken: READONLY });
  const readonly = await login(t.app, READONLY);
  const admin = await login(t.app, ADMIN);
  expect((await request(t.app, '/dashboard', { cookie: readonly.cookie })).status).toBe(200);

  for (const readonlyToken of ['n'.repeat(24), undefined]) {
    // The same server restarted with the read-only token rotated (or removed).
    const rotated = appOn({ db: t.db, config: { ...t.config, readonlyToken }, clock: t.clock, log: silentLogger });
    const old = await request(rotated, '/dashboard', { cookie: readonly.cookie });
    expect(old.status).toBe(303);
    expect(old.headers.get('location')).toMatch(/^\/dashboard\/login/);
    expect((await request(rotated, '/dashboard', { cookie: admin.cookie })).status).toBe(200);
  }
});

test('the session cookie is Secure over HTTPS, and behind a trusted proxy that says HTTPS', async () => {
  t = await setup({ adminToken: ADMIN });
  const plain = await login(t.app, ADMIN, { 'x-forwarded-proto': 'https' });
  // Not trusted: a client could say anything.
  expect(plain.res.headers.get('set-cookie')).not.toMatch(/Secure/);
  const direct = await t.app.request('https://localhost/dashboard/login', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ name: 'Ada', token: ADMIN }).toString(),
    redirect: 'manual',
  });
  expect(direct.headers.get('set-cookie')).toMatch(/; Secure/);

  const proxied = appOn({ db: t.db, config: { ...t.config, trustProxy: 'true' }, clock: t.clock, log: silentLogger });
  const behind = await login(proxied, ADMIN, { 'x-forwarded-proto': 'https' });
  expect(behind.res.headers.get('set-cookie')).toMatch(/; Secure/);
});

test('wrong dashboard logins back the client off with 429, even for the right token, until the delay passes', async () => {
  t = await setup({ adminToken: ADMIN, trustProxy: 'true' });
  let now = 1_000_000;
  const app = appOn({ db: t.db, config: t.config, clock: t.clock, log: silentLogger, authThrottle: new AuthThrottle(() => now) });
  const from = (ip: string) => ({ 'x-forwarded-for': ip });
  for (let i = 0; i < 6; i++) expect((await login(app, 'wrong-token-xxxxxxxxxxxx', from('10.0.0.1'))).res.status).toBe(401);
  const blocked = await login(app, ADMIN, from('10.0.0.1'));
  expect(blocked.res.status).toBe(429);
  expect(blocked.res.headers.get('retry-after')).toBe('1');
  expect(blocked.cookie).toBe('');
  // Another client is not affected.
  expect((await login(app, ADMIN, from('10.0.0.2'))).res.status).toBe(303);
  now += 1_000;
  expect((await login(app, ADMIN, from('10.0.0.1'))).res.status).toBe(303);
});

test('behind a trusted proxy the client is the entry the proxy appended: a spoofed left part neither exempts nor renames it', async () => {
  t = await setup({ adminToken: ADMIN, workerToken: WORKER, trustProxy: 'true' });
  let now = 1_000_000;
  const logs: LogRecord[] = [];
  const app = appOn({ db: t.db, config: t.config, clock: t.clock, log: recordingLogger(logs), authThrottle: new AuthThrottle(() => now) });
  // nginx's $proxy_add_x_forwarded_for: what the client sent, then the address nginx saw.
  const via = (sent: string, real: string) => ({ 'x-forwarded-for': `${sent}, ${real}` });
  for (let i = 0; i < 6; i++) expect((await login(app, 'wrong-token-xxxxxxxxxxxx', via('127.0.0.1', '203.0.113.7'))).res.status).toBe(401);
  // A loopback first entry does not exempt the client, and a new one does not make a new client.
  expect((await login(app, ADMIN, via('127.0.0.1', '203.0.113.7'))).res.status).toBe(429);
  expect((await login(app, ADMIN, via('10.9.9.1', '203.0.113.7'))).res.status).toBe(429);
  expect((await login(app, ADMIN, { 'x-forwarded-for': '::1, 10.0.0.1, 203.0.113.7' })).res.status).toBe(429);
  expect((await app.request('/api/v1/jobs', { headers: { authorization: `Bearer ${ADMIN}`, ...via('::1', '203.0.113.7') } })).status).toBe(429);
  // Another real client, whatever it sends first, is itself.
  expect((await login(app, ADMIN, via('203.0.113.7', '203.0.113.8'))).res.status).toBe(303);
  // The request log and the audit name the real address too.
  expect(logs.filter((r) => r.status !== undefined).map((r) => r.client)).toEqual([...Array(10).fill('203.0.113.7'), '203.0.113.8']);
  const pause = await app.request('/api/v1/queues/q/pause', { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json', ...via('1.1.1.1', '203.0.113.8') }, body: '{}' });
  expect(pause.status).toBe(200);
  const audit = (await (await app.request('/api/v1/audit', { headers: { authorization: `Bearer ${ADMIN}` } })).json()) as { entries: { action: string; client: string }[] };
  const clients = (action: string) => [...new Set(audit.entries.filter((e) => e.action === action).map((e) => e.client))];
  expect([clients('queue.pause'), clients('login'), clients('login_failed')]).toEqual([['203.0.113.8'], ['203.0.113.8'], ['203.0.113.7']]);

  // Two proxies in front: the second appends the first's address; the client is one further left.
  const twoHops = appOn({ db: t.db, config: { ...t.config, trustProxyHops: 2 }, clock: t.clock, log: silentLogger, authThrottle: new AuthThrottle(() => now) });
  for (let i = 0; i < 6; i++) expect((await login(twoHops, 'wrong-token-xxxxxxxxxxxx', { 'x-forwarded-for': `127.0.0.${i}, 198.51.100.4, 10.0.0.2` })).res.status).toBe(401);
  expect((await login(twoHops, ADMIN, { 'x-forwarded-for': '198.51.100.4, 10.0.0.2' })).res.status).toBe(429);
  expect((await login(twoHops, ADMIN, { 'x-forwarded-for': '198.51.100.5, 10.0.0.2' })).res.status).toBe(303);
});

test('wrong bearer tokens back the client off with 429 and Retry-After; the delay doubles', async () => {
  t = await setup({ adminToken: ADMIN, workerToken: WORKER, trustProxy: 'true' });
  let now = 1_000_000;
  const app = appOn({ db: t.db, config: t.config, clock: t.clock, log: silentLogger, authThrottle: new AuthThrottle(() => now) });
  const call = (token: string) => app.request('/api/v1/jobs', { headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': '10.0.0.9' } });
  for (let i = 0; i < 6; i++) expect((await call('not-the-token-xxxxxxxxxxx')).status).toBe(401);
  const first = await call(ADMIN);
  expect(first.status).toBe(429);
  expect(first.headers.get('retry-after')).toBe('1');
  expect(((await first.json()) as { error: { code: string } }).error.code).toBe('too_many_requests');
  now += 1_000;
  expect((await call('not-the-token-xxxxxxxxxxx')).status).toBe(401);
  expect((await call(ADMIN)).headers.get('retry-after')).toBe('2');
  now += 2_000;
  expect((await call(ADMIN)).status).toBe(200);
  // A valid token of the wrong role is not a guess: 403, no back-off.
  for (let i = 0; i < 10; i++) expect((await call(WORKER)).status).toBe(403);
  expect((await call(ADMIN)).status).toBe(200);
});

test('API answers are never cached: cache-control no-store, on success and on refusal', async () => {
  t = await setup({ adminToken: ADMIN, workerToken: WORKER });
  const job = (await t.post('/api/v1/queues/q/jobs', { payload: 1 }, { authorization: `Bearer ${WORKER}` })).json.job;
  const ok = await t.app.request(`/api/v1/jobs/${job.id}`, { headers: { authorization: `Bearer ${ADMIN}` } });
  expect(ok.status).toBe(200);
  expect(ok.headers.get('cache-control')).toBe('no-store');
  const refused = await t.app.request(`/api/v1/jobs/${job.id}`);
  expect(refused.status).toBe(401);
  expect(refused.headers.get('cache-control')).toBe('no-store');
});

test('the back-off keys on the runtime\'s peer address; loopback and unnamed clients are never backed off', async () => {
  t = await setup({ adminToken: ADMIN, workerToken: WORKER });
  const peer = (address: string) => ({ incoming: { socket: { remoteAddress: address } } });
  const call = (token: string, env?: object) => t.app.request('/api/v1/jobs', { headers: { authorization: `Bearer ${token}` } }, env);
  for (let i = 0; i < 6; i++) expect((await call('wrong-token-xxxxxxxxxxxxx', peer('10.1.1.1'))).status).toBe(401);
  expect((await call(ADMIN, peer('10.1.1.1'))).status).toBe(429);
  expect((await call(ADMIN, peer('10.1.1.2'))).status).toBe(200);
  // Deno's info and Bun's server name the peer too.
  expect((await call(ADMIN, { remoteAddr: { hostname: '10.1.1.1' } })).status).toBe(429);
  for (const env of [peer('127.0.0.1'), peer('::1'), undefined]) {
    for (let i = 0; i < 8; i++) expect((await call('wrong-token-xxxxxxxxxxxxx', env)).status).toBe(401);
    expect((await call(ADMIN, env)).status).toBe(200);
  }
});

test('a cookie replayed after logout is refused, on every server sharing the database; other sessions stay', async () => {
  t = await setup({ adminToken: ADMIN });
  const { cookie } = await login(t.app, ADMIN);
  const other = await login(t.app, ADMIN);
  const out = await request(t.app, '/dashboard/logout', { cookie, form: { _csrf: await csrfOf(t.app, cookie) } });
  expect(out.status).toBe(303);

  const replayed = await request(t.app, '/dashboard', { cookie });
  expect(replayed.status).toBe(303);
  expect(replayed.headers.get('location')).toMatch(/^\/dashboard\/login/);
  // A second server on the same database (same admin token, same cookie key) refuses it too.
  const second = appOn({ db: t.db, config: t.config, clock: t.clock, log: silentLogger });
  expect((await request(second, '/dashboard', { cookie })).status).toBe(303);
  expect((await request(t.app, '/dashboard', { cookie: other.cookie })).status).toBe(200);
});

test('queues are bounded: an enqueue that would create one past LEASEHOLD_MAX_QUEUES is a 409 naming the limit, and stores nothing', async () => {
  t = await setup({ maxQueues: 3 });
  for (const q of ['a', 'b', 'c']) expect((await t.post(`/api/v1/queues/${q}/jobs`, { payload: 1 })).status).toBe(201);
  for (const body of [{ payload: 1 }, { jobs: [{ payload: 1 }, { payload: 2 }] }]) {
    const refused = await t.post('/api/v1/queues/d/jobs', body);
    expect(refused.status).toBe(409);
    expect(refused.json.error).toMatchObject({ code: 'conflict', field: 'queue' });
    expect(refused.json.error.message).toMatch(/already has 3 queues \(LEASEHOLD_MAX_QUEUES\)/);
  }
  // Existing queues still take jobs; nothing was stored for d.
  expect((await t.post('/api/v1/queues/a/jobs', { payload: 2 })).status).toBe(201);
  const queues = (await t.get('/api/v1/queues')).json.queues as { name: string }[];
  expect(queues.map((q) => q.name)).toEqual(['a', 'b', 'c']);
  expect((await t.get('/api/v1/jobs?queue=d')).json.jobs).toEqual([]);
});

test('a flood of refused writes does not push a job\'s lifecycle out of its trail', async () => {
  t = await setup();
  const job = await t.enqueue('q');
  const [claimed] = await t.claim('q', 'w1');
  expect((await t.post(`/api/v1/jobs/${job.id}/complete`, { workerId: 'w1', lockToken: claimed!.lockToken })).status).toBe(200);
  // 1,010 heartbeats with a bogus token, as a hostile client holding the id would send.
  const bogus = { workerId: 'admin (operator)', lockToken: 'f'.repeat(32) };
  for (let i = 0; i < 1_010; i++) expect((await t.post(`/api/v1/jobs/${job.id}/heartbeat`, bogus)).status).toBe(409);
  const trail = (await t.get(`/api/v1/jobs/${job.id}`)).json as { events: { type: string }[]; olderEventsNotShown: number };
  const types = trail.events.map((e) => e.type);
  expect(types.filter((x) => x !== 'stale_write_rejected')).toEqual(['enqueued', 'claimed', 'completed']);
  expect(types.filter((x) => x === 'stale_write_rejected')).toHaveLength(50);
  expect(trail.olderEventsNotShown).toBe(1_010 - 50);
  // The job page shows its history too.
  const page = await t.app.request(`/dashboard/jobs/${job.id}`);
  expect(await page.text()).toContain('completed');
});
