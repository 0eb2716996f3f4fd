/**
 * Dashboard bulk actions (src/dashboard/bulk.tsx): the dry run and its capped
 * count, the typed confirmation and reason, the hard cap, requeue of expired
 * leases only, the audit trail, CSRF and read-only refusal.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { loadConfig } from '../../src/core/config.ts';
import { setup, type TestBed } from '../support/helpers.ts';
import { dashboardBrowser } from '../support/dashboard-browser.ts';

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
const login = (token = ADMIN) => browser.login(token);

async function dryRun(cookie: string, query: string) {
  const res = await req(`/dashboard/bulk?${query}`, { cookie });
  const html = await res.text();
  return {
    status: res.status,
    html,
    csrf: /name="_csrf" value="([^"]+)"/.exec(html)?.[1],
    expected: /name="expected" value="([^"]+)"/.exec(html)?.[1],
  };
}

async function statusOf(id: string): Promise<string> {
  return (await t.get(`/api/v1/jobs/${id}`, admin)).json.job.status;
}

async function statuses(ids: string[]): Promise<string[]> {
  return Promise.all(ids.map(statusOf));
}

async function eventCount(): Promise<number> {
  return Number((await t.client.execute('select count(*) as n from events')).rows[0]!.n);
}

/** `n` jobs in `queue`, cancelled through the API. */
async function cancelled(queue: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const j = await t.enqueue(queue, { payload: i });
    expect((await t.post(`/api/v1/jobs/${j.id}/cancel`, {}, admin)).status).toBe(200);
    ids.push(j.id);
  }
  return ids;
}

