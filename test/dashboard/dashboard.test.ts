/**
 * The operator dashboard (docs/dashboard.md), at the app.request level:
 * login and the session cookie, CSRF refusal that changes nothing, escaping of
 * hostile payloads, every page, and the audited operator actions.
 */
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';
import { dashboardBrowser, sessionCookie } from '../support/dashboard-browser.ts';
import { FORCE_NEEDS_REASON, REAPER_ACTS_ITSELF } from '../../src/engine/operator-actions.ts';

const ADMIN = 'a'.repeat(24);
const admin = { authorization: `Bearer ${ADMIN}` };

let t: TestBed;
afterEach(() => {
  expect(t.errors).toEqual([]);
  t.close();
});

const browser = dashboardBrowser(() => t.app);
const { req } = browser;
const login = () => browser.login(ADMIN);

/** The CSRF token the dashboard put in a page's forms. */
async function csrfOf(cookie: string, path = '/dashboard'): Promise<string> {
  const html = await (await req(path, { cookie })).text();
  const m = /name="_csrf" value="([^"]+)"/.exec(html);
  if (!m) throw new Error('no csrf token on the page');
  return m[1]!;
}

async function job(id: string) {
  return (await t.get(`/api/v1/jobs/${id}`, admin)).json;
}

describe('with an admin token', () => {
  beforeEach(async () => {
    t = await setup({ adminToken: ADMIN });
  });

  test('pages need a login; GET / and the dashboard redirect to the login form', async () => {
    const root = await req('/');
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/dashboard');
    for (const path of ['/dashboard', '/dashboard/jobs?status=failed', '/dashboard/jobs/1', '/dashboard/zombies', '/dashboard/workers']) {
      const res = await req(path);
      expect(res.status, path).toBe(303);
      expect(res.headers.get('location')).toBe(`/dashboard/login?next=${encodeURIComponent(path)}`);
    }
    const live = await req('/dashboard/live/overview');
    expect(live.status).toBe(401);
    const form = await req('/dashboard/login');
    expect(form.status).toBe(200);
    expect(await form.text()).toContain('name="token"');
  });

  test('a wrong token gets 401 and no cookie; the right one a signed, HttpOnly, SameSite=Strict session with expiry', async () => {
    const bad = await req('/dashboard/login', { form: { name: 'Ada', token: 'nope' } });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('set-cookie')).toBeNull();
    expect(await bad.text()).toContain('not valid');

    const good = await req('/dashboard/login', { form: { name: 'Ada', token: ADMIN, next: '/dashboard/zombies' } });
    expect(good.status).toBe(303);
    expect(good.headers.get('location')).toBe('/dashboard/zombies');
    const set = good.headers.get('set-cookie')!;
    expect(set).toMatch(/HttpOnly/i);
    expect(set).toMatch(/SameSite=Strict/i);
    expect(set).toMatch(/Max-Age=\d+/);
    expect(set).toMatch(/Path=\/dashboard/);
    const cookie = sessionCookie(good);
    expect((await req('/dashboard', { cookie })).status).toBe(200);

    // A tampered cookie (payload or signature) is no session.
    const [payload, sig] = cookie.slice('leasehold_session='.length).split('.');
    const forged = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    forged.exp += 1000 * 3600 * 24 * 365;
    const forgedPayload = Buffer.from(JSON.stringify(forged)).toString('base64url');
    expect((await req('/dashboard', { cookie: `leasehold_session=${forgedPayload}.${sig}` })).status).toBe(303);
    expect((await req('/dashboard', { cookie: `leasehold_session=${payload}.${sig!.slice(0, -2)}AA` })).status).toBe(303);

    // An open redirect target is not followed.
    const evil = await req('/dashboard/login', { form: { name: 'Ada', token: ADMIN, next: '//evil.example/x' } });
    expect(evil.headers.get('location')).toBe('/dashboard');
  });

  test('an expired session is refused', async () => {
    const { SessionKeys } = await import('../../src/dashboard/session.ts');
    const keys = new SessionKeys({ admin: [{ role: 'admin', name: 'default', token: ADMIN }], readonly: [] });
    const { cookie } = await keys.issue('admin', Date.now() - 13 * 3600 * 1000, { tok: 'default', name: 'Ada' });
    expect(await keys.verify(cookie, Date.now())).toBeUndefined();
    expect((await req('/dashboard', { cookie: `leasehold_session=${cookie}` })).status).toBe(303);
    const fresh = await keys.issue('admin', Date.now(), { tok: 'default', name: 'Ada' });
    expect(await keys.verify(fresh.cookie, Date.now())).toMatchObject({ role: 'admin' });
  });

  test('secure headers: a CSP allowing only self scripts and styles, no framing', async () => {
    const cookie = await login();
    const res = await req('/dashboard', { cookie });
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    const html = await res.text();
    expect(html.startsWith('<!DOCTYPE html>')).toBe(true);
    // No inline script or style anywhere.
    expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
    expect(html).not.toMatch(/<style|\sstyle=/);
  });

  test('every page renders (200) with data in it', async () => {
    const a = await t.enqueue('emails', { payload: { to: 'x@example.com' } });
    await t.enqueue('emails', { payload: 2 });
    await t.claim('emails', 'w-1');
    const cookie = await login();
    for (const path of [
      '/dashboard',
      '/dashboard/jobs',
      '/dashboard/jobs?queue=emails&status=pending',
      `/dashboard/jobs?after=${Number(a.id) + 1}`,
      `/dashboard/jobs/${a.id}`,
      '/dashboard/zombies',
      '/dashboard/workers',
      '/dashboard/live/overview',
      '/dashboard/live/jobs?queue=emails',
      `/dashboard/live/jobs/${a.id}`,
      '/dashboard/live/zombies',
      '/dashboard/live/workers',
    ]) {
      const res = await req(path, { cookie });
      expect(res.status, path).toBe(200);
    }
    expect(await (await req('/dashboard', { cookie })).text()).toContain('emails');
    expect(await (await req('/dashboard/workers', { cookie })).text()).toContain('w-1');
    // The job page's live region asks for a full reload (new actions) once the status moved on.
    expect(await (await req(`/dashboard/jobs/${a.id}`, { cookie })).text()).toContain(`hx-get="/dashboard/live/jobs/${a.id}?shown=running&amp;part=summary"`);
    expect((await req(`/dashboard/live/jobs/${a.id}?shown=running`, { cookie })).headers.get('hx-redirect')).toBeNull();
    expect((await req(`/dashboard/live/jobs/${a.id}?shown=pending`, { cookie })).headers.get('hx-redirect')).toBe(`/dashboard/jobs/${a.id}`);
    expect((await req('/dashboard/jobs/999999', { cookie })).status).toBe(404);
    expect((await req('/dashboard/jobs?status=bogus', { cookie })).status).toBe(400);
    expect((await req('/dashboard/jobs?after=x', { cookie })).status).toBe(400);
  });

  test('jobs list: keyset pagination keeps the filters', async () => {
    for (let i = 0; i < 55; i++) await t.enqueue('bulk', { payload: i });
    await t.enqueue('other', { payload: 'x' });
    const cookie = await login();
    const first = await (await req('/dashboard/jobs?queue=bulk', { cookie })).text();
    const next = /href="([^"]*after=\d+[^"]*)" rel="next"/.exec(first)?.[1]?.replace(/&amp;/g, '&');
    expect(next).toMatch(/^\/dashboard\/jobs\?queue=bulk&after=\d+$/);
    expect(first).toContain('hx-get="/dashboard/live/jobs?queue=bulk"');
    const second = await (await req(next!, { cookie })).text();
    const ids = [...second.matchAll(/href="\/dashboard\/jobs\/(\d+)"/g)].map((m) => Number(m[1]));
    expect(ids).toHaveLength(5);
    expect(second).not.toContain('rel="next"');
  });

  test('jobs list: find by id or idempotency key, oldest first, bad filters named', async () => {
    const keyed = await t.enqueue('mail', { payload: 1, idempotencyKey: 'order-42' });
    await t.enqueue('sms', { payload: 2, idempotencyKey: 'order-42' }); // the same key in another queue
    for (let i = 0; i < 55; i++) await t.enqueue('mail', { payload: i });
    const cookie = await login();
    const ids = (html: string) => [...html.matchAll(/href="\/dashboard\/jobs\/(\d+)"/g)].map((m) => Number(m[1]));
    const list = async (query: string) => {
      const res = await req(`/dashboard/jobs${query}`, { cookie });
      expect(res.status, query).toBe(200);
      return res.text();
    };
    expect(ids(await list(`?id=${keyed.id}`))).toEqual([Number(keyed.id)]);
    expect(ids(await list(`?id=${keyed.id}&status=running`))).toEqual([]);
    // A key across queues, then within one.
    const byKey = await list('?key=order-42');
    expect(ids(byKey)).toHaveLength(2);
    expect(byKey).toContain('value="order-42"'); // the filter stays in its input
    expect(ids(await list('?key=order-42&queue=mail'))).toEqual([Number(keyed.id)]);
    // With an id or key filter there is no bulk action (it acts on queue and status only).
    expect(await list('?key=order-42&status=pending')).not.toContain('/dashboard/bulk');
    expect(await list('?queue=mail&status=pending')).toContain('/dashboard/bulk');
    // Oldest first, paginated: the order survives in the next link and the live region.
    const oldest = await list('?queue=mail&order=asc');
    expect(ids(oldest)[0]).toBe(Number(keyed.id));
    expect(oldest).toContain('hx-get="/dashboard/live/jobs?queue=mail&amp;order=asc"');
    const next = /href="([^"]*after=\d+[^"]*)" rel="next"/.exec(oldest)?.[1]?.replace(/&amp;/g, '&');
    expect(next).toMatch(/^\/dashboard\/jobs\?queue=mail&order=asc&after=\d+$/);
    const second = ids(await list(next!.slice('/dashboard/jobs'.length)));
    expect(second).toHaveLength(6);
    expect(second[0]).toBeGreaterThan(ids(oldest).at(-1)!);
    // Bad filters: 400 naming the field.
    for (const [query, field] of [['?id=abc', 'id:'], ['?order=sideways', 'order:'], [`?key=${'k'.repeat(256)}`, 'key:']]) {
      const res = await req(`/dashboard/jobs${query}`, { cookie });
      expect(res.status, query).toBe(400);
      expect(await res.text()).toContain(field);
    }
  });

  test('a job with more than 1,000 events shows the newest ones and says how many older ones are left out', async () => {
    const j = await t.enqueue('q', { payload: 1, idempotencyKey: 'k' });
    // 1,099 dedup hits: 1,100 events before the claim and the completion.
    await t.post('/api/v1/queues/q/jobs', { jobs: Array.from({ length: 1_099 }, () => ({ payload: 1, idempotencyKey: 'k' })) });
    const [c] = await t.claim('q', 'w');
    expect((await t.post(`/api/v1/jobs/${j.id}/complete`, { workerId: 'w', lockToken: c!.lockToken })).status).toBe(200);
    // 1,100 stored events (the dedups and the claim); the enqueue and the
    // completion have no row (drizzle/0015) and are read from the job: the
    // completion comes on top of the newest 1,000, the enqueue is among the older.
    const api = (await t.get(`/api/v1/jobs/${j.id}`, admin)).json;
    expect(api.events).toHaveLength(1001);
    expect(api.olderEventsNotShown).toBe(101);
    expect(api.events.at(-1)).toMatchObject({ type: 'completed', derived: true, id: null, workerId: 'w' }); // the newest are kept
    expect(api.events.at(-2)).toMatchObject({ type: 'claimed', derived: false });
    expect(api.events.filter((e: { derived: boolean }) => e.derived)).toHaveLength(1);
    const cookie = await login();
    const html = await (await req(`/dashboard/jobs/${j.id}`, { cookie })).text();
    expect(html).toContain('101 older events not shown (the newest 1,001 are below).');
  });

  test('an unknown notice in the URL shows no notice (not even an Object.prototype name)', async () => {
    const j = await t.enqueue('q', { payload: 1 });
    const cookie = await login();
    for (const notice of ['constructor', 'toString', '__proto__', 'nonsense']) {
      const html = await (await req(`/dashboard/jobs/${j.id}?notice=${notice}`, { cookie })).text();
      expect(html, notice).not.toContain('id="notice"');
    }
    expect(await (await req(`/dashboard/jobs/${j.id}?notice=cancelled`, { cookie })).text()).toContain('id="notice"');
  });

  test('a payload with <script> and <img onerror> is shown as escaped text', async () => {
    const evil = '<script>alert(1)</script><img src=x onerror=alert(2)>';
    const j = await t.enqueue(`q`, { payload: { html: evil } });
    await t.claim('q', '<img src=x onerror=alert(3)>');
    const cookie = await login();
    for (const path of [`/dashboard/jobs/${j.id}`, `/dashboard/live/jobs/${j.id}`, '/dashboard/jobs', '/dashboard/workers']) {
      const html = await (await req(path, { cookie })).text();
      expect(html, path).not.toContain('<script>alert');
      expect(html, path).not.toContain('<img src=x');
      expect(html, path).not.toMatch(/<img/i);
    }
    const detail = await (await req(`/dashboard/jobs/${j.id}`, { cookie })).text();
    expect(detail).toContain('&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;');
  });

  test('a POST without a valid CSRF token gets 403 and changes nothing', async () => {
    const j = await t.enqueue('q', { payload: 1 });
    const cookie = await login();
    const other = await login();
    const otherCsrf = await csrfOf(other);
    const before = await t.client.execute('select count(*) as n from events');
    for (const form of [{}, { _csrf: '' }, { _csrf: 'x'.repeat(43) }, { _csrf: otherCsrf }] as Record<string, string>[]) {
      const res = await req(`/dashboard/jobs/${j.id}/cancel`, { cookie, form: { reason: 'r', ...form } });
      expect(res.status).toBe(403);
    }
    // Without a session at all: no action either.
    const anon = await req(`/dashboard/jobs/${j.id}/cancel`, { form: { _csrf: otherCsrf } });
    expect(anon.status).toBe(401);
    // A JSON body cannot carry it.
    const json = await t.app.request(`/dashboard/jobs/${j.id}/cancel`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json' },
      body: JSON.stringify({ _csrf: await csrfOf(cookie) }),
    });
    expect(json.status).toBe(403);
    expect((await job(j.id)).job.status).toBe('pending');
    expect((await t.client.execute('select count(*) as n from events')).rows[0]!.n).toBe(before.rows[0]!.n);
    // Logout needs the token too.
    expect((await req('/dashboard/logout', { cookie, form: {} })).status).toBe(403);
  });

  test('cancel a pending job, then retry it: both audited with who and why', async () => {
    const j = await t.enqueue('q', { payload: 1 });
    const cookie = await login();
    const csrf = await csrfOf(cookie, `/dashboard/jobs/${j.id}`);
    const cancel = await req(`/dashboard/jobs/${j.id}/cancel`, { cookie, form: { _csrf: csrf, reason: 'duplicate <b>order</b>' } });
    expect(cancel.status).toBe(303);
    expect(cancel.headers.get('location')).toBe(`/dashboard/jobs/${j.id}?notice=cancelled`);
    expect((await job(j.id)).job.status).toBe('cancelled');

    // The same form again: refused as already submitted, nothing changed.
    const resent = await req(`/dashboard/jobs/${j.id}/cancel`, { cookie, form: { _csrf: csrf, reason: 'duplicate <b>order</b>' } });
    expect(resent.status).toBe(409);
    expect(await resent.text()).toContain('already submitted');
    const again = await req(`/dashboard/jobs/${j.id}/cancel`, { cookie, form: { _csrf: await csrfOf(cookie, `/dashboard/jobs/${j.id}`) } });
    expect(again.headers.get('location')).toBe(`/dashboard/jobs/${j.id}?notice=conflict&was=cancelled`);

    const retry = await req(`/dashboard/jobs/${j.id}/retry`, { cookie, form: { _csrf: await csrfOf(cookie, `/dashboard/jobs/${j.id}`), reason: 'customer asked' } });
    expect(retry.headers.get('location')).toBe(`/dashboard/jobs/${j.id}?notice=retried`);
    expect((await job(j.id)).job.status).toBe('pending');

    const events = (await job(j.id)).events as { type: string; actor: string | null; reason: string | null }[];
    const cancelled = events.find((e) => e.type === 'cancelled')!;
    expect(cancelled.actor).toBe('Ada');
    expect(cancelled.reason).toBe('duplicate <b>order</b>');
    const retried = events.find((e) => e.type === 'retried_by_operator')!;
    expect(retried).toMatchObject({ reason: 'customer asked' });
    expect(retried.actor).toBe('Ada');

    const page = await (await req(`/dashboard/jobs/${j.id}?notice=retried`, { cookie })).text();
    expect(page).toContain('duplicate &lt;b&gt;order&lt;/b&gt;');
    expect(page).toContain('fresh attempt budget');
  });

  test('a refused requeue says the rule in the words the API and the CLI use (src/engine/operator-actions.ts)', async () => {
    const j = await t.enqueue('q', { payload: 1 });
    await t.claim('q', 'w-1');
    const cookie = await login();
    const csrf = await csrfOf(cookie, `/dashboard/jobs/${j.id}`);
    const shown = async (res: Response) => (await req(res.headers.get('location')!, { cookie })).text();

    const noReason = await req(`/dashboard/jobs/${j.id}/force-requeue`, { cookie, form: { _csrf: csrf, confirm: j.id } });
    expect(await shown(noReason)).toContain(`Nothing changed: ${FORCE_NEEDS_REASON}.`);
    const waiting = await req(`/dashboard/jobs/${j.id}/requeue`, { cookie, form: { _csrf: csrf } });
    expect(await shown(waiting)).toContain(REAPER_ACTS_ITSELF);
    expect((await job(j.id)).job.status).toBe('running');
  });

  test('requeue: refused while the reaper would wait; allowed once it would act; force needs the typed id and a reason', async () => {
    const j = await t.enqueue('q', { payload: 1 });
    await t.claim('q', 'w-1');
    const cookie = await login();
    const csrf = await csrfOf(cookie, `/dashboard/jobs/${j.id}`);

    const live = await req(`/dashboard/jobs/${j.id}/requeue`, { cookie, form: { _csrf: csrf } });
    expect(live.headers.get('location')).toBe(`/dashboard/jobs/${j.id}?notice=reaper_would_wait`);
    expect((await job(j.id)).job.status).toBe('running');

    for (const form of [{}, { confirm: String(Number(j.id) + 1), reason: 'r' }, { confirm: j.id, reason: '   ' }] as Record<string, string>[]) {
      const res = await req(`/dashboard/jobs/${j.id}/force-requeue`, { cookie, form: { _csrf: csrf, ...form } });
      expect(res.status).toBe(303);
      expect(res.headers.get('location')).toMatch(/notice=(confirm_mismatch|reason_required)/);
      expect((await job(j.id)).job.status).toBe('running');
    }
    const forced = await req(`/dashboard/jobs/${j.id}/force-requeue`, { cookie, form: { _csrf: csrf, confirm: j.id, reason: 'worker host is being drained' } });
    expect(forced.headers.get('location')).toBe(`/dashboard/jobs/${j.id}?notice=force_requeued`);
    expect((await job(j.id)).job).toMatchObject({ status: 'pending', lostAttempts: 1, lockedBy: null });

    // Claimed again, then the lease runs out and its grace passes with w-2 silent: it shows as
    // a zombie and a plain requeue works from there.
    await t.claim('q', 'w-2');
    t.clock.advance(t.config.leaseMs + t.config.graceMs + 1);
    const zombies = await (await req('/dashboard/zombies', { cookie })).text();
    expect(zombies).toContain(`id="zombie-${j.id}"`);
    expect(zombies).toContain('overdue by');
    const requeue = await req(`/dashboard/jobs/${j.id}/requeue`, { cookie, form: { _csrf: await csrfOf(cookie, '/dashboard/zombies'), return_to: '/dashboard/zombies', reason: 'stuck' } });
    expect(requeue.headers.get('location')).toBe('/dashboard/zombies?notice=requeued');
    expect((await job(j.id)).job.status).toBe('pending');
    expect(await (await req('/dashboard/zombies', { cookie })).text()).not.toContain(`id="zombie-${j.id}"`);

    const events = (await job(j.id)).events as { type: string; actor: string | null; reason: string | null }[];
    expect(events.find((e) => e.type === 'force_requeued_by_operator')).toMatchObject({ reason: 'worker host is being drained' });
    expect(events.find((e) => e.type === 'requeued_by_operator')).toMatchObject({ reason: 'stuck' });
    expect(events.filter((e) => e.type.endsWith('by_operator')).every((e) => e.actor === 'Ada')).toBe(true);
  });

  test("a queue's alert thresholds: seen beside the server's, set from the form, bad values named and not saved", async () => {
    await t.enqueue('mail', { payload: 1 });
    const cookie = await login();
    const alerts = await (await req('/dashboard/alerts', { cookie })).text();
    expect(alerts).toContain('<a href="/dashboard/alerts/thresholds/mail">mail</a> (server&#39;s)');
    const path = '/dashboard/alerts/thresholds/mail';
    const form = await (await req(path, { cookie })).text();
    expect(form).toMatch(/<tr id="threshold-heartbeatLagFactor">.*<td>3<\/td>.*name="heartbeatLagFactor"[^>]*value=""/s);
    const csrf = await csrfOf(cookie, path);
    const saved = await req(path, { cookie, form: { _csrf: csrf, heartbeatLagFactor: '5', pendingAgeMs: '300000', reapsPer5m: '' } });
    expect(saved.status).toBe(303);
    expect(saved.headers.get('location')).toBe(`${path}?notice=saved`);
    expect((await t.get('/api/v1/queues/mail', admin)).json.queue.alertOverrides).toEqual({ heartbeatLagFactor: 5, pendingAgeMs: 300000 });
    expect(await (await req(`${path}?notice=saved`, { cookie })).text()).toMatch(/name="heartbeatLagFactor"[^>]*value="5"/);
    expect(await (await req('/dashboard/alerts', { cookie })).text()).toContain('mail</a> (2 set)');
    // Out of limits, or not a number: 400 naming the field, the entered values kept, nothing saved
    // (and the form's one-time token not used up: nothing was done).
    const fresh = await csrfOf(cookie, path);
    for (const [field, value, message] of [
      ['reapClaimRatio', '2', 'reapClaimRatio must be between 0.001 and 1, got 2'],
      ['reapsPer5m', '2.5', 'reapsPer5m must be a whole number'],
      ['pendingAgeMs', 'soon', 'pendingAgeMs must be a whole number, got string'],
    ] as const) {
      const bad = await req(path, { cookie, form: { _csrf: fresh, heartbeatLagFactor: '7', [field]: value } });
      expect(bad.status, field).toBe(400);
      const html = await bad.text();
      expect(html).toContain(message);
      expect(html).toMatch(/name="heartbeatLagFactor"[^>]*value="7"/);
    }
    expect((await t.get('/api/v1/queues/mail', admin)).json.queue.alertOverrides).toEqual({ heartbeatLagFactor: 5, pendingAgeMs: 300000 });
    // All empty: back to the server's. No CSRF token: refused.
    expect((await req(path, { cookie, form: { _csrf: fresh } })).status).toBe(303);
    expect((await t.get('/api/v1/queues/mail', admin)).json.queue.alertOverrides).toEqual({});
    expect((await req(path, { cookie, form: { heartbeatLagFactor: '9' } })).status).toBe(403);
    expect((await t.get('/api/v1/queues/mail', admin)).json.queue.alertOverrides).toEqual({});
    // A queue that does not exist is not created.
    expect((await req('/dashboard/alerts/thresholds/nope', { cookie, form: { _csrf: await csrfOf(cookie, path), heartbeatLagFactor: '5' } })).status).toBe(404);
    expect((await t.get('/api/v1/queues/nope', admin)).status).toBe(404);
  });

  test('logout clears the session cookie', async () => {
    const cookie = await login();
    const res = await req('/dashboard/logout', { cookie, form: { _csrf: await csrfOf(cookie) } });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/dashboard/login');
    expect(res.headers.get('set-cookie')).toMatch(/leasehold_session=;.*Max-Age=0/);
  });
});

