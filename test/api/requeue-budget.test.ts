/**
 * A requeue without force never goes past the attempt budget: it does what
 * the reaper would do now (decideReap's action, src/core/reaper.ts), so a job
 * whose attempts or lost-attempt budget are spent is failed for good with the
 * reaper's reason, not put back for an "attempt 2 of 1". Single and bulk, API
 * and dashboard; both say which before the operator confirms (the API's and
 * the CLI's dry run, the dashboard's verdict). Force still puts it back, and
 * says it went past the budget.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';

const api = '/api/v1';
let t: TestBed;
afterEach(() => {
  expect(t.errors).toEqual([]);
  t.close();
});

/** Jobs of queue q claimed by a worker that is gone, past lease + grace and its liveness: the reaper would take each now. */
async function abandoned(jobs: Record<string, unknown>[]) {
  const ids: string[] = [];
  for (const job of jobs) ids.push((await t.enqueue('q', { payload: null, ...job })).id);
  const claimed = await t.claim('q', 'gone', { limit: jobs.length });
  expect(claimed.map((c) => c.id)).toEqual(ids);
  t.clock.advance(t.config.leaseMs + t.config.graceMs + t.config.workerAliveMs + 1_000);
  return ids;
}
const jobOf = async (id: string) => (await t.get(`${api}/jobs/${id}`)).json;

describe('POST /api/v1/jobs/:id/requeue without force does what the reaper would do', () => {
  test('attempts spent (maxAttempts 1): failed for good (attempts_exhausted), never claimed again as "attempt 2 of 1"', async () => {
    t = await setup();
    const [id] = await abandoned([{ maxAttempts: 1 }]);
    // The dry run says so first, and changes nothing.
    const dry = await t.post(`${api}/jobs/${id}/requeue`, { dryRun: true });
    expect(dry.status).toBe(200);
    expect(dry.json).toEqual({
      dryRun: true,
      requeue: {
        action: 'fail',
        reason: 'attempts_exhausted',
        why: expect.stringMatching(/^lease expired on the last attempt \(1 of 1\): lease expired [\d.]+ s ago \(grace 10 s\) and owner gone was last seen [\d.]+ s ago$/),
        forced: false,
        overrodeHold: null,
        beyondBudget: null,
        // onLost 'retry' (the default): a requeue that would run it again, not hold it.
        held: false,
      },
    });
    expect((await jobOf(id!)).job.status).toBe('running');

    const r = await t.post(`${api}/jobs/${id}/requeue`, { reason: 'worker host died' });
    expect(r.status).toBe(200);
    expect(r.json.job).toMatchObject({ status: 'failed', attempt: 1, maxAttempts: 1, lostAttempts: 1, lockedBy: null, lastError: expect.stringContaining('lease expired on the last attempt (1 of 1)') });
    expect(r.json.requeue).toMatchObject({ action: 'fail', reason: 'attempts_exhausted', forced: false });
    // Recorded as the reaper's take would be, with the operator as its actor.
    expect((await jobOf(id!)).events.at(-1)).toMatchObject({ type: 'reaped', reason: 'attempts_exhausted', from: 'running', to: 'failed', actor: 'admin' });
    expect(await t.claim('q', 'next')).toEqual([]);
  });

  test("lost-attempt budget spent: failed for good (lost_too_many_times), with the reaper's message", async () => {
    t = await setup();
    expect((await t.call('PATCH', `${api}/queues/q/settings`, { maxLostAttempts: 1 })).status).toBe(200);
    const [id] = await abandoned([{ maxAttempts: 5 }]);
    const r = await t.post(`${api}/jobs/${id}/requeue`, {});
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(r.json.job).toMatchObject({ status: 'failed', lastError: expect.stringContaining('lost its worker 1 times (limit 1)') });
    expect(r.json.requeue).toMatchObject({ action: 'fail', reason: 'lost_too_many_times' });
  });

  test('attempts left: requeued as before; a refusal is still a 409 with the reason', async () => {
    t = await setup();
    const [spare, live] = await abandoned([{ maxAttempts: 2 }, {}]);
    const r = await t.post(`${api}/jobs/${spare}/requeue`, {});
    expect(r.json).toMatchObject({ job: { status: 'pending' }, requeue: { action: 'requeue', reason: 'reaped_due_to_expired_lease' } });
    await t.post(`${api}/workers/beat`, { workerId: 'gone' });
    const refused = await t.post(`${api}/jobs/${live}/requeue`, { dryRun: true });
    expect(refused.status).toBe(409);
    expect(refused.json.error.message).toContain('owner gone was seen 0.0 s ago');
  });

  test('force puts it back past the budget, and the answer, its event and the audit say so', async () => {
    t = await setup();
    const [id] = await abandoned([{ maxAttempts: 1 }]);
    const dry = await t.post(`${api}/jobs/${id}/requeue`, { force: true, dryRun: true });
    expect(dry.json.requeue).toMatchObject({ action: 'requeue', forced: true, beyondBudget: 'its attempts were spent (1 of 1): the next claim is attempt 2 of 1' });
    const r = await t.post(`${api}/jobs/${id}/requeue`, { force: true, reason: 'one more try after the fix' });
    expect(r.status).toBe(200);
    expect(r.json.job.status).toBe('pending');
    expect(r.json.requeue).toMatchObject({ forced: true, why: 'the reaper would fail it for good now', beyondBudget: expect.stringContaining('attempt 2 of 1') });
    expect((await jobOf(id!)).events.at(-1)).toMatchObject({ type: 'force_requeued_by_operator', message: expect.stringContaining("went past the job's budget") });
    expect((await t.get(`${api}/audit?action=job.force_requeue`)).json.entries[0].after).toMatchObject({ status: 'pending', overrode: expect.stringContaining('attempt 2 of 1') });
    expect((await t.claim('q', 'next'))[0]).toMatchObject({ id, attempt: 2 });
  });
});

