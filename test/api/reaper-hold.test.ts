/**
 * The reaper's hold lives in the database (src/db/store/reaper-hold.ts), so
 * every decision sees it: when another server on the same database file
 * starts (the real reaper timer code notes the start), or notices a pause of
 * its own, this app's non-forced requeue (single, bulk, dashboard), its
 * POST /reaper/run and the pass `leasehold reap` runs all leave expired
 * leases alone until the hold ends, and say until when; force (with a
 * reason) still takes the job and says it overrode the hold; deadlines still
 * apply. Before, the hold lived in the process that noticed the gap, and
 * only that process's own timer obeyed it.
 */
import { afterEach, expect, test } from 'vitest';
import { gapWatch } from '../../src/runtime/gap-watch.ts';
import { makeReaperPass, startReaper } from '../../src/runtime/reaper-timer.ts';
import { openLibsql, type OpenedDb } from '../../src/runtime/libsql.ts';
import { runMaintenancePass } from '../../src/maintenance/pass.ts';
import { jobRequeueIfReaperWould } from '../../src/db/store/requeue.ts';
import { createStore } from '../../src/db/store/create-store.ts';
import { silentLogger } from '../../src/core/log.ts';
import { recordingLogger, setup, type TestBed, engineOn } from '../support/helpers.ts';

const api = '/api/v1';
let t: TestBed;
let other: OpenedDb | undefined;
afterEach(() => {
  expect(t.errors).toEqual([]);
  other?.close();
  other = undefined;
  t.close();
});

// lease 30 s, heartbeat 5 s, grace 10 s (the defaults); a worker counts as alive for 15 s.
const HOLD_MS = 5_000 + 10_000;

/** Jobs claimed by a worker that is gone, past lease + grace and its liveness: the reaper would take each now. */
async function abandoned(n: number, extra: Record<string, unknown> = {}) {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await t.enqueue('q', { payload: i, ...extra })).id);
  const claimed = await t.claim('q', 'gone', { limit: n });
  expect(claimed.map((c) => c.id)).toEqual(ids);
  t.clock.advance(t.config.leaseMs + t.config.graceMs + t.config.workerAliveMs + 1_000);
  return { ids, tokens: claimed.map((c) => c.lockToken) };
}

/** A second server starting on the same database file: its reaper timer notes the start (and is stopped at once). */
async function anotherServerStarts() {
  other = await openLibsql(t.url);
  const reaper = await startReaper(engineOn(other.db, { config: t.config, clock: t.clock, log: silentLogger }), silentLogger);
  reaper.stop();
}

const statusOf = async (id: string) => (await t.get(`${api}/jobs/${id}`)).json.job.status as string;