describe('with a read-only token', () => {
  const READONLY = 'r'.repeat(24);
  beforeEach(async () => {
    t = await setup({ adminToken: ADMIN, readonlyToken: READONLY });
  });

  test('LEASEHOLD_READONLY_TOKEN: 16+ characters, different from the other tokens', async () => {
    const { loadConfig } = await import('../../src/core/config.ts');
    expect(loadConfig({ LEASEHOLD_ADMIN_TOKEN: ADMIN, LEASEHOLD_READONLY_TOKEN: READONLY }).config.readonlyToken).toBe(READONLY);
    expect(() => loadConfig({ LEASEHOLD_READONLY_TOKEN: 'short' })).toThrow(/LEASEHOLD_READONLY_TOKEN/);
    expect(() => loadConfig({ LEASEHOLD_ADMIN_TOKEN: ADMIN, LEASEHOLD_READONLY_TOKEN: ADMIN })).toThrow(/LEASEHOLD_READONLY_TOKEN: must differ/);
    expect(() => loadConfig({ LEASEHOLD_READONLY_TOKEN: READONLY })).toThrow(/LEASEHOLD_READONLY_TOKEN: needs LEASEHOLD_ADMIN_TOKEN/);
  });

  test('a read-only login sees every page but no action, and an action it forges is refused with 403', async () => {
    const pending = await t.enqueue('q', { payload: 1 });
    const running = await t.enqueue('q', { payload: 2 });
    await t.claim('q', 'w-1', { limit: 1 });
    t.clock.advance(t.config.leaseMs + 1);
    const res = await req('/dashboard/login', { form: { name: 'Ada', token: READONLY } });
    expect(res.status).toBe(303);
    const cookie = sessionCookie(res);
    for (const path of ['/dashboard', '/dashboard/jobs', `/dashboard/jobs/${pending.id}`, '/dashboard/zombies', '/dashboard/workers']) {
      const r = await req(path, { cookie });
      expect(r.status, path).toBe(200);
      const html = await r.text();
      expect(html, path).not.toMatch(/action="\/dashboard\/jobs\/\d+\//);
    }
    expect(await (await req('/dashboard/zombies', { cookie })).text()).toContain('read-only');
    const csrf = await csrfOf(cookie);
    const before = await t.client.execute('select count(*) as n from events');
    for (const [id, action] of [[pending.id, 'cancel'], [pending.id, 'requeue'], [running.id, 'requeue']] as const) {
      const r = await req(`/dashboard/jobs/${id}/${action}`, { cookie, form: { _csrf: csrf, reason: 'r' } });
      expect(r.status).toBe(403);
    }
    expect((await t.client.execute('select count(*) as n from events')).rows[0]!.n).toBe(before.rows[0]!.n);
    // Alert thresholds: visible, not settable.
    const thresholds = await (await req('/dashboard/alerts/thresholds/q', { cookie })).text();
    expect(thresholds).toContain('Read-only login: thresholds can be seen, not set.');
    expect(thresholds).not.toContain('name="heartbeatLagFactor"');
    expect((await req('/dashboard/alerts/thresholds/q', { cookie, form: { _csrf: csrf, heartbeatLagFactor: '5' } })).status).toBe(403);
    expect((await t.get('/api/v1/queues/q', { authorization: `Bearer ${ADMIN}` })).json.queue.alertOverrides).toEqual({});
    // The read-only token acts on nothing through the API (a known token of the wrong role: 403); it reads the metrics.
    expect((await t.get('/api/v1/jobs', { authorization: `Bearer ${READONLY}` })).status).toBe(403);
    expect((await t.get('/metrics', { authorization: `Bearer ${READONLY}` })).status).toBe(200);
  });
});

describe('without an admin token (loopback development)', () => {
  beforeEach(async () => {
    t = await setup();
  });

  test('the dashboard is open but its forms are still CSRF-checked', async () => {
    const j = await t.enqueue('q', { payload: 1 });
    const first = await req('/dashboard');
    expect(first.status).toBe(200);
    const cookie = sessionCookie(first);
    expect((await req('/dashboard/login')).status).toBe(303);
    expect((await req(`/dashboard/jobs/${j.id}/cancel`, { cookie, form: {} })).status).toBe(403);
    const csrf = await csrfOf(cookie, `/dashboard/jobs/${j.id}`);
    const ok = await req(`/dashboard/jobs/${j.id}/cancel`, { cookie, form: { _csrf: csrf } });
    expect(ok.status).toBe(303);
    expect((await t.get(`/api/v1/jobs/${j.id}`)).json.job.status).toBe('cancelled');
  });
});

describe('static assets on Node (public/)', () => {
  beforeEach(async () => {
    t = await setup();
  });

  test('serves the vendored htmx and the CSS, nothing outside public/, no dotfiles', async () => {
    const { publicAssets } = await import('../../src/runtime/public-assets.ts');
    const { PUBLIC_DIR } = await import('../../src/runtime/node.ts');
    const assets = publicAssets(PUBLIC_DIR);
    const js = await assets('/htmx.min.js');
    expect(js?.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(await js!.text()).toContain('4.0.1');
    expect((await assets('/dashboard.css'))?.headers.get('content-type')).toMatch(/^text\/css/);
    for (const path of ['/../package.json', '/%2e%2e/package.json', '/..%2fpackage.json', '/.gitignore', '/VENDORED.md', '/nope.js', '/%E0%A4%A']) {
      expect(await assets(path), path).toBeUndefined();
    }
  });
});
