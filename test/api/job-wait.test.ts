/**
 * POST /api/v1/jobs/wait: one request waits on many jobs. Woken by a write
 * on the same server, re-reading for changes made elsewhere (a second server
 * on the same database file), answering the jobs that count whole and
 * within a byte budget, bounded in jobs, time and concurrent waits, and
 * answering at once at shutdown.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { databaseClock } from '../../src/core/clock.ts';
import { silentLogger } from '../../src/core/log.ts';
import { openLibsql } from '../../src/runtime/libsql.ts';
import { MAX_WAIT_JOBS, WAIT_ANSWER_BYTES } from '../../src/engine/job-watchers.ts';
import { setup, type TestBed, appOn } from '../support/helpers.ts';
import { until } from '../support/until.ts';

const beds: TestBed[] = [];
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
  for (const t of beds.splice(0)) {
    expect(t.errors).toEqual([]);
    t.close();
  }
});

async function bed(overrides: Parameters<typeof setup>[0] = {}) {
  const t = await setup(overrides, { realClock: databaseClock });
  beds.push(t);
  return t;
}

const wait = (t: TestBed, body: Record<string, unknown>) => t.post('/api/v1/jobs/wait', body);
const named = (...ids: string[]) => ids.map((id) => ({ id }));

async function finish(t: TestBed, queue: string, result: unknown = { ok: true }) {
  const [job] = await t.claim(queue, 'w1');
  const res = await t.post(`/api/v1/jobs/${job!.id}/complete`, { workerId: 'w1', lockToken: job!.lockToken, result });
  expect(res.status).toBe(200);
  return job!.id;
}

describe('waiting on jobs', () => {
  test('without waitMs it answers at once: the finished jobs whole, with their versions; the others not', async () => {
    const t = await bed();
    const a = await t.enqueue('q', { payload: 'a' });
    const b = await t.enqueue('q', { payload: 'b' });
    await finish(t, 'q', { doubled: 2 });
    const res = await wait(t, { jobs: named(a.id, b.id) });
    expect(res.status).toBe(200);
    expect(res.json.missing).toEqual([]);
    expect(res.json.more).toBe(false);
    expect(res.json.jobs).toHaveLength(1);
    expect(res.json.jobs[0].job).toMatchObject({ id: a.id, status: 'completed', result: { doubled: 2 }, payload: 'a' });
    expect(typeof res.json.jobs[0].version).toBe('string');
  });

  test('a completion on the same server answers a waiting request, well before its re-read', async () => {
    const t = await bed();
    const a = await t.enqueue('q', { payload: 1 });
    const [job] = await t.claim('q', 'w1');
    const waiting = wait(t, { jobs: named(a.id), waitMs: 20_000 });
    await until('the request to wait', () => t.engine.jobWatchers.waiting === 1);
    const completedAt = Date.now();
    await t.post(`/api/v1/jobs/${a.id}/complete`, { workerId: 'w1', lockToken: job!.lockToken, result: 'done' });
    const res = await waiting;
    expect(res.json.jobs.map((j: any) => [j.job.id, j.job.status, j.job.result])).toEqual([[a.id, 'completed', 'done']]);
    // The wake-up, not the re-read, brought it (generous for a loaded machine).
    expect(Date.now() - completedAt).toBeLessThan(2_000);
    expect(t.engine.jobWatchers.waiting).toBe(0);
  });

  test('until: all answers only when every job counts; an id no job has answers at once, in either mode (missing)', async () => {
    const t = await bed();
    const a = await t.enqueue('q', { payload: 1 });
    const b = await t.enqueue('q', { payload: 2 });
    const gone = await wait(t, { jobs: named(a.id, '999999'), waitMs: 20_000, until: 'all' });
    expect(gone.json).toEqual({ jobs: [], missing: ['999999'], more: false });
    const waiting = wait(t, { jobs: named(a.id, b.id), waitMs: 20_000, until: 'all' });
    await until('the request to wait', () => t.engine.jobWatchers.waiting === 1);
    await finish(t, 'q');
    // One of two finished: still waiting.
    await new Promise((r) => setTimeout(r, 100));
    expect(t.engine.jobWatchers.waiting).toBe(1);
    await finish(t, 'q');
    const res = await waiting;
    expect(res.json.jobs.map((j: any) => j.job.id)).toEqual([a.id, b.id]);
    expect(res.json.missing).toEqual([]);
  });

  test("seen: a job counts once its version changes; '' answers its current state at once", async () => {
    const t = await bed();
    const a = await t.enqueue('q', { payload: 1 });
    const now = await wait(t, { jobs: [{ id: a.id, seen: '' }] });
    expect(now.json.jobs[0].job.status).toBe('pending');
    const pendingVersion = now.json.jobs[0].version;
    // Same version: nothing counts.
    expect((await wait(t, { jobs: [{ id: a.id, seen: pendingVersion }] })).json.jobs).toEqual([]);
    const waiting = wait(t, { jobs: [{ id: a.id, seen: pendingVersion }], waitMs: 20_000 });
    await until('the request to wait', () => t.engine.jobWatchers.waiting === 1);
    const [claimed] = await t.claim('q', 'w1');
    const active = await waiting;
    expect(active.json.jobs[0].job).toMatchObject({ id: a.id, status: 'running' });
    const runningVersion = active.json.jobs[0].version;
    expect(runningVersion).not.toBe(pendingVersion);
    // Progress is a change; a plain heartbeat is not.
    await t.post(`/api/v1/jobs/${a.id}/heartbeat`, { workerId: 'w1', lockToken: claimed!.lockToken });
    expect((await wait(t, { jobs: [{ id: a.id, seen: runningVersion }] })).json.jobs).toEqual([]);
    const progressing = wait(t, { jobs: [{ id: a.id, seen: runningVersion }], waitMs: 20_000 });
    await until('the request to wait', () => t.engine.jobWatchers.waiting === 1);
    await t.post(`/api/v1/jobs/${a.id}/heartbeat`, { workerId: 'w1', lockToken: claimed!.lockToken, progress: { pct: 50 } });
    const progressed = await progressing;
    expect(progressed.json.jobs[0].job).toMatchObject({ status: 'running', progress: { pct: 50 } });
  });

  test('a change made by another server on the same database is seen by the re-read', async () => {
    const t = await bed();
    const a = await t.enqueue('q', { payload: 1 });
    // A second server: its own handle on the same file, its own app (no shared wake-ups).
    const other = await openLibsql(t.url);
    cleanups.push(() => other.close());
    const otherApp = appOn({ db: other.db, config: t.config, clock: databaseClock, log: silentLogger });
    const waiting = wait(t, { jobs: named(a.id), waitMs: 20_000 });
    await until('the request to wait', () => t.engine.jobWatchers.waiting === 1);
    const call = async (path: string, body: unknown) => (await (await otherApp.request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json()) as any;
    const { jobs } = await call('/api/v1/queues/q/claim', { workerId: 'w2' });
    await call(`/api/v1/jobs/${a.id}/complete`, { workerId: 'w2', lockToken: jobs[0].lockToken, result: 'elsewhere' });
    const res = await waiting;
    expect(res.json.jobs[0].job).toMatchObject({ id: a.id, status: 'completed', result: 'elsewhere' });
  });

  test('an operator cancel wakes a wait; waitMs passing answers what counts (nothing)', async () => {
    const t = await bed();
    const a = await t.enqueue('q', { payload: 1 });
    const b = await t.enqueue('q', { payload: 2 });
    expect((await wait(t, { jobs: named(b.id), waitMs: 50 })).json).toEqual({ jobs: [], missing: [], more: false });
    const waiting = wait(t, { jobs: named(a.id), waitMs: 20_000 });
    await until('the request to wait', () => t.engine.jobWatchers.waiting === 1);
    await t.post(`/api/v1/jobs/${a.id}/cancel`, { reason: 'test' });
    expect((await waiting).json.jobs[0].job).toMatchObject({ id: a.id, status: 'cancelled' });
  });

  test('the answer keeps to its byte budget, always at least one job; more: true, and asking again answers the rest', async () => {
    const t = await bed({ maxPayloadBytes: 2 * 1024 * 1024 });
    const big = 'x'.repeat(1024 * 1024);
    const ids: string[] = [];
    const count = Math.ceil(WAIT_ANSWER_BYTES / big.length) + 1;
    for (let i = 0; i < count; i++) ids.push((await t.enqueue('q', { payload: i })).id);
    for (let i = 0; i < count; i++) await finish(t, 'q', big);
    const first = await wait(t, { jobs: named(...ids), until: 'all' });
    expect(first.json.more).toBe(true);
    const got = first.json.jobs.map((j: any) => j.job.id);
    expect(got.length).toBeGreaterThan(0);
    expect(got.length).toBeLessThan(count);
    expect(got).toEqual(ids.slice(0, got.length));
    const rest = await wait(t, { jobs: named(...ids.slice(got.length)), until: 'all' });
    expect(rest.json.jobs.map((j: any) => j.job.id)).toEqual(ids.slice(got.length));
    expect(rest.json.more).toBe(false);
  });

  test('bad bodies are 400s naming the field: no jobs, too many, an id twice, a bad id, waitMs over 30 s, an unknown until', async () => {
    const t = await bed();
    const cases: [unknown, string][] = [
      [{ jobs: [] }, 'jobs'],
      [{ jobs: Array.from({ length: MAX_WAIT_JOBS + 1 }, (_, i) => ({ id: String(i + 1) })) }, 'jobs'],
      [{ jobs: named('1', '1') }, 'jobs[1].id'],
      [{ jobs: named('x') }, 'jobs[0].id'],
      [{ jobs: named('1'), waitMs: 30_001 }, 'waitMs'],
      [{ jobs: named('1'), until: 'some' }, 'until'],
      [{ ids: ['1'] }, 'ids'],
    ];
    for (const [body, field] of cases) {
      const res = await wait(t, body as Record<string, unknown>);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(res.json.error.field).toBe(field);
    }
  });

  test('past LEASEHOLD_MAX_JOB_WAITS a wait is a 429 with Retry-After; a wait that ended gives its place back', async () => {
    const t = await bed({ maxJobWaits: 2 });
    const a = await t.enqueue('q', { payload: 1 });
    const first = wait(t, { jobs: named(a.id), waitMs: 20_000 });
    const second = wait(t, { jobs: named(a.id), waitMs: 20_000 });
    await until('two requests to wait', () => t.engine.jobWatchers.waiting === 2);
    const res = await t.app.request('/api/v1/jobs/wait', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jobs: named(a.id) }) });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(((await res.json()) as any).error.code).toBe('too_many_requests');
    await t.post(`/api/v1/jobs/${a.id}/cancel`, {});
    expect((await first).status).toBe(200);
    expect((await second).status).toBe(200);
    expect((await wait(t, { jobs: named(a.id) })).status).toBe(200);
  });

  test('a client that goes away ends its wait; at shutdown every wait answers at once', async () => {
    const t = await bed();
    const a = await t.enqueue('q', { payload: 1 });
    const gone = new AbortController();
    const leaving = t.app.request('/api/v1/jobs/wait', { method: 'POST', signal: gone.signal, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jobs: named(a.id), waitMs: 20_000 }) });
    await until('the request to wait', () => t.engine.jobWatchers.waiting === 1);
    gone.abort();
    await Promise.resolve(leaving).catch(() => undefined);
    await until('the wait to end', () => t.engine.jobWatchers.waiting === 0);
    const waiting = wait(t, { jobs: named(a.id), waitMs: 20_000 });
    await until('the request to wait', () => t.engine.jobWatchers.waiting === 1);
    t.engine.jobWatchers.close();
    expect((await waiting).json).toEqual({ jobs: [], missing: [], more: false });
  });
});