test("after another server's start, a plain requeue (single and bulk) and POST /reaper/run leave expired leases alone and say until when; force overrides it, and says so; after the hold they take them", async () => {
  t = await setup();
  const { ids } = await abandoned(4);
  const [single, bulk, run, forced] = ids as [string, string, string, string];
  await anotherServerStarts();
  const holdEnds = new Date(t.clock.now() + HOLD_MS).toISOString();

  const refused = await t.post(`${api}/jobs/${single}/requeue`, { reason: 'looks stuck' });
  expect(refused.status).toBe(409);
  expect(refused.json.error).toMatchObject({ code: 'conflict', status: 'running', heldUntil: holdEnds, reaperTakesAt: holdEnds });
  expect(refused.json.error.message).toBe(
    `job ${single} is running and the reaper would not take it back now: the server just started: owners get 15.0 s more to renew (the hold ends at ${holdEnds}) before expired leases are taken back. Nothing changed; the reaper acts by itself when it should (force, with a reason, takes it now and may run it twice)`,
  );

  const dry = await t.post(`${api}/queues/q/bulk`, { action: 'requeue', dryRun: true });
  expect(dry.json).toMatchObject({ matching: 0, wouldChange: 0, jobs: [], hold: { until: holdEnds, why: expect.stringContaining('the server just started') } });
  const acted = await t.post(`${api}/queues/q/bulk`, { action: 'requeue', reason: 'mass requeue after the restart' });
  expect(acted.status).toBe(200);
  expect(acted.json).toMatchObject({ changed: 0, ids: [], hold: { until: holdEnds } });

  const pass = await t.post(`${api}/reaper/run`);
  expect(pass.json).toMatchObject({ requeued: [], failed: [], hold: { until: holdEnds, why: expect.stringContaining('the server just started') } });
  expect(pass.json.held.map((h: { id: string }) => h.id)).toEqual(ids);
  // What `leasehold reap` runs (and the Workers cron): the same pass over a database handle.
  expect((await runMaintenancePass(t.db, t.clock.now(), t.config)).requeued).toEqual([]);
  for (const id of ids) expect(await statusOf(id)).toBe('running');
  expect((await t.events(run)).filter((e) => e.type === 'reap_held').map((e) => e.reason)).toEqual(['server_gap', 'server_gap']);

  // Force, with a reason, still takes it, and says it overrode the hold: in the answer, its event and the audit.
  const f = await t.post(`${api}/jobs/${forced}/requeue`, { force: true, reason: 'known dead host' });
  expect(f.status).toBe(200);
  expect(f.json.job.status).toBe('pending');
  expect(f.json.requeue).toMatchObject({ forced: true, reason: 'forced', overrodeHold: { until: holdEnds, why: expect.stringContaining('the server just started') }, beyondBudget: null });
  const event = (await t.get(`${api}/jobs/${forced}`)).json.events.at(-1);
  expect(event).toMatchObject({ type: 'force_requeued_by_operator', reason: 'known dead host', message: expect.stringContaining("forced requeue overrode the reaper's hold (the server just started") });
  const [entry] = (await t.get(`${api}/audit?action=job.force_requeue`)).json.entries;
  expect(entry).toMatchObject({ jobId: forced, reason: 'known dead host', after: { status: 'pending', overrode: expect.stringContaining("overrode the reaper's hold") } });

  // Once the hold is over, each of them takes its job.
  t.clock.advance(HOLD_MS);
  const ok = await t.post(`${api}/jobs/${single}/requeue`, { reason: 'still stuck' });
  expect(ok.status, JSON.stringify(ok.json)).toBe(200);
  expect(ok.json).toMatchObject({ job: { status: 'pending' }, requeue: { action: 'requeue', reason: 'reaped_due_to_expired_lease', forced: false } });
  expect((await t.post(`${api}/queues/q/bulk`, { action: 'requeue', reason: 'after the hold', limit: 1 })).json).toMatchObject({ changed: 1, ids: [bulk], hold: null });
  expect((await t.post(`${api}/reaper/run`)).json.requeued.map((r: { id: string }) => r.id)).toEqual([run]);
});

