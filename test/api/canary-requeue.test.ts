/**
 * A canary requeue (POST /queues/:queue/canary): the first `first` running
 * jobs are requeued at once, their new attempts watched for the window,
 * then the maintenance pass takes steps `growth` times larger, or stops the
 * run by itself, naming why, when the step's jobs fail, are refused as
 * stale writes, are reported run twice, or stop beating. The state is in
 * the database: a fresh app on the same file carries on, and two passes at
 * once take a step once. Real app, real libSQL file, the server's default
 * lease, heartbeat and grace.
 */
import { afterEach, expect, test } from 'vitest';
import { sql } from 'drizzle-orm';
import { createStore } from '../../src/db/store/create-store.ts';
import { silentLogger } from '../../src/core/log.ts';
import { openLibsql, type OpenedDb } from '../../src/runtime/libsql.ts';
import { engineOn, setup, type TestBed } from '../support/helpers.ts';

const api = '/api/v1';
let t: TestBed;
let other: OpenedDb | undefined;
afterEach(() => {
  expect(t.errors).toEqual([]);
  other?.close();
  other = undefined;
  t.close();
});

const WINDOW = 2_000;

/** `n` jobs held by a worker that hangs: their leases are live, so only a forced requeue takes them. */
async function hung(n: number) {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await t.enqueue('q', { payload: i })).id);
  const claimed = await t.claim('q', 'hung', { limit: n });
  expect(claimed.map((c) => c.id)).toEqual(ids);
  return ids;
}

const start = (body: Record<string, unknown>) => t.post(`${api}/queues/q/canary`, { force: true, reason: 'workers hung after the incident', windowMs: WINDOW, ...body });
const runOf = async (id: string) => (await t.get(`${api}/canary/${id}`)).json.run;
const statusOf = async (id: string) => (await t.get(`${api}/jobs/${id}`)).json.job.status as string;
const pass = () => t.engine.maintenancePass(t.clock.now());

/** A healthy worker takes whatever is pending and completes it; the ids it ran. */
async function workerRunsPending(outcome: 'complete' | 'fail' = 'complete') {
  const jobs = await t.claim('q', 'healthy', { limit: 50 });
  for (const j of jobs) {
    const res =
      outcome === 'complete'
        ? await t.post(`${api}/jobs/${j.id}/complete`, { workerId: 'healthy', lockToken: j.lockToken, result: { ok: true } })
        : await t.post(`${api}/jobs/${j.id}/fail`, { workerId: 'healthy', lockToken: j.lockToken, error: 'the downstream is still down' });
    expect(res.status).toBe(200);
  }
  return jobs.map((j) => j.id);
}

test('a canary requeue whose first jobs fail stops by itself with the reason, and requeues nothing more', async () => {
  t = await setup();
  const ids = await hung(6);
  const started = await start({ first: 2 });
  expect(started.status).toBe(201);
  expect(started.json.run).toMatchObject({ state: 'watching', step: 1, selected: 6, requeued: 2, remaining: 4, force: true });
  expect(started.json.run.steps).toEqual([{ step: 1, jobIds: ids.slice(0, 2), requeued: 2, failed: 0, skipped: [] }]);

  expect(await workerRunsPending('fail')).toEqual(ids.slice(0, 2));
  const report = await pass();
  expect(report.canary).toEqual({ steps: 0, stopped: 1, done: 0 });
  const run = await runOf(started.json.run.id);
  expect(run).toMatchObject({ state: 'stopped', stopReason: 'failures', step: 1, requeued: 2, remaining: 4 });
  expect(run.stopWhy).toBe("2 failed attempts of step 1's 2 jobs since it was requeued (at most 0 allowed)");
  expect(run.events.map((e: { type: string }) => e.type)).toEqual(['started', 'step', 'stopped']);
  expect(run.events[2]).toMatchObject({ reason: 'failures', message: run.stopWhy });

  // Past the window, passes later: the rest stay with their (hung) owner, untouched.
  t.clock.advance(WINDOW + 1);
  await pass();
  await pass();
  for (const id of ids.slice(2)) expect(await statusOf(id)).toBe('running');
  expect((await runOf(started.json.run.id)).step).toBe(1);

  // One audited operation: its start, its step and its stop, each with why.
  const audit = (await t.get(`${api}/audit?action=jobs.canary`)).json.entries as { target: string; reason: string }[];
  expect(audit.map((e) => e.target).reverse()).toEqual([
    'canary requeue of 6 running jobs in queue q',
    `canary run ${run.id}: step 1`,
    `canary run ${run.id}: stopped by itself after step 1`,
  ]);
  expect(audit[0]!.reason).toBe(run.stopWhy);
});

