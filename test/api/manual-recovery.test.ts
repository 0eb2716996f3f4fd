/**
 * Manual recovery follows the same caution as the reaper.
 * A requeue without force (API, dashboard single and bulk) takes a running
 * job only when the reaper itself would take it now; otherwise 409 conflict
 * saying why, and nothing changes. Force takes any running job, needs a
 * reason, voids the old token, and its event says it was forced.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { decideReap } from '../../src/core/reaper.ts';
import { defaultConfig } from '../../src/core/config.ts';
import { jobRequeueIfReaperWould } from '../../src/db/store/requeue.ts';
import { setup, type TestBed } from '../support/helpers.ts';

const api = '/api/v1';
let t: TestBed;
afterEach(() => {
  expect(t.errors).toEqual([]);
  t.close();
});

// lease 30 s, grace 10 s, a worker counts as alive for 15 s after it was seen, deferral up to 30 s.
const rules = { leaseMs: 30_000, graceMs: 10_000, workerAliveMs: 15_000, maxReapDeferMs: 30_000 };

async function running(workerId = 'w1', queue = 'q') {
  const e = await t.enqueue(queue);
  const [c] = await t.claim(queue, workerId);
  expect(c!.id).toBe(e.id);
  return { id: e.id, lockToken: c!.lockToken };
}
const jobOf = async (id: string) => (await t.get(`${api}/jobs/${id}`)).json;
const requeue = (id: string, body: Record<string, unknown> = {}) => t.post(`${api}/jobs/${id}/requeue`, body);
const beat = (workerId: string) => t.post(`${api}/workers/beat`, { workerId });

describe('POST /api/v1/jobs/:id/requeue without force', () => {
  test('inside the grace: 409 conflict saying so, and the job is unchanged', async () => {
    t = await setup(rules);
    const j = await running();
    t.clock.advance(31_300); // expired 1.3 s ago
    const before = await jobOf(j.id);
    const r = await requeue(j.id, { reason: 'looks stuck' });
    expect(r.status).toBe(409);
    expect(r.json.error.code).toBe('conflict');
    expect(r.json.error.message).toContain('lease expired 1.3 s ago, inside the 10 s grace');
    expect(r.json.error).toMatchObject({ status: 'running', why: 'lease expired 1.3 s ago, inside the 10 s grace' });
    expect(await jobOf(j.id)).toEqual(before);
    // The owner's token still works.
    expect((await t.post(`${api}/jobs/${j.id}/heartbeat`, { workerId: 'w1', lockToken: j.lockToken })).status).toBe(200);
  });

  test('past the grace while the owner still beats: 409 naming the owner and when it was seen', async () => {
    t = await setup(rules);
    const j = await running('w1');
    t.clock.advance(40_600); // lease + grace passed 0.6 s ago
    await beat('w1');
    t.clock.advance(400);
    const before = await jobOf(j.id);
    const r = await requeue(j.id);
    expect(r.status).toBe(409);
    expect(r.json.error.message).toContain('owner w1 was seen 0.4 s ago');
    expect(await jobOf(j.id)).toEqual(before);
  });

  test('when the reaper would take the job now: 200, requeued, the old token is refused', async () => {
    t = await setup(rules);
    const j = await running('w1');
    t.clock.advance(40_001); // lease + grace passed; w1 last seen 40 s ago
    const r = await requeue(j.id, { reason: 'host died' });
    expect(r.status).toBe(200);
    expect(r.json.job).toMatchObject({ status: 'pending', lostAttempts: 1, lockedBy: null });
    const { events } = await jobOf(j.id);
    expect(events.at(-1)).toMatchObject({ type: 'requeued_by_operator', reason: 'host died' });
    expect((await t.post(`${api}/jobs/${j.id}/heartbeat`, { workerId: 'w1', lockToken: j.lockToken })).status).toBe(409);
  });

  test('a live owner past its deferral limit, or a job past its deadline, can be requeued (the reaper would take it)', async () => {
    t = await setup({ ...rules, timeoutMs: 3_600_000 });
    const j = await running('w1');
    t.clock.advance(40_000 + 30_000); // lease + grace + the whole deferral
    await beat('w1');
    expect((await requeue(j.id)).status).toBe(200);
    const k = await running('w2', 'other');
    for (let i = 0; i < 359; i++) {
      t.clock.advance(10_000);
      expect((await t.post(`${api}/jobs/${k.id}/heartbeat`, { workerId: 'w2', lockToken: k.lockToken })).status).toBe(200);
    }
    expect((await requeue(k.id)).json.error.message).toContain('the lease runs for 30.0 s more');
    t.clock.advance(10_000); // the deadline: one hour after the claim, with the lease still live
    const r = await requeue(k.id);
    expect(r.status).toBe(200);
    expect(r.json.job).toMatchObject({ status: 'pending' });
  });

  test('force: needs a reason, takes a live lease, voids the token, and the event says it was forced', async () => {
    t = await setup(rules);
    const j = await running('w1');
    const noReason = await requeue(j.id, { force: true });
    expect(noReason.status).toBe(400);
    expect(noReason.json.error.field).toBe('reason');
    expect((await jobOf(j.id)).job.status).toBe('running');
    const r = await requeue(j.id, { force: true, reason: 'deploy rollback' });
    expect(r.status).toBe(200);
    expect(r.json.job.status).toBe('pending');
    const { events } = await jobOf(j.id);
    expect(events.at(-1)).toMatchObject({ type: 'force_requeued_by_operator', reason: 'deploy rollback' });
    expect((await t.post(`${api}/jobs/${j.id}/heartbeat`, { workerId: 'w1', lockToken: j.lockToken })).status).toBe(409);
  });

  for (const landing of ['heartbeat', 'liveness beat'] as const) {
    test(`a ${landing} between the decision and the write wins: the guarded write changes nothing`, async () => {
      t = await setup(rules);
      const j = await running('w1');
      t.clock.advance(40_001);
      // The same database, with the owner's write landing right after the
      // requeue's read (its decision: take the job) and before its write.
      let reads = 0;
      const interleaved = new Proxy(t.db, {
        get(target, prop, receiver) {
          const value = Reflect.get(target, prop, receiver);
          if (prop !== 'all') return typeof value === 'function' ? value.bind(target) : value;
          return async (...args: unknown[]) => {
            const rows = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
            if (reads++ === 0) {
              const r = landing === 'heartbeat' ? await t.post(`${api}/jobs/${j.id}/heartbeat`, { workerId: 'w1', lockToken: j.lockToken }) : await beat('w1');
              expect(r.status).toBe(200);
            }
            return rows;
          };
        },
      });
      const outcome = await jobRequeueIfReaperWould(interleaved, { id: Number(j.id), actor: 'op', reason: null, now: t.clock.now(), force: false, rules: defaultConfig(rules) });
      expect(reads).toBeGreaterThan(1);
      expect(outcome).toMatchObject({ ok: false, reason: 'reaper_would_wait', why: expect.stringContaining('changed while the requeue was decided') });
      expect((await jobOf(j.id)).job).toMatchObject({ status: 'running', lockedBy: 'w1', lostAttempts: 0 });
    });
  }
});

describe('the dashboard refuses the same way', () => {
  const ADMIN = 'a'.repeat(24);
  async function req(path: string, init: { cookie?: string; form?: Record<string, string> } = {}) {
    const headers: Record<string, string> = {};
    if (init.cookie) headers.cookie = init.cookie;
    if (init.form) headers['content-type'] = 'application/x-www-form-urlencoded';
    return t.app.request(path, { method: init.form ? 'POST' : 'GET', headers, body: init.form ? new URLSearchParams(init.form).toString() : undefined, redirect: 'manual' });
  }
  async function login() {
    const res = await req('/dashboard/login', { form: { name: 'Ada', token: ADMIN, next: '/dashboard' } });
    const cookie = `leasehold_session=${/leasehold_session=([^;]*)/.exec(res.headers.get('set-cookie') ?? '')![1]}`;
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await (await req('/dashboard', { cookie })).text())![1]!;
    return { cookie, csrf };
  }
  const admin = { authorization: `Bearer ${ADMIN}` };

  test('single requeue (job page and zombies page): refused inside the grace and with a live owner; the job page says why', async () => {
    t = await setup({ ...rules, adminToken: ADMIN });
    const { cookie, csrf } = await login();
    const inGrace = await running('w1');
    t.clock.advance(31_300);
    for (const returnTo of ['', '/dashboard/zombies']) {
      const res = await req(`/dashboard/jobs/${inGrace.id}/requeue`, { cookie, form: { _csrf: csrf, reason: 'r', return_to: returnTo } });
      expect(res.status).toBe(303);
      expect(res.headers.get('location')).toBe(`/dashboard/jobs/${inGrace.id}?notice=reaper_would_wait`);
      expect((await t.get(`${api}/jobs/${inGrace.id}`, admin)).json.job.status).toBe('running');
    }
    const page = await (await req(`/dashboard/jobs/${inGrace.id}?notice=reaper_would_wait`, { cookie })).text();
    expect(page).toContain('Nothing changed: the reaper would not take this job back now');
    expect(page).toContain('lease expired 1.3 s ago, inside the 10 s grace');
    // The zombies page offers no one-click requeue for it, and says why.
    const zombies = await (await req('/dashboard/zombies', { cookie })).text();
    expect(zombies).toContain('reaper waits: lease expired 1.3 s ago, inside the 10 s grace');

    t.clock.advance(10_000); // past the grace, but the owner beats
    await t.post(`${api}/workers/beat`, { workerId: 'w1' }, admin);
    const res = await req(`/dashboard/jobs/${inGrace.id}/requeue`, { cookie, form: { _csrf: csrf, reason: 'r', return_to: '/dashboard/zombies' } });
    expect(res.headers.get('location')).toBe(`/dashboard/jobs/${inGrace.id}?notice=reaper_would_wait`);
    expect(await (await req(`/dashboard/jobs/${inGrace.id}`, { cookie })).text()).toContain('owner w1 was seen 0.0 s ago');
    expect((await t.get(`${api}/jobs/${inGrace.id}`, admin)).json.job.status).toBe('running');

    t.clock.advance(16_000); // the owner has not been seen for 16 s: the reaper would take it
    const ok = await req(`/dashboard/jobs/${inGrace.id}/requeue`, { cookie, form: { _csrf: csrf, reason: 'r', return_to: '/dashboard/zombies' } });
    expect(ok.headers.get('location')).toBe('/dashboard/zombies?notice=requeued');
    expect((await t.get(`${api}/jobs/${inGrace.id}`, admin)).json.job.status).toBe('pending');
  });

  test('bulk requeue: a job inside the grace or with a live owner is neither counted nor taken', async () => {
    t = await setup({ ...rules, adminToken: ADMIN });
    const { cookie } = await login();
    const dead = await running('w-dead');
    t.clock.advance(20_000);
    const alive = await running('w-alive');
    t.clock.advance(20_001); // dead: lease + grace passed; alive: lease expired 10 s ago, inside its grace
    const inGrace = alive;
    t.clock.advance(9_000);
    const liveOwner = await running('w-beats');
    t.clock.advance(41_000);
    await t.post(`${api}/workers/beat`, { workerId: 'w-beats' }, admin); // past its grace, but its owner beats
    await t.post(`${api}/workers/beat`, { workerId: 'w-alive' }, admin);
    const statusOf = async (id: string) => (await t.get(`${api}/jobs/${id}`, admin)).json.job.status;
    const dryHtml = await (await req('/dashboard/bulk?queue=q&status=running', { cookie })).text();
    // w-alive's job expired 50 s ago: past lease + grace + the whole deferral, so the reaper would take it too.
    expect(dryHtml).toMatch(/2 matching running jobs the reaper would take back now/);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(dryHtml)![1]!;
    const res = await req('/dashboard/bulk', { cookie, form: { _csrf: csrf, queue: 'q', status: 'running', expected: '3', confirm: '3', reason: 'cleanup' } });
    expect(await res.text()).toMatch(/2 jobs requeued/);
    expect([await statusOf(dead.id), await statusOf(inGrace.id), await statusOf(liveOwner.id)]).toEqual(['pending', 'pending', 'running']);
  });
});

describe('one decision function', () => {
  test('decideReap says when the reaper acts and why, for the figure the dashboard shows', () => {
    const base = { id: 1, attemptCount: 1, maxAttempts: 5, lostAttempts: 0, maxLostAttempts: 3, leaseExpiresAt: 100_000, graceMs: 10_000, deadlineAt: 10_000_000, startedAt: 70_000, lockedBy: 'w1' };
    const r = { workerAliveMs: 15_000, maxReapDeferMs: 30_000 };
    // Owner gone since the claim: the reaper acts 1 ms after lease + grace.
    expect(decideReap({ ...base, ownerLastSeenAt: 70_000 }, 90_000, r)).toMatchObject({ action: 'none', takesAt: 110_001, why: 'the lease runs for 10.0 s more' });
    // Owner seen at 105 s: alive until 120 s, so the reaper acts at 120.001 s.
    expect(decideReap({ ...base, ownerLastSeenAt: 105_000 }, 111_000, r)).toMatchObject({ action: 'defer', takesAt: 120_001 });
    // An owner that keeps beating delays it at most by the deferral limit.
    expect(decideReap({ ...base, ownerLastSeenAt: 139_000 }, 139_500, r)).toMatchObject({ action: 'defer', takesAt: 140_000 });
    expect(decideReap({ ...base, ownerLastSeenAt: 140_000 }, 140_000, r)).toMatchObject({ action: 'requeue', reason: 'reaped_due_to_expired_lease' });
    // The deadline comes first when it is earlier.
    expect(decideReap({ ...base, deadlineAt: 105_000, ownerLastSeenAt: 100_000 }, 101_000, r)).toMatchObject({ action: 'none', takesAt: 105_000 });
  });
});
