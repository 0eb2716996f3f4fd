/**
 * The dashboard's queue page: running against maxRunning, and the admin's
 * form to set the queue's limits (validated like the API; bad input is a 400
 * naming the field, nothing saved; a read-only login sees, cannot set).
 */
import { afterEach, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';
import { csrfIn, dashboardBrowser } from '../support/dashboard-browser.ts';

const ADMIN = 'a'.repeat(24);
const READONLY = 'r'.repeat(24);
const admin = { authorization: `Bearer ${ADMIN}` };

let t: TestBed;
afterEach(() => {
  expect(t.errors).toEqual([]);
  t.close();
});

const browser = dashboardBrowser(() => t.app);
const { req } = browser;
const login = (token: string) => browser.login(token);
/** A fresh one-time form token, as a browser gets by loading the page again. */
const freshCsrf = async (cookie: string) => csrfIn(await (await req('/dashboard/queues/mail', { cookie })).text());
const settings = async (queue: string) => (await t.get(`/api/v1/queues/${queue}`, admin)).json.queue.settings;

test('an admin sees running against maxRunning and sets it from the form; bad values are named and not saved', async () => {
  t = await setup({ adminToken: ADMIN });
  await t.post('/api/v1/queues/mail/jobs', { jobs: [{ payload: 1 }, { payload: 2 }, { payload: 3 }] }, admin);
  const cookie = await login(ADMIN);
  const page = await (await req('/dashboard/queues/mail', { cookie })).text();
  expect(page).toMatch(/<dd id="queue-max-running">0 running, no limit<\/dd>/);
  const csrf = csrfIn(page);

  const saved = await req('/dashboard/queues/mail', { cookie, form: { _csrf: csrf, maxRunning: '2' } });
  expect(saved.status).toBe(303);
  // The same form sent again: refused, nothing changed; the save is in the audit trail with the operator's name.
  expect((await req('/dashboard/queues/mail', { cookie, form: { _csrf: csrf, maxRunning: '7' } })).status).toBe(409);
  const audit = (await t.get('/api/v1/audit?action=queue.settings', admin)).json.entries;
  expect(audit).toHaveLength(1);
  expect(audit[0]).toMatchObject({ action: 'queue.settings', actor: 'Ada', source: 'dashboard', queue: 'mail' });
  expect(saved.headers.get('location')).toBe('/dashboard/queues/mail?notice=saved');
  expect((await settings('mail')).maxRunning).toBe(2);
  await t.post('/api/v1/queues/mail/claim', { workerId: 'w', limit: 5 }, admin);
  const full = await (await req('/dashboard/queues/mail?notice=saved', { cookie })).text();
  expect(full).toContain('Saved: the next claim uses these limits.');
  expect(full).toMatch(/<dd id="queue-max-running" class="bad">2 of at most 2: full, claims wait for a job to finish<\/dd>/);
  expect(full).toMatch(/name="maxRunning"[^>]*value="2"/);

  for (const [value, message] of [['0', 'maxRunning must be'], ['1.5', 'maxRunning must be a whole number'], ['many', 'maxRunning must be a whole number']] as const) {
    const bad = await req('/dashboard/queues/mail', { cookie, form: { _csrf: await freshCsrf(cookie), maxRunning: value } });
    expect(bad.status, value).toBe(400);
    const html = await bad.text();
    expect(html).toContain(message);
    expect(html).toContain(`value="${value}"`);
  }
  expect((await settings('mail')).maxRunning).toBe(2);
  // Empty: no limit. No CSRF token: refused, nothing changed.
  expect((await req('/dashboard/queues/mail', { cookie, form: { _csrf: await freshCsrf(cookie), maxRunning: '' } })).status).toBe(303);
  expect((await settings('mail')).maxRunning).toBe(null);
  // The rate limit: both fields, or neither.
  expect((await req('/dashboard/queues/mail', { cookie, form: { _csrf: await freshCsrf(cookie), maxRunning: '', rateMax: '100', rateWindowMs: '60000' } })).status).toBe(303);
  expect((await settings('mail')).rateLimit).toEqual({ max: 100, windowMs: 60_000 });
  const limited = await (await req('/dashboard/queues/mail', { cookie })).text();
  expect(limited).toMatch(/<dd id="queue-rate-limit">0 of 100 claims used in this 1 m 0 s window<\/dd>/);
  const half = await req('/dashboard/queues/mail', { cookie, form: { _csrf: await freshCsrf(cookie), rateMax: '100', rateWindowMs: '' } });
  expect(half.status).toBe(400);
  expect(await half.text()).toContain('rateLimit.windowMs');
  expect((await settings('mail')).rateLimit).toEqual({ max: 100, windowMs: 60_000 });
  expect((await req('/dashboard/queues/mail', { cookie, form: { _csrf: await freshCsrf(cookie), rateMax: '', rateWindowMs: '' } })).status).toBe(303);
  expect((await settings('mail')).rateLimit).toBe(null);
  expect((await req('/dashboard/queues/mail', { cookie, form: { maxRunning: '9' } })).status).toBe(403);
  expect((await settings('mail')).maxRunning).toBe(null);
  // A queue that does not exist is not created.
  expect((await req('/dashboard/queues/nope', { cookie, form: { _csrf: await freshCsrf(cookie), maxRunning: '5' } })).status).toBe(404);
  expect((await t.get('/api/v1/queues/nope', admin)).status).toBe(404);
  // The metrics page links each queue to its page.
  expect(await (await req('/dashboard/metrics', { cookie })).text()).toContain('<a href="/dashboard/queues/mail">mail</a>');
});

test('a read-only login sees the limits and no form; its POST is refused', async () => {
  t = await setup({ adminToken: ADMIN, readonlyToken: READONLY });
  await t.post('/api/v1/queues/mail/jobs', { payload: 1 }, admin);
  await t.call('PATCH', '/api/v1/queues/mail/settings', { maxRunning: 4 }, admin);
  const cookie = await login(READONLY);
  const page = await (await req('/dashboard/queues/mail', { cookie })).text();
  expect(page).toContain('0 of at most 4');
  expect(page).not.toContain('name="maxRunning"');
  expect(page).toContain('Read-only login: limits can be seen, not set.');
  const refused = await req('/dashboard/queues/mail', { cookie, form: { _csrf: csrfIn(page), maxRunning: '1' } });
  expect(refused.status).toBe(403);
  expect((await settings('mail')).maxRunning).toBe(4);
});

test('an admin deletes an empty queue from its page (typed name, form token, audited with the name); a busy one is refused saying why', async () => {
  t = await setup({ adminToken: ADMIN, readonlyToken: READONLY });
  await t.post('/api/v1/queues/mail/jobs', { payload: 1 }, admin);
  const cookie = await login(ADMIN);
  const page = await (await req('/dashboard/queues/mail', { cookie })).text();
  expect(page).toContain('action="/dashboard/queues/mail/delete"');
  const busy = await req('/dashboard/queues/mail/delete', { cookie, form: { _csrf: csrfIn(page), confirm: 'mail' } });
  expect(busy.status).toBe(409);
  expect(await busy.text()).toContain('queue mail still holds 1 pending and 0 running jobs');
  const [job] = (await t.get('/api/v1/jobs?queue=mail', admin)).json.jobs as { id: string }[];
  await t.post(`/api/v1/jobs/${job!.id}/cancel`, { reason: 'test' }, admin);
  // Without the typed name nothing happens; without a form token neither.
  expect((await req('/dashboard/queues/mail/delete', { cookie, form: { _csrf: await freshCsrf(cookie), confirm: 'mai', purge: 'on' } })).status).toBe(400);
  expect((await req('/dashboard/queues/mail/delete', { cookie, form: { confirm: 'mail', purge: 'on' } })).status).toBe(403);
  const viewer = await login(READONLY);
  expect(await (await req('/dashboard/queues/mail', { cookie: viewer })).text()).not.toContain('/delete"');
  expect((await req('/dashboard/queues/mail/delete', { cookie: viewer, form: { _csrf: await freshCsrf(viewer), confirm: 'mail', purge: 'on' } })).status).toBe(403);
  expect((await t.get('/api/v1/queues/mail', admin)).status).toBe(200);

  const csrf = await freshCsrf(cookie);
  const deleted = await req('/dashboard/queues/mail/delete', { cookie, form: { _csrf: csrf, confirm: 'mail', purge: 'on' } });
  expect(deleted.status).toBe(200);
  expect(await deleted.text()).toContain('Queue mail was deleted with 1 finished jobs.');
  expect((await t.get('/api/v1/queues/mail', admin)).status).toBe(404);
  const audit = (await t.get('/api/v1/audit?action=queue.delete', admin)).json.entries;
  expect(audit).toHaveLength(1);
  expect(audit[0]).toMatchObject({ action: 'queue.delete', actor: 'Ada', source: 'dashboard', queue: 'mail' });
});

test("an admin sets what a lost attempt leads to (onLost retry / hold) from the queue page; a bad value is named and not saved", async () => {
  t = await setup({ adminToken: ADMIN });
  await t.post('/api/v1/queues/mail/jobs', { payload: 1 }, admin);
  const cookie = await login(ADMIN);
  const page = await (await req('/dashboard/queues/mail', { cookie })).text();
  expect(page).toMatch(/<dd id="queue-on-lost">runs again \(onLost retry\)<\/dd>/);
  expect(page).toMatch(/<option value="retry" selected="">/);

  expect((await req('/dashboard/queues/mail', { cookie, form: { _csrf: csrfIn(page), onLost: 'hold' } })).status).toBe(303);
  expect((await settings('mail')).onLost).toBe('hold');
  const held = await (await req('/dashboard/queues/mail', { cookie })).text();
  expect(held).toMatch(/<dd id="queue-on-lost">is held for a person \(onLost hold\)<\/dd>/);
  expect(held).toMatch(/<option value="hold" selected="">/);

  const bad = await req('/dashboard/queues/mail', { cookie, form: { _csrf: await freshCsrf(cookie), onLost: 'maybe' } });
  expect(bad.status).toBe(400);
  expect(await bad.text()).toContain('onLost must be &#39;retry&#39; or &#39;hold&#39;, got &quot;maybe&quot;. Nothing was saved.');
  expect((await settings('mail')).onLost).toBe('hold');

  // Back to retry: the default, stored as no setting.
  expect((await req('/dashboard/queues/mail', { cookie, form: { _csrf: await freshCsrf(cookie), onLost: 'retry' } })).status).toBe(303);
  expect((await settings('mail')).onLost).toBe('retry');
});

test('the queue page says where its dead letters go and which fields have an index of their own', async () => {
  t = await setup({ adminToken: ADMIN });
  await t.post('/api/v1/queues/mail/jobs', { payload: { to: 'ada' } }, admin);
  const cookie = await login(ADMIN);
  const before = await (await req('/dashboard/queues/mail', { cookie })).text();
  expect(before).toContain('<dd id="queue-dead-letters">jobs that fail for good stay failed here (no dead-letter queue)</dd>');
  expect(before).toMatch(/<dd id="queue-indexed-fields">none \(set them with/);
  expect((await t.call('PATCH', '/api/v1/queues/mail/settings', { deadLetterQueue: 'mail-dead' }, admin)).status).toBe(200);
  expect((await t.call('PUT', '/api/v1/queues/mail/indexed-fields', { fields: ['payload.to'] }, admin)).status).toBe(200);
  const after = await (await req('/dashboard/queues/mail', { cookie })).text();
  expect(after).toContain('<dd id="queue-dead-letters">jobs that fail for good are listed in mail-dead</dd>');
  expect(after).toContain('<dd id="queue-indexed-fields">payload.to</dd>');
});