test('a healthy canary requeue continues in growing steps, each after its window, and ends done', async () => {
  t = await setup();
  const ids = await hung(7);
  const dry = await start({ first: 1, dryRun: true });
  expect(dry.status).toBe(200);
  expect(dry.json).toMatchObject({ dryRun: true, selected: 7, jobIds: ids, steps: [1, 2, 4], hold: null });
  expect((await t.get(`${api}/canary`)).json.runs).toEqual([]);

  const started = await start({ first: 1 });
  const id = started.json.run.id as string;
  const taken: string[][] = [];
  for (const size of [1, 2, 4]) {
    taken.push(await workerRunsPending());
    expect(taken.at(-1)).toHaveLength(size);
    // Inside the window: the pass waits.
    expect((await pass()).canary).toEqual({ steps: 0, stopped: 0, done: 0 });
    t.clock.advance(WINDOW);
    const report = await pass();
    expect(report.canary).toEqual(size === 4 ? { steps: 0, stopped: 0, done: 1 } : { steps: 1, stopped: 0, done: 0 });
  }
  expect(taken.flat()).toEqual(ids);
  const run = await runOf(id);
  expect(run).toMatchObject({ state: 'done', step: 3, requeued: 7, skipped: 0, remaining: 0, stopReason: null });
  expect(run.steps.map((s: { jobIds: string[] }) => s.jobIds)).toEqual([ids.slice(0, 1), ids.slice(1, 3), ids.slice(3)]);
  expect(run.events.map((e: { type: string }) => e.type)).toEqual(['started', 'step', 'step', 'step', 'done']);
  for (const j of ids) expect(await statusOf(j)).toBe('completed');
});

test('no worker taking the step is no evidence: the run stops after the window, naming it', async () => {
  t = await setup();
  await hung(3);
  const started = await start({ first: 1 });
  t.clock.advance(WINDOW);
  await pass();
  expect(await runOf(started.json.run.id)).toMatchObject({ state: 'stopped', stopReason: 'no_attempts', remaining: 2 });
});

test('stale writes from the old owner stop the run: it is still alive and writing', async () => {
  t = await setup();
  const ids = await hung(4);
  const tokens = (await t.db.all<{ id: number; lock_token: string }>(sql`SELECT id, lock_token FROM jobs ORDER BY id`)).map((r) => r.lock_token);
  const started = await start({ first: 1 });
  // The hung worker wakes up and heartbeats the job it no longer holds.
  const beat = await t.post(`${api}/jobs/${ids[0]}/heartbeat`, { workerId: 'hung', lockToken: tokens[0] });
  expect(beat.status).toBe(409);
  await workerRunsPending();
  await pass();
  expect(await runOf(started.json.run.id)).toMatchObject({ state: 'stopped', stopReason: 'stale_writes', remaining: 3 });
});