test('the dashboard says the hold and when it ends, and its requeue (single, zombies page, bulk) is refused until then', async () => {
  const ADMIN = 'a'.repeat(24);
  t = await setup({ adminToken: ADMIN });
  const { ids } = await abandoned(2);
  await anotherServerStarts();
  const holdEnds = new Date(t.clock.now() + HOLD_MS).toISOString();
  const req = (path: string, init: { cookie?: string; form?: Record<string, string> } = {}) =>
    t.app.request(path, {
      method: init.form ? 'POST' : 'GET',
      headers: { ...(init.cookie ? { cookie: init.cookie } : {}), ...(init.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
      body: init.form ? new URLSearchParams(init.form).toString() : undefined,
      redirect: 'manual',
    });
  const login = await req('/dashboard/login', { form: { name: 'Ada', token: ADMIN, next: '/dashboard' } });
  const cookie = `leasehold_session=${/leasehold_session=([^;]*)/.exec(login.headers.get('set-cookie') ?? '')![1]}`;
  const page = await (await req(`/dashboard/jobs/${ids[0]}`, { cookie })).text();
  expect(page).toContain(`waits: the server just started: owners get 15.0 s more to renew (the hold ends at ${holdEnds})`);
  expect(page).toContain('Requeue now: change nothing: the reaper would not take it back now (the server just started');
  expect(page).toContain("Force requeue now: requeue it by force (it may run twice; the reaper would not take it now: the server just started");
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page)![1]!;
  for (const returnTo of ['', '/dashboard/zombies']) {
    const res = await req(`/dashboard/jobs/${ids[0]}/requeue`, { cookie, form: { _csrf: csrf, reason: 'r', return_to: returnTo } });
    expect(res.headers.get('location')).toBe(`/dashboard/jobs/${ids[0]}?notice=reaper_would_wait`);
  }
  expect(await (await req('/dashboard/zombies', { cookie })).text()).toContain('reaper waits: the server just started');
  const dry = await (await req('/dashboard/bulk?queue=q&status=running', { cookie })).text();
  expect(dry).toContain('0 matching running jobs the reaper would take back now');
  expect(dry).toContain(`the server just started: owners get 15.0 s more to renew (the hold ends at ${holdEnds})`);
  for (const id of ids) expect(await statusOf(id)).toBe('running');

  // The forced one, from the job page: it overrode the hold, and the notice says so.
  const forced = await req(`/dashboard/jobs/${ids[1]}/force-requeue`, { cookie, form: { _csrf: /name="_csrf" value="([^"]+)"/.exec(await (await req(`/dashboard/jobs/${ids[1]}`, { cookie })).text())![1]!, confirm: ids[1]!, reason: 'host gone' } });
  expect(forced.headers.get('location')).toBe(`/dashboard/jobs/${ids[1]}?notice=force_requeued_override`);
  expect(await statusOf(ids[1]!)).toBe('pending');
});

test('a deadline still applies during the hold', async () => {
  t = await setup({ timeoutMs: 45_000 });
  const { ids } = await abandoned(1);
  await anotherServerStarts();
  // Past lease + grace and past its 45 s deadline: the deadline is not held.
  expect(t.clock.now()).toBeGreaterThan(Date.UTC(2030, 0, 1) + 45_000);
  const r = await t.post(`${api}/jobs/${ids[0]}/requeue`);
  expect(r.status, JSON.stringify(r.json)).toBe(200);
  expect(r.json.requeue).toMatchObject({ action: 'requeue', reason: 'deadline_exceeded' });
});

test("a server that notices its own pause writes the hold (the later end wins), and a hold begun between a requeue's read and its write wins", async () => {
  t = await setup();
  const { ids } = await abandoned(2);
  let mono = 0;
  const records: Parameters<typeof recordingLogger>[0] = [];
  const pass = makeReaperPass(t.engine, recordingLogger(records), gapWatch(t.config, () => mono));
  // The start's hold is said in the server's start line, not as a line of its own.
  expect(await pass.noteStart()).toEqual({ holdUntil: t.clock.now() + HOLD_MS, beganAt: t.clock.now(), gapMs: null, cause: 'the server just started' });
  // Regular ticks inside the start's hold: they notice nothing new.
  for (let i = 0; i < 2; i++) {
    t.clock.advance(5_000);
    mono += 5_000;
    await pass();
  }
  expect(records.filter((r) => r.event === 'reaper_hold')).toEqual([]);
  // The process is stopped for 20 s, past the interval plus a heartbeat: the next tick is a gap.
  mono += 20_000;
  t.clock.advance(20_000);
  // The start's hold ended meanwhile, but this pass writes the new one before it reaps.
  await pass();
  expect(records.find((r) => r.event === 'reaper_hold' && r.gapMs === 20_000)?.msg).toMatch(/the reaper did not run for 20\.0 s \(the server was paused or stalled\)/);
  const store = createStore(t.db);
  const held = await store.reaperHoldRead({ now: t.clock.now() });
  expect(held).toMatchObject({ holdUntil: t.clock.now() + HOLD_MS, gapMs: 20_000, cause: 'the reaper did not run for 20.0 s (the server was paused or stalled)' });
  // A shorter hold noticed meanwhile does not cut it short.
  expect(await store.reaperHoldBegin({ now: t.clock.now(), holdMs: 1_000, gapMs: null, cause: 'the server just started' })).toEqual({ holdUntil: held!.holdUntil, beganAt: held!.beganAt, gapMs: 20_000, cause: held!.cause });
  for (const id of ids) expect(await statusOf(id)).toBe('running');

  // The hold ends; a requeue decides to take the job, and another server's start lands before its write.
  t.clock.advance(HOLD_MS);
  let reads = 0;
  const interleaved = new Proxy(t.db, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (prop !== 'all') return typeof value === 'function' ? value.bind(target) : value;
      return async (...args: unknown[]) => {
        const rows = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        if (reads++ === 0) await anotherServerStarts();
        return rows;
      };
    },
  });
  const outcome = await jobRequeueIfReaperWould(interleaved, { id: Number(ids[0]), actor: 'op', reason: null, now: t.clock.now(), force: false, rules: t.config });
  expect(outcome).toMatchObject({ ok: false, reason: 'reaper_would_wait', why: expect.stringContaining('a server\'s hold began') });
  expect(await statusOf(ids[0]!)).toBe('running');
});