describe('bulk requeue without force does, per job, what the reaper would do', () => {
  test('the dry run says which jobs would fail for good; the action fails those and requeues the rest', async () => {
    t = await setup();
    const [spent, spare] = await abandoned([{ maxAttempts: 1 }, { maxAttempts: 3 }]);
    const dry = await t.post(`${api}/queues/q/bulk`, { action: 'requeue', dryRun: true });
    expect(dry.json.jobs.map((j: { id: string; requeue: { action: string; reason: string } }) => [j.id, j.requeue.action, j.requeue.reason])).toEqual([
      [spent, 'fail', 'attempts_exhausted'],
      [spare, 'requeue', 'reaped_due_to_expired_lease'],
    ]);
    const acted = await t.post(`${api}/queues/q/bulk`, { action: 'requeue', reason: 'cleanup' });
    expect(acted.json).toMatchObject({ changed: 2, ids: [spent, spare] });
    expect((await jobOf(spent!)).job).toMatchObject({ status: 'failed', lastError: expect.stringContaining('(1 of 1)') });
    expect((await jobOf(spare!)).job).toMatchObject({ status: 'pending' });
    const [entry] = (await t.get(`${api}/audit?action=jobs.bulk`)).json.entries;
    expect(entry.after).toMatchObject({ changed: 2, failed: 1 });
    expect((await t.claim('q', 'next', { limit: 5 })).map((c) => [c.id, c.attempt])).toEqual([[spare, 2]]);
  });
});

describe('the dashboard says which before the operator confirms, and does it', () => {
  const ADMIN = 'a'.repeat(24);
  const req = (path: string, init: { cookie?: string; form?: Record<string, string> } = {}) =>
    t.app.request(path, {
      method: init.form ? 'POST' : 'GET',
      headers: { ...(init.cookie ? { cookie: init.cookie } : {}), ...(init.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
      body: init.form ? new URLSearchParams(init.form).toString() : undefined,
      redirect: 'manual',
    });
  async function login() {
    const res = await req('/dashboard/login', { form: { name: 'Ada', token: ADMIN, next: '/dashboard' } });
    return `leasehold_session=${/leasehold_session=([^;]*)/.exec(res.headers.get('set-cookie') ?? '')![1]}`;
  }
  const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)![1]!;
  const admin = { authorization: `Bearer ${ADMIN}` };

  test('job page and zombies page: the verdict and the button say "fail for good"; submitting fails it', async () => {
    t = await setup({ adminToken: ADMIN });
    const [id, other] = await abandoned([{ maxAttempts: 1 }, { maxAttempts: 1 }]);
    const cookie = await login();
    const page = await (await req(`/dashboard/jobs/${id}`, { cookie })).text();
    expect(page).toMatch(/Requeue now: fail it for good, as the reaper would now \(attempts_exhausted\): lease expired on the last attempt \(1 of 1\)/);
    expect(page).toContain('Fail for good (as the reaper would)');
    expect(page).toContain('Force requeue now: requeue it by force (it may run twice; the reaper would fail it for good now), past its budget: its attempts were spent (1 of 1): the next claim is attempt 2 of 1');
    const zombies = await (await req('/dashboard/zombies', { cookie })).text();
    expect(zombies).toMatch(new RegExp(`<tr id="zombie-${other}">.*<button type="submit">Fail for good</button>`, 's'));

    const res = await req(`/dashboard/jobs/${id}/requeue`, { cookie, form: { _csrf: csrfOf(page), reason: 'host died' } });
    expect(res.headers.get('location')).toBe(`/dashboard/jobs/${id}?notice=failed_as_reaper_would`);
    expect((await t.get(`${api}/jobs/${id}`, admin)).json.job.status).toBe('failed');
    expect(await (await req(`/dashboard/jobs/${id}?notice=failed_as_reaper_would`, { cookie })).text()).toContain('The job was failed for good, as the reaper would have');
  });

  test('bulk: the dry run counts the jobs it would fail for good and says why for each; the action does it', async () => {
    t = await setup({ adminToken: ADMIN });
    const [spent, spare] = await abandoned([{ maxAttempts: 1 }, { maxAttempts: 3 }]);
    const cookie = await login();
    const dry = await (await req('/dashboard/bulk?queue=q&status=running', { cookie })).text();
    expect(dry).toContain('1 of the 2 will be failed for good, as the reaper would: their attempts (or lost-attempt budget) are spent.');
    expect(dry).toMatch(new RegExp(`<tr id="bulk-job-${spent}">.*fail it for good, as the reaper would now \\(attempts_exhausted\\)`, 's'));
    const res = await req('/dashboard/bulk', { cookie, form: { _csrf: csrfOf(dry), queue: 'q', status: 'running', expected: '2', confirm: '2', reason: 'cleanup' } });
    expect(await res.text()).toContain('2 jobs taken back as the reaper would: 1 requeued, 1 failed for good (their attempts were spent)');
    expect((await t.get(`${api}/jobs/${spent}`, admin)).json.job.status).toBe('failed');
    expect((await t.get(`${api}/jobs/${spare}`, admin)).json.job.status).toBe('pending');
  });
});