test('cancel stops a run: nothing more is requeued; a finished run cannot be cancelled again', async () => {
  t = await setup();
  const ids = await hung(4);
  const started = await start({ first: 1 });
  const id = started.json.run.id as string;
  await workerRunsPending();
  const cancelled = await t.post(`${api}/canary/${id}/cancel`, { reason: 'found the cause; doing it by hand' });
  expect(cancelled.status).toBe(200);
  expect(cancelled.json.run).toMatchObject({ state: 'cancelled', stopReason: 'cancelled', stopWhy: 'found the cause; doing it by hand' });
  t.clock.advance(WINDOW);
  expect((await pass()).canary.steps).toBe(0);
  for (const j of ids.slice(1)) expect(await statusOf(j)).toBe('running');
  const again = await t.post(`${api}/canary/${id}/cancel`, { reason: 'again' });
  expect(again.status).toBe(409);
  expect(again.json.error).toMatchObject({ code: 'conflict', state: 'cancelled' });
  expect((await t.post(`${api}/canary/999/cancel`, { reason: 'x' })).status).toBe(404);
  expect((await t.get(`${api}/canary/nope`)).status).toBe(404);
});

test('a restart mid-run (a fresh engine on the same file) carries on without doubling a step', async () => {
  t = await setup();
  const ids = await hung(7);
  const started = await start({ first: 1 });
  const id = started.json.run.id as string;
  await workerRunsPending();
  t.clock.advance(WINDOW);
  // The first server is gone; a new one opens the same database file and runs its pass.
  other = await openLibsql(t.url);
  const restarted = engineOn(other.db, { config: t.config, clock: t.clock, log: silentLogger });
  expect((await restarted.maintenancePass(t.clock.now())).canary.steps).toBe(1);
  // Its pass again, and the old one's, at the same instant: step 2's window has not passed.
  expect((await restarted.maintenancePass(t.clock.now())).canary.steps).toBe(0);
  expect((await pass()).canary.steps).toBe(0);
  restarted.close();
  const run = await runOf(id);
  expect(run).toMatchObject({ step: 2, requeued: 3, remaining: 4 });
  expect(run.steps.map((s: { jobIds: string[] }) => s.jobIds)).toEqual([ids.slice(0, 1), ids.slice(1, 3)]);
});

test('two passes at once take a step once', async () => {
  t = await setup();
  const ids = await hung(7);
  const started = await start({ first: 1 });
  const id = Number(started.json.run.id);
  await workerRunsPending();
  t.clock.advance(WINDOW);
  other = await openLibsql(t.url);
  const second = engineOn(other.db, { config: t.config, clock: t.clock, log: silentLogger });
  const reports = await Promise.all([pass(), second.maintenancePass(t.clock.now())]);
  second.close();
  expect(reports.map((r) => r.canary.steps).sort()).toEqual([0, 1]);
  // And at the store, the same step asked twice from the same state: one takes it.
  const store = createStore(t.db);
  const run = (await store.canaryRunRead({ id }))!.run;
  expect(run.step).toBe(2);
  const takes = await Promise.all([1, 2].map(() => store.canaryStepTake({ runId: id, fromStep: 2, size: 4, rules: t.config, now: t.clock.now() })));
  expect(takes.map((x) => x.taken).sort()).toEqual([false, true]);
  const after = (await store.canaryRunRead({ id }))!;
  expect(after.steps.map((s) => s.jobIds)).toEqual([[1], [2, 3], [4, 5, 6, 7]].map((g) => g.map((i) => Number(ids[i - 1]))));
  const requeueEvents = await t.db.all<{ n: number }>(sql`SELECT count(*) AS n FROM events WHERE type = 'force_requeued_by_operator'`);
  expect(Number(requeueEvents[0]!.n)).toBe(7);
});

