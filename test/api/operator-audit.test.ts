/**
 * The operator audit, named operators, several
 * tokens per role and one-time form tokens: each kind of
 * change recorded with who, when, what, before/after, reason and address;
 * GET /api/v1/audit and the dashboard page; rotation and replay refusals.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { createApp } from '../../src/app.ts';
import { loadConfig, type Config } from '../../src/core/config.ts';
import { matchToken, roleTokens } from '../../src/core/tokens.ts';
import { runMaintenancePass } from '../../src/maintenance/pass.ts';
import { setup, type TestBed, appOn } from '../support/helpers.ts';

const ADMIN = 'a'.repeat(24);
const WORKER = 'w'.repeat(24);
const READONLY = 'r'.repeat(24);
const ONCALL = 'o'.repeat(24);
const CI = 'c'.repeat(24);
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

let t: TestBed;
afterEach(() => {
  expect(t.errors).toEqual([]);
  t.close();
});

const base: Partial<Config> = { adminToken: ADMIN, workerToken: WORKER, readonlyToken: READONLY, adminTokens: `oncall:${ONCALL},ci-bot:${CI}` };

type App = ReturnType<typeof createApp>;
async function req(path: string, init: { cookie?: string; form?: Record<string, string>; headers?: Record<string, string> } = {}, app: App = t.app) {
  const headers: Record<string, string> = { ...init.headers };
  if (init.cookie) headers.cookie = init.cookie;
  if (init.form) headers['content-type'] = 'application/x-www-form-urlencoded';
  return app.request(path, { method: init.form ? 'POST' : 'GET', headers, body: init.form ? new URLSearchParams(init.form).toString() : undefined, redirect: 'manual' });
}

async function login(token: string, name = 'Grace Hopper', app: App = t.app): Promise<string> {
  const res = await req('/dashboard/login', { form: { name, token, next: '/dashboard' } }, app);
  expect(res.status, await res.clone().text()).toBe(303);
  return `leasehold_session=${/leasehold_session=([^;]*)/.exec(res.headers.get('set-cookie') ?? '')![1]}`;
}

async function formToken(cookie: string, path = '/dashboard', app: App = t.app): Promise<string> {
  const html = await (await req(path, { cookie }, app)).text();
  return /name="_csrf" value="([^"]+)"/.exec(html)![1]!;
}

async function audit(query = '', token = ADMIN) {
  const res = await t.get(`/api/v1/audit${query}`, bearer(token));
  expect(res.status, res.text).toBe(200);
  return res.json as { entries: Record<string, any>[]; next: string | null };
}

describe('every change through the admin API is audited, as the token that made it', () => {
  test('queue settings: before and after of the fields set, actor = the token name', async () => {
    t = await setup(base);
    await t.post('/api/v1/queues/mail/jobs', { payload: 1 }, bearer(WORKER));
    const first = await t.call('PATCH', '/api/v1/queues/mail/settings', { leaseMs: 60_000, heartbeatMs: 10_000 }, bearer(ONCALL));
    expect(first.status, first.text).toBe(200);
    const second = await t.call('PATCH', '/api/v1/queues/mail/settings', { leaseMs: null }, bearer(ADMIN));
    expect(second.status).toBe(200);
    const { entries } = await audit('?action=queue.settings');
    expect(entries).toHaveLength(2);
    // Newest first.
    expect(entries[0]).toMatchObject({ actor: 'admin', role: 'admin', credential: 'default', source: 'api', queue: 'mail', target: 'queue mail', before: { leaseMs: 60_000 }, after: { leaseMs: null } });
    expect(entries[1]).toMatchObject({ actor: 'oncall', credential: 'oncall', before: { leaseMs: null, heartbeatMs: null }, after: { leaseMs: 60_000, heartbeatMs: 10_000 } });
    expect(Date.parse(entries[1]!.at)).toBe(t.clock.now());
    // A refused change (breaks the lease rules) writes nothing.
    expect((await t.call('PATCH', '/api/v1/queues/mail/settings', { heartbeatMs: 59_000 }, bearer(ADMIN))).status).toBe(400);
    expect((await audit('?action=queue.settings')).entries).toHaveLength(2);
  });

  test('pause, resume and alert thresholds', async () => {
    t = await setup(base);
    expect((await t.post('/api/v1/queues/mail/pause', {}, bearer(CI))).status).toBe(200);
    expect((await t.post('/api/v1/queues/mail/resume', {}, bearer(ADMIN))).status).toBe(200);
    expect((await t.call('PUT', '/api/v1/queues/mail/alerts', { heartbeatLagFactor: 5 }, bearer(ADMIN))).status).toBe(200);
    const { entries } = await audit('?queue=mail');
    expect(entries.map((e) => e.action)).toEqual(['queue.alert_thresholds', 'queue.resume', 'queue.pause']);
    expect(entries[2]).toMatchObject({ actor: 'ci-bot', before: { paused: false }, after: { paused: true } });
    expect(entries[1]).toMatchObject({ actor: 'admin', before: { paused: true }, after: { paused: false } });
    expect(entries[0]).toMatchObject({ before: {}, after: { heartbeatLagFactor: 5 } });
  });

  test('bulk: an applied run with its filter, count and reason; a dry run is not a change', async () => {
    t = await setup(base);
    for (let i = 0; i < 3; i++) await t.post('/api/v1/queues/mail/jobs', { payload: i }, bearer(WORKER));
    expect((await t.post('/api/v1/queues/mail/bulk', { action: 'cancel', dryRun: true }, bearer(ADMIN))).status).toBe(200);
    expect((await audit('?action=jobs.bulk')).entries).toHaveLength(0);
    const run = await t.post('/api/v1/queues/mail/bulk', { action: 'cancel', limit: 2, reason: 'bad deploy', actor: 'Linus' }, bearer(ONCALL));
    expect(run.json.changed).toBe(2);
    const [entry] = (await audit('?action=jobs.bulk')).entries;
    expect(entry).toMatchObject({ actor: 'Linus', credential: 'oncall', queue: 'mail', reason: 'bad deploy', after: { queue: 'mail', status: 'pending', action: 'cancel', limit: 2, changed: 2 } });
  });

  test('single job actions reference the job (its events hold the detail); refused ones write nothing', async () => {
    t = await setup(base);
    const j = await t.post('/api/v1/queues/mail/jobs', { payload: 1 }, bearer(WORKER));
    const id = j.json.job.id as string;
    expect((await t.post(`/api/v1/jobs/${id}/cancel`, { reason: 'dup' }, bearer(CI))).status).toBe(200);
    expect((await t.post(`/api/v1/jobs/${id}/cancel`, { reason: 'dup' }, bearer(CI))).status).toBe(409);
    expect((await t.post(`/api/v1/jobs/${id}/retry`, {}, bearer(CI))).status).toBe(200);
    const { entries } = await audit();
    expect(entries.map((e) => [e.action, e.jobId, e.queue, e.after])).toEqual([
      ['job.retry', id, 'mail', { status: 'pending' }],
      ['job.cancel', id, 'mail', { status: 'cancelled' }],
    ]);
    expect(entries[1]).toMatchObject({ actor: 'ci-bot', reason: 'dup' });
    // The job's own events name the token too.
    const events = (await t.get(`/api/v1/jobs/${id}`, bearer(ADMIN))).json.events as { type: string; actor: string }[];
    expect(events.find((e) => e.type === 'cancelled')!.actor).toBe('ci-bot');
  });

  test('requeues, the reaper-approved and the forced, name the job queue and its new status', async () => {
    t = await setup({ ...base, leaseMs: 30_000, graceMs: 10_000, workerAliveMs: 15_000 });
    const claimOne = async (queue: string) => {
      const id = (await t.post(`/api/v1/queues/${queue}/jobs`, { payload: 1 }, bearer(WORKER))).json.job.id as string;
      expect((await t.post(`/api/v1/queues/${queue}/claim`, { workerId: 'w1' }, bearer(WORKER))).json.jobs[0].id).toBe(id);
      return id;
    };
    const lost = await claimOne('mail');
    t.clock.advance(40_001); // lease + grace passed, w1 not seen since: the reaper would take it
    expect((await t.post(`/api/v1/jobs/${lost}/requeue`, { reason: 'host died' }, bearer(ADMIN))).status).toBe(200);
    const live = await claimOne('sms');
    expect((await t.post(`/api/v1/jobs/${live}/requeue`, { force: true, reason: 'rollback' }, bearer(CI))).status).toBe(200);
    const { entries } = await audit();
    expect(entries.map((e) => [e.action, e.jobId, e.queue, e.after, e.reason])).toEqual([
      ['job.force_requeue', live, 'sms', { status: 'pending' }, 'rollback'],
      ['job.requeue', lost, 'mail', { status: 'pending' }, 'host died'],
    ]);
  });
});

describe('GET /api/v1/audit', () => {
  test('pages with before, filters, readable with the read-only token, not with the worker token', async () => {
    t = await setup(base);
    for (let i = 0; i < 5; i++) await t.post(`/api/v1/queues/q${i % 2}/pause`, {}, bearer(i % 2 ? CI : ADMIN));
    const page1 = await audit('?limit=2', READONLY);
    expect(page1.entries).toHaveLength(2);
    const page2 = await audit(`?limit=2&before=${page1.next}`);
    const page3 = await audit(`?limit=2&before=${page2.next}`);
    expect(page3.next).toBeNull();
    const ids = [...page1.entries, ...page2.entries, ...page3.entries].map((e) => Number(e.id));
    expect(ids).toHaveLength(5);
    expect([...ids].sort((a, b) => b - a)).toEqual(ids);
    expect((await audit('?actor=ci-bot')).entries).toHaveLength(2);
    expect((await audit('?queue=q0')).entries).toHaveLength(3);
    expect((await t.get('/api/v1/audit', bearer(WORKER))).status).toBe(403);
    expect((await t.get('/api/v1/audit')).status).toBe(401);
    for (const bad of ['?action=drop_table', '?limit=0', '?before=x', '?queue=%20']) {
      const res = await t.get(`/api/v1/audit${bad}`, bearer(ADMIN));
      expect(res.status, bad).toBe(400);
      expect(res.json.error.code).toBe('invalid_request');
    }
  });

  test('pruned past LEASEHOLD_AUDIT_RETENTION_MS by the reaper pass, with used form tokens past their session', async () => {
    t = await setup({ ...base, auditRetentionMs: 60_000 });
    await t.post('/api/v1/queues/a/pause', {}, bearer(ADMIN));
    t.clock.advance(30_000);
    await t.post('/api/v1/queues/b/pause', {}, bearer(ADMIN));
    t.clock.advance(40_000);
    await runMaintenancePass(t.db, t.clock.now(), t.config);
    expect((await audit()).entries.map((e) => e.queue)).toEqual(['b']);
  });
});

describe('the dashboard: named operators, every action audited, one-time forms', () => {
  test('login asks for a name: required, trimmed, at most 100 characters; failures and logins are audited', async () => {
    t = await setup(base);
    for (const [name, message] of [
      ['', 'Your name is required'],
      ['    ', 'Your name is required'],
      ['x'.repeat(101), 'at most 100 characters'],
      ['Ada\u0007', 'control characters'],
    ] as const) {
      const res = await req('/dashboard/login', { form: { name, token: ADMIN } });
      expect(res.status, name).toBe(400);
      expect(await res.text()).toContain(message);
      expect(res.headers.get('set-cookie')).toBeNull();
    }
    const wrong = await req('/dashboard/login', { form: { name: 'Mallory', token: 'n'.repeat(24) } });
    expect(wrong.status).toBe(401);
    const cookie = await login(ONCALL, '  Grace Hopper  ');
    expect(await (await req('/dashboard', { cookie })).text()).toContain('Grace Hopper');
    const { entries } = await audit();
    expect(entries.map((e) => [e.action, e.actor, e.role, e.credential])).toEqual([
      ['login', 'Grace Hopper', 'admin', 'oncall'],
      ['login_failed', 'Mallory', 'none', null],
    ]);
    expect(entries[1]!.client).toBeTruthy();
  });

  test('failed logins are folded per client and minute: 300 guesses from loopback are one entry with a count', async () => {
    t = await setup(base);
    const from = (address: string) => ({ incoming: { socket: { remoteAddress: address } } });
    const guess = (address: string, name = 'Mallory', i = 0) =>
      t.app.request('/dashboard/login', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ name: `${name} ${i}`, token: `wrong-${i}`.padEnd(24, 'x') }).toString(), redirect: 'manual' }, from(address));
    // Loopback is never backed off, so each of these is checked and refused.
    for (let i = 0; i < 300; i++) expect((await guess('127.0.0.1', 'Mallory', i)).status).toBe(401);
    let failed = (await audit('?action=login_failed&limit=500')).entries;
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ actor: 'Mallory 0', role: 'none', client: '127.0.0.1', reason: 'the token is not valid', after: { attempts: 300, lastAt: new Date(t.clock.now()).toISOString() } });

    // Another client has its own entry; a minute later the same client opens a new one.
    expect((await guess('::1', 'Eve')).status).toBe(401);
    t.clock.advance(60_000);
    expect((await guess('127.0.0.1', 'Mallory', 300)).status).toBe(401);
    failed = (await audit('?action=login_failed&limit=500')).entries;
    expect(failed.map((e) => [e.client, e.after.attempts])).toEqual([
      ['127.0.0.1', 1],
      ['::1', 1],
      ['127.0.0.1', 300],
    ]);

    // Off loopback the back-off still applies: past 5 free wrong tokens, 429 (and nothing more is written).
    for (let i = 0; i < 6; i++) expect((await guess('10.0.0.7', 'Bob', i)).status).toBe(401);
    for (let i = 0; i < 3; i++) expect((await guess('10.0.0.7', 'Bob', i)).status).toBe(429);
    failed = (await audit('?action=login_failed&limit=500')).entries;
    expect(failed[0]).toMatchObject({ client: '10.0.0.7', after: { attempts: 6 } });
    expect(failed).toHaveLength(4);
  });

  test("a dashboard cancel, bulk, thresholds and logout are recorded as the operator's name", async () => {
    t = await setup(base);
    const j = await t.post('/api/v1/queues/mail/jobs', { payload: 1 }, bearer(WORKER));
    const id = j.json.job.id as string;
    await t.post('/api/v1/queues/mail/jobs', { payload: 2 }, bearer(WORKER));
    const cookie = await login(ADMIN, 'Ada');
    const cancel = await req(`/dashboard/jobs/${id}/cancel`, { cookie, form: { _csrf: await formToken(cookie, `/dashboard/jobs/${id}`), reason: 'dup' } });
    expect(cancel.status).toBe(303);
    const events = (await t.get(`/api/v1/jobs/${id}`, bearer(ADMIN))).json.events as { type: string; actor: string }[];
    expect(events.find((e) => e.type === 'cancelled')!.actor).toBe('Ada');
    const bulk = await req('/dashboard/bulk', { cookie, form: { _csrf: await formToken(cookie, '/dashboard/bulk?queue=mail&status=pending'), queue: 'mail', status: 'pending', expected: '1', confirm: '1', reason: 'drain' } });
    expect(bulk.status).toBe(200);
    const th = await req('/dashboard/alerts/thresholds/mail', { cookie, form: { _csrf: await formToken(cookie, '/dashboard/alerts/thresholds/mail'), reapsPer5m: '7' } });
    expect(th.status).toBe(303);
    expect((await req('/dashboard/logout', { cookie, form: { _csrf: await formToken(cookie) } })).status).toBe(303);
    const { entries } = await audit();
    expect(entries.map((e) => [e.action, e.actor, e.source, e.credential])).toEqual([
      ['logout', 'Ada', 'dashboard', 'default'],
      ['queue.alert_thresholds', 'Ada', 'dashboard', 'default'],
      ['jobs.bulk', 'Ada', 'dashboard', 'default'],
      ['job.cancel', 'Ada', 'dashboard', 'default'],
      ['login', 'Ada', 'dashboard', 'default'],
    ]);
    expect(entries[1]).toMatchObject({ queue: 'mail', before: {}, after: { reapsPer5m: 7 } });
    expect(entries[2]).toMatchObject({ reason: 'drain', after: { queue: 'mail', status: 'pending', action: 'cancel', changed: 1 } });
    expect(entries[3]).toMatchObject({ jobId: id, queue: 'mail', reason: 'dup', after: { status: 'cancelled' } });
  });

  test('the audit page: newest first, filters, paging; read-only logins see it', async () => {
    t = await setup(base);
    for (let i = 0; i < 55; i++) await t.post(`/api/v1/queues/q${i % 3}/pause`, {}, bearer(i === 54 ? CI : ADMIN));
    const cookie = await login(READONLY, 'Reader');
    const html = await (await req('/dashboard/audit', { cookie })).text();
    expect(html).toContain('href="/dashboard/audit"');
    const rows = [...html.matchAll(/<tr id="audit-(\d+)"/g)].map((m) => Number(m[1]));
    expect(rows).toHaveLength(50);
    expect([...rows].sort((a, b) => b - a)).toEqual(rows);
    // The newest is the read-only login itself.
    expect(html).toMatch(/<tr id="audit-\d+"><td>[^<]*<\/td><td><strong class="actor">Reader<\/strong>/);
    const older = /id="audit-older" href="([^"]+)"/.exec(html)![1]!.replace(/&amp;/g, '&');
    const page2 = await (await req(older, { cookie })).text();
    expect([...page2.matchAll(/<tr id="audit-(\d+)"/g)]).toHaveLength(6);
    const ci = await (await req('/dashboard/audit?actor=ci-bot', { cookie })).text();
    expect([...ci.matchAll(/<tr id="audit-/g)]).toHaveLength(1);
    expect(ci).toContain('token ci-bot');
    expect((await req('/dashboard/audit?action=nope', { cookie })).status).toBe(400);
  });

  test('a re-sent form is refused as already submitted and changes nothing; a fresh form works', async () => {
    t = await setup(base);
    const a = await t.post('/api/v1/queues/mail/jobs', { payload: 1 }, bearer(WORKER));
    const id = a.json.job.id as string;
    const cookie = await login(ADMIN);
    const token = await formToken(cookie, `/dashboard/jobs/${id}`);
    expect((await req(`/dashboard/jobs/${id}/cancel`, { cookie, form: { _csrf: token } })).status).toBe(303);
    await t.post(`/api/v1/jobs/${id}/retry`, {}, bearer(ADMIN));
    const replay = await req(`/dashboard/jobs/${id}/cancel`, { cookie, form: { _csrf: token } });
    expect(replay.status).toBe(409);
    expect(await replay.text()).toContain('already submitted');
    expect((await t.get(`/api/v1/jobs/${id}`, bearer(ADMIN))).json.job.status).toBe('pending');
    expect((await audit('?action=job.cancel')).entries).toHaveLength(1);
    // Two copies of one form racing: exactly one acts (the claim is in the action's own batch).
    const b = await t.post('/api/v1/queues/mail/bulk', { action: 'cancel', reason: 'x', dryRun: true }, bearer(ADMIN));
    expect(b.json.matching).toBe(1);
    const fresh = await formToken(cookie, '/dashboard/bulk?queue=mail&status=pending');
    const form = { _csrf: fresh, queue: 'mail', status: 'pending', expected: '1', confirm: '1', reason: 'race' };
    const both = await Promise.all([req('/dashboard/bulk', { cookie, form }), req('/dashboard/bulk', { cookie, form })]);
    expect(both.map((r) => r.status).sort()).toEqual([200, 409]);
    expect((await audit('?action=jobs.bulk')).entries).toHaveLength(1);
    // A form token of another session is not valid here.
    const other = await login(ADMIN, 'Other');
    const theirs = await formToken(other);
    expect((await req('/dashboard/logout', { cookie, form: { _csrf: theirs } })).status).toBe(403);
  });
});

describe('several tokens per role', () => {
  test('both admin tokens work for bearer calls and logins; constant-time matching compares every token', async () => {
    t = await setup(base);
    for (const token of [ADMIN, ONCALL, CI]) expect((await t.get('/api/v1/queues', bearer(token))).status).toBe(200);
    expect((await t.get('/api/v1/queues', bearer(WORKER))).status).toBe(403);
    const tokens = roleTokens(t.config);
    expect(tokens.admin.map((x) => x.name)).toEqual(['default', 'oncall', 'ci-bot']);
    // The first token matches, yet every one is still compared.
    expect(matchToken(tokens.admin, ADMIN)).toEqual({ match: tokens.admin[0], compared: 3 });
    expect(matchToken(tokens.admin, 'z'.repeat(24))).toEqual({ match: undefined, compared: 3 });
  });

  test('adding a token logs nobody out; removing one ends its sessions and bearer use only', async () => {
    t = await setup({ adminToken: ADMIN, workerToken: WORKER, adminTokens: `oncall:${ONCALL}` });
    const viaDefault = await login(ADMIN, 'A');
    const viaOncall = await login(ONCALL, 'B');
    const restart = (config: Partial<Config>) => appOn({ db: t.db, config: { ...t.config, ...config }, clock: t.clock, log: t.log });
    // A second list entry added (a restart with more tokens): both sessions live on.
    const added = restart({ adminTokens: `oncall:${ONCALL},ci-bot:${CI}` });
    for (const cookie of [viaDefault, viaOncall]) expect((await req('/dashboard', { cookie }, added)).status).toBe(200);
    // oncall removed: its session and its bearer calls are over, the others are not.
    const removed = restart({ adminTokens: `ci-bot:${CI}` });
    expect((await req('/dashboard', { cookie: viaOncall }, removed)).status).toBe(303);
    expect((await req('/dashboard', { cookie: viaDefault }, removed)).status).toBe(200);
    expect((await removed.request('/api/v1/queues', { headers: bearer(ONCALL) })).status).toBe(401);
    expect((await removed.request('/api/v1/queues', { headers: bearer(CI) })).status).toBe(200);
    // A read-only session ends with its token too.
    t.close();
    t = await setup({ adminToken: ADMIN, readonlyTokens: `grafana:${READONLY}` });
    const ro = await login(READONLY, 'R');
    const gone = appOn({ db: t.db, config: { ...t.config, readonlyTokens: `grafana2:${'q'.repeat(24)}` }, clock: t.clock, log: t.log });
    expect((await req('/dashboard', { cookie: ro }, gone)).status).toBe(303);
  });

  test('bad token lists stop the start with one clear line each', () => {
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig(env);
      } catch (err) {
        return String((err as Error).message);
      }
      return '';
    };
    expect(problems({ LEASEHOLD_ADMIN_TOKENS: `a:${ONCALL},a:${CI}` })).toMatch(/LEASEHOLD_ADMIN_TOKENS: entry 2: the name a is used twice/);
    expect(problems({ LEASEHOLD_ADMIN_TOKEN: ADMIN, LEASEHOLD_ADMIN_TOKENS: `default:${CI}` })).toMatch(/the name default is used twice \(the name of LEASEHOLD_ADMIN_TOKEN\)/);
    expect(problems({ LEASEHOLD_ADMIN_TOKENS: 'a:short' })).toMatch(/entry 1 \(a\): the token must be at least 16 characters/);
    expect(problems({ LEASEHOLD_ADMIN_TOKENS: ONCALL })).toMatch(/entry 1 must be name:token/);
    expect(problems({ LEASEHOLD_ADMIN_TOKENS: `bad name:${ONCALL}` })).toMatch(/entry 1: the name must be/);
    expect(problems({ LEASEHOLD_ADMIN_TOKENS: `a:${ONCALL}`, LEASEHOLD_WORKER_TOKENS: `w:${ONCALL}` })).toMatch(/LEASEHOLD_ADMIN_TOKENS: a: must differ from the worker token w/);
    // The secret itself is never echoed.
    expect(problems({ LEASEHOLD_ADMIN_TOKENS: 'a:short-secret' })).not.toContain('short-secret');
    // Lists alone guard a non-loopback bind.
    expect(problems({ LEASEHOLD_HOST: '0.0.0.0', LEASEHOLD_ADMIN_TOKENS: `a:${ONCALL}`, LEASEHOLD_WORKER_TOKENS: `w:${WORKER}` })).toBe('');
  });
});