describe('bulk actions, admin', () => {
  test('dry run: the matching count and the cap, nothing changed; the jobs list links to it', async () => {
    t = await setup({ adminToken: ADMIN, bulkActionCap: 3 });
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push((await t.enqueue('q', { payload: i })).id);
    await t.enqueue('other', { payload: 'x' });
    const cookie = await login();
    const list = await (await req('/dashboard/jobs?queue=q&status=pending', { cookie })).text();
    expect(list).toContain('action="/dashboard/bulk"');
    expect(list).toContain('Cancel pending jobs in queue q');
    const before = await eventCount();
    const dry = await dryRun(cookie, 'queue=q&status=pending');
    expect(dry.status).toBe(200);
    expect(dry.html).toMatch(/5 matching pending jobs in queue q; at most 3 will be acted on, this time 3/);
    expect(dry.expected).toBe('3');
    expect(dry.html).toContain('Type 3 to confirm');
    expect(await statuses(ids)).toEqual(Array(5).fill('pending'));
    expect(await eventCount()).toBe(before);
    // Every queue, under the cap.
    const all = await dryRun(cookie, 'status=pending');
    expect(all.html).toMatch(/6 matching pending jobs in every queue; at most 3 will be acted on/);
    // One is one job, not "jobs".
    const one = await dryRun(cookie, 'queue=other&status=pending');
    expect(one.html).toMatch(/1 matching pending job in queue other; at most 3 will be acted on, this time 1/);
    // No bulk action for completed jobs; nothing to do for an empty filter.
    expect((await dryRun(cookie, 'queue=q&status=completed')).status).toBe(400);
    const none = await dryRun(cookie, 'queue=q&status=failed');
    expect(none.html).toContain('Nothing to do');
    expect(none.expected).toBeUndefined();
  });

  test('confirmation required: the typed count and a reason, or nothing changes; the cap is enforced', async () => {
    t = await setup({ adminToken: ADMIN, bulkActionCap: 3 });
    const ids = await cancelled('q', 5);
    const cookie = await login();
    const dry = await dryRun(cookie, 'queue=q&status=cancelled');
    expect(dry.expected).toBe('3');
    const base = { _csrf: dry.csrf!, queue: 'q', status: 'cancelled', expected: '3' };
    const before = await eventCount();
    for (const form of [
      {},
      { confirm: '4', reason: 'r' },
      { confirm: 'yes', reason: 'r' },
      { confirm: '3' },
      { confirm: '3', reason: '   ' },
      { confirm: '5', reason: 'r', expected: '5' }, // above the cap
      { confirm: '0', reason: 'r', expected: '0' },
    ] as Record<string, string>[]) {
      const res = await req('/dashboard/bulk', { cookie, form: { ...base, ...form } });
      expect(res.status, JSON.stringify(form)).toBe(400);
      expect(await res.text()).toContain('Nothing changed');
    }
    expect(await statuses(ids)).toEqual(Array(5).fill('cancelled'));
    expect(await eventCount()).toBe(before);

    const ok = await req('/dashboard/bulk', { cookie, form: { ...base, confirm: ' 3 ', reason: 'upstream fixed' } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toMatch(/3 jobs retried/);
    // The lowest ids first, at most the cap.
    expect(await statuses(ids)).toEqual(['pending', 'pending', 'pending', 'cancelled', 'cancelled']);

    // A typed count below the cap acts on at most that many.
    const dry2 = await dryRun(cookie, 'queue=q&status=cancelled');
    expect(dry2.html).toMatch(/2 matching cancelled jobs/);
    // A fresh form: the first one's token was used by the action above.
    const one = await req('/dashboard/bulk', { cookie, form: { ...base, _csrf: dry2.csrf!, expected: '1', confirm: '1', reason: 'one more' } });
    expect(await one.text()).toMatch(/1 job retried/);
    expect(await statuses(ids)).toEqual(['pending', 'pending', 'pending', 'pending', 'cancelled']);
  });

  test('retry failed jobs: each recorded with actor and reason', async () => {
    t = await setup({ adminToken: ADMIN });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await t.enqueue('q', { payload: i })).id);
    const claimed = await t.claim('q', 'w-1', { limit: 3 });
    for (const j of claimed) {
      const res = await t.post(`/api/v1/jobs/${j.id}/fail`, { workerId: 'w-1', lockToken: j.lockToken, error: 'boom', retryable: false });
      expect(res.status).toBe(200);
    }
    expect(await statuses(ids)).toEqual(['failed', 'failed', 'failed']);
    const cookie = await login();
    const dry = await dryRun(cookie, 'queue=q&status=failed');
    expect(dry.html).toMatch(/3 matching failed jobs in queue q; at most 100 will be acted on, this time 3/);
    const res = await req('/dashboard/bulk', {
      cookie,
      form: { _csrf: dry.csrf!, queue: 'q', status: 'failed', expected: '3', confirm: '3', reason: 'bug <b>fixed</b>' },
    });
    const html = await res.text();
    expect(res.status).toBe(200);
    for (const id of ids) expect(html).toContain(`href="/dashboard/jobs/${id}"`);
    for (const id of ids) {
      const { job, events } = (await t.get(`/api/v1/jobs/${id}`, admin)).json;
      expect(job).toMatchObject({ status: 'pending', failedAt: null });
      const retried = (events as { type: string; actor: string | null; reason: string | null }[]).filter((e) => e.type === 'retried_by_operator');
      expect(retried).toHaveLength(1);
      expect(retried[0]!.reason).toBe('bug <b>fixed</b>');
      expect(retried[0]!.actor).toBe('Ada');
    }
  });

  test('requeue takes only running jobs the reaper would take now, never a live lease', async () => {
    t = await setup({ adminToken: ADMIN });
    const expired: string[] = [];
    for (let i = 0; i < 2; i++) expired.push((await t.enqueue('q', { payload: i })).id);
    await t.claim('q', 'w-dead', { limit: 2 });
    // Past lease + grace, and w-dead has not been seen since: the reaper would take them now.
    t.clock.advance(t.config.leaseMs + t.config.graceMs + 1);
    const live = (await t.enqueue('q', { payload: 'live' })).id;
    await t.claim('q', 'w-live', { limit: 1 });
    expect(await statuses([...expired, live])).toEqual(['running', 'running', 'running']);

    const cookie = await login();
    const dry = await dryRun(cookie, 'queue=q&status=running');
    expect(dry.html).toMatch(/2 matching running jobs the reaper would take back now/);
    // Even a confirmed count above the expired ones takes only those.
    const res = await req('/dashboard/bulk', {
      cookie,
      form: { _csrf: dry.csrf!, queue: 'q', status: 'running', expected: '3', confirm: '3', reason: 'host died' },
    });
    expect(await res.text()).toMatch(/2 jobs requeued.*3 confirmed/s);
    expect(await statuses([...expired, live])).toEqual(['pending', 'pending', 'running']);
    const { job, events } = (await t.get(`/api/v1/jobs/${expired[0]}`, admin)).json;
    expect(job).toMatchObject({ lostAttempts: 1, lockedBy: null });
    expect(events.find((e: { type: string }) => e.type === 'requeued_by_operator')).toMatchObject({ reason: 'host died' });
  });

  test('CSRF refusal changes nothing', async () => {
    t = await setup({ adminToken: ADMIN });
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await t.enqueue('q', { payload: i })).id);
    const cookie = await login();
    const other = await login();
    const otherCsrf = (await dryRun(other, 'queue=q&status=pending')).csrf!;
    const before = await eventCount();
    const form = { queue: 'q', status: 'pending', expected: '3', confirm: '3', reason: 'r' };
    for (const csrf of [undefined, '', 'x'.repeat(43), otherCsrf]) {
      const res = await req('/dashboard/bulk', { cookie, form: csrf === undefined ? form : { ...form, _csrf: csrf } });
      expect(res.status).toBe(403);
    }
    expect((await req('/dashboard/bulk', { form: { ...form, _csrf: otherCsrf } })).status).toBe(401);
    expect(await statuses(ids)).toEqual(['pending', 'pending', 'pending']);
    expect(await eventCount()).toBe(before);
  });
});