test('without force, a canary takes only what the requeue rule takes; a job the reaper took meanwhile is skipped, with why', async () => {
  t = await setup();
  await hung(2);
  // Live leases: the reaper (and so a requeue without force) would not take them; nothing is selected.
  const none = await t.post(`${api}/queues/q/canary`, { first: 1, dryRun: true });
  expect(none.json).toMatchObject({ selected: 0, steps: [], force: false });
  // Their owner gone past lease, grace and liveness: the reaper would take them now, and so does the canary's first step.
  t.clock.advance(t.config.leaseMs + t.config.graceMs + t.config.workerAliveMs + 1_000);
  const started = await t.post(`${api}/queues/q/canary`, { first: 1, reason: 'zombies after the incident', windowMs: WINDOW });
  expect(started.json.run).toMatchObject({ selected: 2, requeued: 1, force: false });
  // The pass's reaper takes the other zombie itself; the canary's next step finds it no longer running.
  expect(started.json.run.steps[0].jobIds).toEqual(['1']);
  expect((await pass()).requeued.map((r) => r.id)).toEqual(['2']);
  await workerRunsPending();
  t.clock.advance(WINDOW);
  await pass();
  const run = await runOf(started.json.run.id);
  expect(run.steps[1]).toMatchObject({ step: 2, requeued: 0, skipped: [{ id: '2', why: 'the job is pending now, no longer running' }] });
});

test('bad input is refused naming the field, and starts nothing', async () => {
  t = await setup();
  await hung(2);
  const cases: [Record<string, unknown>, string][] = [
    [{ reason: 'x' }, 'first'],
    [{ first: 0, reason: 'x' }, 'first'],
    [{ first: 1, windowMs: 10, reason: 'x' }, 'windowMs'],
    [{ first: 1, growth: 0, reason: 'x' }, 'growth'],
    [{ first: 1, maxFailures: -1, reason: 'x' }, 'maxFailures'],
    [{ first: 1, force: true }, 'reason'],
    [{ first: 1 }, 'reason'],
    [{ first: 1, reason: 'x', bogus: 1 }, 'bogus'],
  ];
  for (const [body, field] of cases) {
    const res = await t.post(`${api}/queues/q/canary`, body);
    expect(res.status, JSON.stringify(body)).toBe(400);
    expect(res.json.error.field, JSON.stringify(body)).toBe(field);
  }
  expect((await t.post(`${api}/queues/${'x'.repeat(300)}/canary`, { first: 1, reason: 'x' })).status).toBe(400);
  expect((await t.get(`${api}/canary`)).json.runs).toEqual([]);
  const rows = await t.db.all<{ n: number }>(sql`SELECT count(*) AS n FROM canary_runs`);
  expect(Number(rows[0]!.n)).toBe(0);
});

test('a start with nothing to take is a 409 that says so and starts no run (the jobs a dry run saw may be gone by then)', async () => {
  t = await setup();
  await t.enqueue('q', { payload: 1 });
  const [job] = await t.claim('q', 'slow', { limit: 1 });
  // Live lease: without force the reaper's rule takes nothing.
  const live = await t.post(`${api}/queues/q/canary`, { first: 1, reason: 'zombies?' });
  expect(live.status).toBe(409);
  expect(live.json.error).toMatchObject({ code: 'conflict', field: 'queue' });
  expect(live.json.error.message).toContain('nothing to requeue, no canary run started');
  // Past lease, grace and liveness the dry run lists it; then its slow owner completes it before the start.
  t.clock.advance(t.config.leaseMs + t.config.graceMs + t.config.workerAliveMs + 1_000);
  expect((await t.post(`${api}/queues/q/canary`, { first: 1, dryRun: true })).json.selected).toBe(1);
  expect((await t.post(`${api}/jobs/${job!.id}/complete`, { workerId: 'slow', lockToken: job!.lockToken })).status).toBe(200);
  const late = await start({ first: 1 });
  expect(late.status).toBe(409);
  expect(late.json.error.message).toBe('queue q has no running job: nothing to requeue, no canary run started');
  expect((await t.get(`${api}/canary`)).json.runs).toEqual([]);
  const runs = await t.db.all<{ n: number }>(sql`SELECT count(*) AS n FROM canary_runs`);
  expect(Number(runs[0]!.n)).toBe(0);
});
