/**
 * The dashboard's dead letters (src/dashboard/dead-letters-page.tsx): the
 * list of dead-letter queues; a redrive's dry run shows the jobs and changes
 * nothing; the confirmed redrive sends them back to their queues, audited
 * with the operator's name and reason; a form sent twice moves nothing
 * more; a read-only session is refused; bad input is a 400 naming the field.
 */
import { afterEach, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';
import { dashboardBrowser } from '../support/dashboard-browser.ts';

const ADMIN = 'a'.repeat(24);
const READER = 'r'.repeat(24);
const admin = { authorization: `Bearer ${ADMIN}` };

let t: TestBed;
afterEach(() => {
  expect(t.errors).toEqual([]);
  t.close();
});

const browser = dashboardBrowser(() => t.app);
const { req } = browser;
const login = (name: string, token: string) => browser.login(token, name);
const { csrfOf } = browser;

/** `n` jobs of `queue` (dead-letter queue `dead`) that failed for good, each with `error`. */
async function deadLetters(queue: string, n: number, error = 'smtp refused'): Promise<string[]> {
  expect((await t.call('PATCH', `/api/v1/queues/${queue}/settings`, { deadLetterQueue: 'dead' }, admin)).status).toBe(200);
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await t.post(`/api/v1/queues/${queue}/jobs`, { payload: { i }, maxAttempts: 1 }, admin)).json.job.id);
  const { jobs } = (await t.post(`/api/v1/queues/${queue}/claim`, { workerId: 'w1', limit: n }, admin)).json;
  for (const j of jobs) await t.post(`/api/v1/jobs/${j.id}/fail`, { workerId: 'w1', lockToken: j.lockToken, error }, admin);
  return ids;
}

const statusOf = async (id: string) => (await t.get(`/api/v1/jobs/${id}`, admin)).json.job as { status: string; queue: string; deadLetterQueue: string | null };

test('the list, a dry run that changes nothing, the redrive (audited with name and reason), and the same form again moving nothing more', async () => {
  t = await setup({ adminToken: ADMIN });
  const mail = await deadLetters('mail', 2, '<b>refused</b>');
  const sms = await deadLetters('sms', 1);
  const cookie = await login('Ada', ADMIN);

  const list = await (await req('/dashboard/dead-letters', { cookie })).text();
  expect(list).toContain('<a href="/dashboard/dead-letters" class="active" aria-current="page">Dead letters</a>');
  expect(list).toMatch(/<tr id="dead-letters-dead"><td>dead<\/td><td>3<\/td>/);
  expect(list).toContain('href="/dashboard/dead-letters/redrive?queue=dead"');
  expect(list).toContain('href="/dashboard/dead-letters/redrive?queue=dead&amp;from=sms"');

  const dry = await req('/dashboard/dead-letters/redrive?queue=dead', { cookie });
  expect(dry.status).toBe(200);
  const dryHtml = await dry.text();
  expect(dryHtml).toContain('3 dead letters in dead; at most 100 go back at once, this time 3. Nothing has changed yet. All 3 are listed below.');
  for (const id of [...mail, ...sms]) expect(dryHtml).toContain(`id="redrive-job-${id}"`);
  expect(dryHtml).toContain('failed (attempts_exhausted)');
  // The error text is escaped, never markup.
  expect(dryHtml).toContain('&lt;b&gt;refused&lt;/b&gt;');
  expect(dryHtml).not.toContain('<b>refused</b>');
  for (const id of [...mail, ...sms]) expect(await statusOf(id)).toMatchObject({ status: 'failed', deadLetterQueue: 'dead' });

  // Narrowed to one queue.
  expect(await (await req('/dashboard/dead-letters/redrive?queue=dead&from=sms', { cookie })).text()).toContain('1 dead letter in dead from queue sms');

  const form = { _csrf: await csrfOf(cookie, '/dashboard/dead-letters/redrive?queue=dead&batch=2'), queue: 'dead', expected: '2', confirm: '2', reason: 'smtp fixed' };
  const done = await req('/dashboard/dead-letters/redrive', { cookie, form });
  expect(done.status).toBe(200);
  expect(await done.text()).toContain('2 dead letters sent back (2 to mail), pending now with fresh attempts.');
  for (const id of mail) expect(await statusOf(id)).toMatchObject({ status: 'pending', queue: 'mail', deadLetterQueue: null });
  expect(await statusOf(sms[0]!)).toMatchObject({ status: 'failed', deadLetterQueue: 'dead' });
  const entries = (await t.get('/api/v1/audit?action=jobs.bulk', admin)).json.entries;
  expect(entries).toHaveLength(1);
  expect(entries[0]).toMatchObject({ actor: 'Ada', role: 'admin', source: 'dashboard', queue: 'dead', reason: 'smtp fixed', after: { redrive: 'dead', limit: 2, changed: 2 } });
  const events = (await t.get(`/api/v1/jobs/${mail[0]}`, admin)).json.events;
  expect(events.at(-1)).toMatchObject({ type: 'redriven', actor: 'Ada', reason: 'smtp fixed' });

  // The same form again (its one-time token used): 409, the last dead letter stays dead, no second audit entry.
  const again = await req('/dashboard/dead-letters/redrive', { cookie, form });
  expect(again.status).toBe(409);
  expect(await again.text()).toContain('already submitted');
  expect(await statusOf(sms[0]!)).toMatchObject({ status: 'failed', deadLetterQueue: 'dead' });
  expect((await t.get('/api/v1/audit?action=jobs.bulk', admin)).json.entries).toHaveLength(1);
});

