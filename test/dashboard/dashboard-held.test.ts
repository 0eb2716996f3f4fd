/**
 * Held jobs (onLost 'hold') on the dashboard, at the app.request level: the
 * zombies page's "Held for a person" list, the job page's lost attempt (worker,
 * last heartbeat, checkpoint, effects) and its release / complete / fail
 * forms, a reason required, each audited and answered with a notice.
 */
import { afterEach, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';
import { dashboardBrowser } from '../support/dashboard-browser.ts';

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
const { csrfOf } = browser;
const api = (path: string) => `/api/v1${path}`;

/** A job of a hold queue, claimed by w1, checkpointed, an effect started, then taken by a forced requeue: held. */
async function heldJob(): Promise<string> {
  await t.call('PATCH', api('/queues/pay/settings'), { onLost: 'hold' }, admin);
  const e = await t.call('POST', api('/queues/pay/jobs'), { payload: {} }, admin);
  const id = e.json.job.id as string;
  const [c] = (await t.call('POST', api('/queues/pay/claim'), { workerId: 'w1' }, admin)).json.jobs;
  await t.call('POST', api(`/jobs/${id}/checkpoint`), { workerId: 'w1', lockToken: c.lockToken, checkpoint: { page: 4 } }, admin);
  await t.call('POST', api(`/jobs/${id}/effects/start`), { workerId: 'w1', lockToken: c.lockToken, key: 'email' }, admin);
  expect((await t.call('POST', api(`/jobs/${id}/requeue`), { force: true, reason: 'host gone' }, admin)).json.job.heldAt).not.toBeNull();
  return id;
}

test('the zombies page lists held jobs; the job page shows the lost attempt and its effects; release needs a reason, then runs it again', async () => {
  t = await setup({ adminToken: ADMIN });
  const id = await heldJob();
  const cookie = await login();
  const zombies = await (await req('/dashboard/zombies', { cookie })).text();
  expect(zombies).toContain('Held for a person');
  expect(zombies).toContain(`<a href="/dashboard/jobs/${id}">${id}</a>`);
  const page = await (await req(`/dashboard/jobs/${id}`, { cookie })).text();
  expect(page).toContain('id="lost-attempt"');
  expect(page).toContain('w1');
  expect(page).toContain('{&quot;page&quot;:4}');
  expect(page).toContain('started, never done');
  expect(page).toContain(`/dashboard/jobs/${id}/held/release`);
  const noReason = await req(`/dashboard/jobs/${id}/held/release`, { cookie, form: { _csrf: await csrfOf(cookie, `/dashboard/jobs/${id}`), reason: ' ' } });
  expect(noReason.headers.get('location')).toBe(`/dashboard/jobs/${id}?notice=held_reason_required`);
  expect((await t.get(api(`/jobs/${id}`), admin)).json.job.heldAt).not.toBeNull();
  const released = await req(`/dashboard/jobs/${id}/held/release`, { cookie, form: { _csrf: await csrfOf(cookie, `/dashboard/jobs/${id}`), reason: 'no email went out' } });
  expect(released.headers.get('location')).toBe(`/dashboard/jobs/${id}?notice=held_released`);
  const after = (await t.get(api(`/jobs/${id}`), admin)).json;
  expect(after.job).toMatchObject({ status: 'pending', heldAt: null });
  expect(after.events.at(-1)).toMatchObject({ type: 'released_by_operator', actor: 'Ada', reason: 'no email went out' });
  const audit = (await t.get(api('/audit?action=job.release_held'), admin)).json.entries;
  expect(audit).toMatchObject([{ action: 'job.release_held', source: 'dashboard', reason: 'no email went out' }]);
});

test('complete by hand with a JSON result, and a result that is not JSON changes nothing', async () => {
  t = await setup({ adminToken: ADMIN });
  const id = await heldJob();
  const cookie = await login();
  const bad = await req(`/dashboard/jobs/${id}/held/complete`, { cookie, form: { _csrf: await csrfOf(cookie, `/dashboard/jobs/${id}`), reason: 'sent', result: '{nope' } });
  expect(bad.headers.get('location')).toBe(`/dashboard/jobs/${id}?notice=result_not_json`);
  const done = await req(`/dashboard/jobs/${id}/held/complete`, { cookie, form: { _csrf: await csrfOf(cookie, `/dashboard/jobs/${id}`), reason: 'sent, per the mail log', result: '{"sent":true}' } });
  expect(done.headers.get('location')).toBe(`/dashboard/jobs/${id}?notice=held_completed`);
  expect((await t.get(api(`/jobs/${id}`), admin)).json.job).toMatchObject({ status: 'completed', result: { sent: true } });
});
