/**
 * The dashboard's canary requeue (src/dashboard/canary-page.tsx): the start
 * form takes the first step at once and shows the run; its failures stop it
 * by itself on the next pass, and the page says why; a watching run is
 * cancelled from its page; a form sent twice starts nothing more; bad input
 * is a 400 that names the field and starts nothing.
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

async function hung(n: number) {
  for (let i = 0; i < n; i++) await t.post('/api/v1/queues/q/jobs', { payload: i }, admin);
  return (await t.post('/api/v1/queues/q/claim', { workerId: 'hung', limit: n }, admin)).json.jobs as { id: string }[];
}

test('start from the form, the first failures stop the run by itself, and its page says why', async () => {
  t = await setup({ adminToken: ADMIN });
  await hung(4);
  const cookie = await login();
  const form = { _csrf: await csrfOf(cookie, '/dashboard/canary'), queue: 'q', first: '1', growth: '2', windowSeconds: '60', maxFailures: '0', force: 'on', reason: 'hung workers' };
  const started = await req('/dashboard/canary', { cookie, form });
  expect(started.status).toBe(303);
  const where = started.headers.get('location')!;
  expect(where).toMatch(/^\/dashboard\/canary\/\d+$/);
  // Sent again: its one-time token is used, nothing more starts.
  expect((await req('/dashboard/canary', { cookie, form })).status).toBe(409);
  expect((await t.get('/api/v1/canary', admin)).json.runs).toHaveLength(1);

  const page = await (await req(where, { cookie })).text();
  expect(page).toContain('Step 1 is watched until');
  expect(page).toContain('1 of 4 requeued, 3 left.');
  expect(page).toContain('Cancel the run');

  const [job] = (await t.post('/api/v1/queues/q/claim', { workerId: 'healthy' }, admin)).json.jobs;
  await t.post(`/api/v1/jobs/${job.id}/fail`, { workerId: 'healthy', lockToken: job.lockToken, error: 'still down' }, admin);
  await t.engine.maintenancePass(t.clock.now());
  const after = await (await req(where, { cookie })).text();
  expect(after).toContain("Stopped by itself after step 1 (failures): 1 failed attempt of step 1&#39;s 1 job since it was requeued (at most 0 allowed).");
  expect(after).not.toContain('Cancel the run');
});

test('cancel from the run page; bad input names the field and starts nothing', async () => {
  t = await setup({ adminToken: ADMIN });
  await hung(3);
  const cookie = await login();
  for (const [fields, message] of [
    [{ queue: 'q', first: '0', reason: 'r' }, 'first: a whole number from 1 to 1000'],
    [{ queue: 'q', reason: 'r' }, 'first: how many jobs the first step requeues'],
    [{ queue: 'q', first: '1', windowSeconds: '0', reason: 'r' }, 'windowSeconds: a whole number from 1 to 86400'],
    [{ queue: 'q', first: '1' }, 'reason: a canary requeue needs a reason'],
    [{ queue: '', first: '1', reason: 'r' }, 'queue: the name of the queue'],
  ] as const) {
    const res = await req('/dashboard/canary', { cookie, form: { _csrf: await csrfOf(cookie, '/dashboard/canary'), ...fields } });
    expect(res.status, JSON.stringify(fields)).toBe(400);
    expect(await res.text()).toContain(message);
  }
  expect((await t.get('/api/v1/canary', admin)).json.runs).toEqual([]);

  const started = await req('/dashboard/canary', { cookie, form: { _csrf: await csrfOf(cookie, '/dashboard/canary'), queue: 'q', first: '1', force: 'on', reason: 'r' } });
  const where = started.headers.get('location')!;
  const cancelled = await req(`${where}/cancel`, { cookie, form: { _csrf: await csrfOf(cookie, where), reason: 'found the cause' } });
  expect(cancelled.status).toBe(303);
  expect(await (await req(where, { cookie })).text()).toContain('Cancelled after step 1: found the cause.');
  expect(await (await req('/dashboard/canary', { cookie })).text()).toMatch(/#\d+<\/a><\/td><td>q<\/td><td>cancelled/);
});

test('a start with nothing to take shows why on a 409 page and starts no run', async () => {
  t = await setup({ adminToken: ADMIN });
  const cookie = await login();
  const form = { _csrf: await csrfOf(cookie, '/dashboard/canary'), queue: 'q', first: '1', force: 'on', reason: 'hung workers' };
  const res = await req('/dashboard/canary', { cookie, form });
  expect(res.status).toBe(409);
  expect(await res.text()).toContain('queue q has no running job: nothing to requeue, no canary run started');
  expect((await t.get('/api/v1/canary', admin)).json.runs).toEqual([]);
});