test('a read-only session sees the list but no redrive, and is refused the dry run and the redrive', async () => {
  t = await setup({ adminToken: ADMIN, readonlyToken: READER });
  const [id] = await deadLetters('mail', 1);
  const cookie = await login('Rita', READER);
  const list = await req('/dashboard/dead-letters', { cookie });
  expect(list.status).toBe(200);
  const html = await list.text();
  expect(html).toMatch(/<tr id="dead-letters-dead"><td>dead<\/td><td>1<\/td>/);
  expect(html).not.toContain('/dashboard/dead-letters/redrive');
  const dry = await req('/dashboard/dead-letters/redrive?queue=dead', { cookie });
  expect(dry.status).toBe(403);
  expect(await dry.text()).toContain('read-only');
  // Its session's CSRF token is valid (the logout form carries it), yet the redrive is refused.
  const csrf = await csrfOf(cookie, '/dashboard/dead-letters');
  const posted = await req('/dashboard/dead-letters/redrive', { cookie, form: { _csrf: csrf, queue: 'dead', expected: '1', confirm: '1', reason: 'read-only' } });
  expect(posted.status).toBe(403);
  expect(await statusOf(id!)).toMatchObject({ status: 'failed', deadLetterQueue: 'dead' });
  expect((await t.get('/api/v1/audit?action=jobs.bulk', admin)).json.entries).toEqual([]);
});

test('bad input is a 400 naming the field, and moves nothing', async () => {
  t = await setup({ adminToken: ADMIN });
  const [id] = await deadLetters('mail', 1);
  const cookie = await login('Ada', ADMIN);
  for (const [path, message] of [
    ['/dashboard/dead-letters/redrive', 'queue: the dead-letter queue'],
    ['/dashboard/dead-letters/redrive?queue=has%20space', 'queue: a queue name'],
    ['/dashboard/dead-letters/redrive?queue=dead&from=%3Cx%3E', 'from: a queue name'],
    ['/dashboard/dead-letters/redrive?queue=dead&batch=0', 'batch: a whole number from 1 to the cap (100)'],
    ['/dashboard/dead-letters/redrive?queue=dead&batch=101', 'batch: a whole number from 1 to the cap (100)'],
  ] as const) {
    const res = await req(path, { cookie });
    expect(res.status, path).toBe(400);
    const text = await res.text();
    expect(text, path).toContain(message);
    expect(text, path).not.toContain('<x>');
  }
  const base = { queue: 'dead', expected: '1', confirm: '1', reason: 'smtp fixed' };
  for (const [fields, message] of [
    [{ ...base, reason: '' }, 'reason: a redrive needs a reason (kept in the audit trail)'],
    [{ ...base, reason: '   ' }, 'reason: a redrive needs a reason'],
    [{ ...base, confirm: '2' }, 'confirm: type the number shown (1) exactly'],
    [{ ...base, expected: '0', confirm: '0' }, 'expected: the count must be between 1 and the cap (100)'],
    [{ ...base, queue: '' }, 'queue: the dead-letter queue'],
    [{ ...base, from: 'no way' }, 'from: a queue name'],
  ] as const) {
    const res = await req('/dashboard/dead-letters/redrive', { cookie, form: { _csrf: await csrfOf(cookie, '/dashboard/dead-letters'), ...fields } });
    expect(res.status, JSON.stringify(fields)).toBe(400);
    expect(await res.text(), JSON.stringify(fields)).toContain(message);
  }
  expect(await statusOf(id!)).toMatchObject({ status: 'failed', deadLetterQueue: 'dead' });
  expect((await t.get('/api/v1/audit?action=jobs.bulk', admin)).json.entries).toEqual([]);
});