describe('bulk actions, read-only login', () => {
  test('403 for the dry run and the action; nothing changes', async () => {
    t = await setup({ adminToken: ADMIN, readonlyToken: READONLY });
    const j = await t.enqueue('q', { payload: 1 });
    const cookie = await login(READONLY);
    expect((await req('/dashboard/bulk?queue=q&status=pending', { cookie })).status).toBe(403);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await (await req('/dashboard', { cookie })).text())![1]!;
    const before = await eventCount();
    const res = await req('/dashboard/bulk', { cookie, form: { _csrf: csrf, queue: 'q', status: 'pending', expected: '1', confirm: '1', reason: 'r' } });
    expect(res.status).toBe(403);
    expect(await statusOf(j.id)).toBe('pending');
    expect(await eventCount()).toBe(before);
  });

  test('the jobs list offers no way into a bulk action', async () => {
    t = await setup({ adminToken: ADMIN, readonlyToken: READONLY });
    await t.enqueue('q', { payload: 1 });
    const cookie = await login(READONLY);
    for (const status of ['pending', 'running', 'failed', 'cancelled']) {
      const res = await req(`/dashboard/jobs?queue=q&status=${status}`, { cookie });
      expect(res.status).toBe(200);
      expect(await res.text(), status).not.toContain('/dashboard/bulk');
    }
  });
});

test('LEASEHOLD_BULK_ACTION_CAP / --bulk-action-cap: default 100, a positive whole number', () => {
  t = { errors: [], close() {} } as unknown as TestBed;
  expect(loadConfig({}).config.bulkActionCap).toBe(100);
  expect(loadConfig({ LEASEHOLD_BULK_ACTION_CAP: '25' }).config.bulkActionCap).toBe(25);
  expect(loadConfig({ LEASEHOLD_BULK_ACTION_CAP: '25' }, ['--bulk-action-cap', '7']).config.bulkActionCap).toBe(7);
  expect(() => loadConfig({ LEASEHOLD_BULK_ACTION_CAP: '0' })).toThrow(/LEASEHOLD_BULK_ACTION_CAP/);
  expect(() => loadConfig({ LEASEHOLD_BULK_ACTION_CAP: 'lots' })).toThrow(/LEASEHOLD_BULK_ACTION_CAP/);
});
