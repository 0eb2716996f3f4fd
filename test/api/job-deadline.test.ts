/**
 * A hung handler no longer holds its job forever.
 * Every claim has a deadline (job, else queue, else server timeout); past it
 * the reaper takes the job even while it heartbeats, the owner's writes that
 * would keep the job are refused with cause deadline_exceeded, and stalled
 * jobs (heartbeating without progress) are shown and alerted on.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { databaseClock } from '../../src/core/clock.ts';
import { silentLogger } from '../../src/core/log.ts';
import { defaultConfig, loadConfig, type Config } from '../../src/core/config.ts';
import { dbTransport } from '../../src/embedded/db-transport.ts';
import { startServer, type RunningServer } from '../../src/runtime/node.ts';
import { JobAbortedError } from '../../src/worker/errors.ts';
import { createWorker, httpTransport, type Transport, type Worker } from '../../src/worker/index.ts';
import { setup, type TestBed } from '../support/helpers.ts';
import { until } from '../support/until.ts';

const api = '/api/v1';
let t: TestBed;
afterEach(() => t?.close());

const ms = (iso: string | null) => (iso === null ? null : Date.parse(iso));
const reap = async () => (await t.post(`${api}/reaper/run`)).json;
const job = async (id: string) => (await t.get(`${api}/jobs/${id}`)).json.job;
const hb = (id: string, lockToken: string, extra: Record<string, unknown> = {}) => t.post(`${api}/jobs/${id}/heartbeat`, { workerId: 'w1', lockToken, ...extra });

describe('the default job timeout', () => {
  test('a job with a 2 s lease heartbeated every 0.4 s runs until the server timeout, then is reaped with deadline_exceeded', async () => {
    t = await setup({ leaseMs: 2_000, heartbeatMs: 400, graceMs: 1_000, timeoutMs: 10_000, maxAttempts: 3 });
    const e = await t.enqueue('q');
    const claimedAt = t.clock.now();
    const [c] = await t.claim('q', 'w1');
    expect(ms(c!.deadlineAt)).toBe(claimedAt + 10_000);
    expect(c!.timeoutMs).toBe(10_000);
    // 9.6 s of heartbeats: the lease never lapses, the reaper leaves it alone.
    for (let i = 0; i < 24; i++) {
      t.clock.advance(400);
      expect((await hb(e.id, c!.lockToken)).status).toBe(200);
      const pass = await reap();
      expect(pass.requeued).toEqual([]);
    }
    expect((await job(e.id)).status).toBe('running');
    t.clock.advance(400); // 10.0 s: the deadline
    const refused = await hb(e.id, c!.lockToken);
    expect(refused.status).toBe(409);
    expect(refused.json.error).toMatchObject({ code: 'lease_lost', cause: 'deadline_exceeded', status: 'running' });
    const pass = await reap();
    expect(pass.requeued).toEqual([{ id: e.id, reason: 'deadline_exceeded' }]);
    expect(await job(e.id)).toMatchObject({ status: 'pending', erroredAttempts: 1, lostAttempts: 0, lastError: 'deadline_exceeded: ran 10.0 s, timeout 10 s' });
    const reaped = (await t.events(e.id)).find((x) => x.type === 'reaped') as Record<string, unknown>;
    expect(reaped).toMatchObject({ reason: 'deadline_exceeded', actor: 'reaper', message: 'deadline_exceeded: ran 10.0 s, timeout 10 s' });
    // The owner's next write: 409 with the cause, whatever it is.
    for (const write of ['heartbeat', 'checkpoint', 'complete'] as const) {
      const body = write === 'checkpoint' ? { checkpoint: 1 } : {};
      const r = await t.post(`${api}/jobs/${e.id}/${write}`, { workerId: 'w1', lockToken: c!.lockToken, ...body });
      expect(r.status, write).toBe(409);
      expect(r.json.error, write).toMatchObject({ code: 'lease_lost', cause: 'deadline_exceeded', status: 'pending' });
    }
    expect(t.errors).toEqual([]);
  });

  test('past the deadline on the last attempt the reaper fails the job for good', async () => {
    t = await setup({ timeoutMs: 60_000 });
    const e = await t.enqueue('q', { payload: 1, maxAttempts: 1 });
    const [c] = await t.claim('q', 'w1');
    t.clock.advance(30_000);
    expect((await hb(e.id, c!.lockToken)).status).toBe(200);
    t.clock.advance(30_000);
    expect((await reap()).failed).toEqual([{ id: e.id, reason: 'deadline_exceeded' }]);
    expect(await job(e.id)).toMatchObject({ status: 'failed', erroredAttempts: 1 });
    expect((await job(e.id)).lastError).toMatch(/^deadline_exceeded: ran 60\.0 s, timeout 1 min/);
  });

  test('past the deadline, keeping writes are refused; complete and fail are accepted until the reaper acts', async () => {
    t = await setup({ timeoutMs: 60_000 });
    const a = await t.enqueue('q');
    const b = await t.enqueue('q');
    const claimed = await t.claim('q', 'w1', { limit: 2 });
    const [ca, cb] = [claimed.find((x) => x.id === a.id)!, claimed.find((x) => x.id === b.id)!];
    t.clock.advance(60_001);
    const writes = [
      t.post(`${api}/jobs/${a.id}/heartbeat`, { workerId: 'w1', lockToken: ca.lockToken, progress: { n: 1 } }),
      t.post(`${api}/jobs/${a.id}/extend`, { workerId: 'w1', lockToken: ca.lockToken, leaseMs: 60_000 }),
      t.post(`${api}/jobs/${a.id}/checkpoint`, { workerId: 'w1', lockToken: ca.lockToken, checkpoint: { n: 1 } }),
      t.post(`${api}/jobs/${a.id}/release`, { workerId: 'w1', lockToken: ca.lockToken }),
    ];
    for (const r of await Promise.all(writes)) {
      expect(r.status).toBe(409);
      expect(r.json.error).toMatchObject({ code: 'lease_lost', cause: 'deadline_exceeded', status: 'running' });
    }
    const batch = await t.post(`${api}/heartbeats`, { workerId: 'w1', leases: [{ id: a.id, lockToken: ca.lockToken }] });
    expect(batch.json.results[0]).toMatchObject({ ok: false, error: { code: 'lease_lost', cause: 'deadline_exceeded' } });
    const before = await job(a.id);
    expect(before).toMatchObject({ status: 'running', progress: null, checkpoint: null });
    // A finished result is kept: the token still fences the job, nobody else runs it.
    const done = await t.post(`${api}/jobs/${a.id}/complete`, { workerId: 'w1', lockToken: ca.lockToken, result: 'late' });
    expect(done.status).toBe(200);
    expect(done.json.job).toMatchObject({ status: 'completed', result: 'late' });
    const failed = await t.post(`${api}/jobs/${b.id}/fail`, { workerId: 'w1', lockToken: cb.lockToken, error: 'gave up at the deadline' });
    expect(failed.status).toBe(200);
    expect(failed.json.job).toMatchObject({ status: 'pending', erroredAttempts: 1 });
  });
});

describe('queue and job timeouts', () => {
  test('a queue timeoutMs overrides the default, a job timeoutMs wins, and null restores the default', async () => {
    t = await setup({ timeoutMs: 3_600_000 });
    const set = await t.call('PATCH', `${api}/queues/q/settings`, { timeoutMs: 120_000 });
    expect(set.status).toBe(200);
    expect(set.json.queue.settings).toMatchObject({ timeoutMs: 120_000, stallMs: null });
    expect(set.json.queue.overrides).toEqual({ timeoutMs: 120_000 });
    const claimDeadline = async (job: Record<string, unknown>) => {
      await t.enqueue('q', job);
      const at = t.clock.now();
      const [c] = await t.claim('q', 'w1');
      return { after: ms(c!.deadlineAt)! - at, timeoutMs: c!.timeoutMs };
    };
    expect(await claimDeadline({ payload: 1 })).toEqual({ after: 120_000, timeoutMs: 120_000 });
    expect(await claimDeadline({ payload: 2, timeoutMs: 5_000 })).toEqual({ after: 5_000, timeoutMs: 5_000 });
    const reset = await t.call('PATCH', `${api}/queues/q/settings`, { timeoutMs: null });
    expect(reset.json.queue.settings.timeoutMs).toBe(3_600_000);
    expect(reset.json.queue.overrides).toEqual({});
    expect(await claimDeadline({ payload: 3 })).toEqual({ after: 3_600_000, timeoutMs: 3_600_000 });
  });

  test('bad timeouts are refused with a 400 naming the field, and change nothing', async () => {
    t = await setup({ leaseMs: 30_000 });
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ timeoutMs: 10_000 }, 'timeoutMs', /at least the lease \(30000 ms\)/],
      [{ timeoutMs: 31 * 24 * 3_600_000 }, 'timeoutMs', /between 1000 and 2592000000/],
      [{ timeoutMs: 0 }, 'timeoutMs', /./],
      [{ stallMs: 0 }, 'stallMs', /./],
      [{ stallMs: 'soon' }, 'stallMs', /./],
      // Raising the lease above the (default) timeout is refused too.
      [{ leaseMs: 2 * 3_600_000 }, 'timeoutMs', /at least the lease/],
    ];
    for (const [body, field, message] of cases) {
      const r = await t.call('PATCH', `${api}/queues/q/settings`, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.json.error.field).toBe(field);
      expect(r.json.error.message).toMatch(message);
    }
    expect((await t.get(`${api}/queues/q`)).status).toBe(404);
    const tooLong = await t.post(`${api}/queues/q/jobs`, { payload: 1, timeoutMs: 31 * 24 * 3_600_000 });
    expect(tooLong.status).toBe(400);
    expect(tooLong.json.error.field).toBe('timeoutMs');
  });

  test('config: LEASEHOLD_JOB_TIMEOUT_MS / --job-timeout-ms, default one hour, at least the lease, at most 30 days', () => {
    expect(loadConfig({}).config.timeoutMs).toBe(3_600_000);
    expect(loadConfig({ LEASEHOLD_JOB_TIMEOUT_MS: '120000' }).config.timeoutMs).toBe(120_000);
    expect(loadConfig({}, ['--job-timeout-ms', '90000']).config.timeoutMs).toBe(90_000);
    const refused = (env: Record<string, string>) => {
      try {
        loadConfig(env);
      } catch (err) {
        return (err as Error).message;
      }
      return 'accepted';
    };
    expect(refused({ LEASEHOLD_JOB_TIMEOUT_MS: '0' })).toMatch(/LEASEHOLD_JOB_TIMEOUT_MS: must be greater than zero/);
    expect(refused({ LEASEHOLD_JOB_TIMEOUT_MS: '10000', LEASEHOLD_LEASE_MS: '30000' })).toMatch(/LEASEHOLD_JOB_TIMEOUT_MS: must be at least the lease \(30000 ms\)/);
    expect(refused({ LEASEHOLD_JOB_TIMEOUT_MS: String(31 * 24 * 3_600_000) })).toMatch(/LEASEHOLD_JOB_TIMEOUT_MS: must be at most 2592000000 ms/);
  });
});

describe('stalled jobs', () => {
  test('a job that heartbeats without progress past its queue stallMs is shown as stalled and fires stalled_jobs; progress clears it', async () => {
    t = await setup({ leaseMs: 30_000, heartbeatMs: 5_000, alertEveryMs: 1 });
    expect((await t.call('PATCH', `${api}/queues/q/settings`, { stallMs: 60_000 })).json.queue.settings.stallMs).toBe(60_000);
    await t.call('PATCH', `${api}/queues/other/settings`, { stallMs: null });
    const e = await t.enqueue('q');
    const quiet = await t.enqueue('other');
    const [c] = await t.claim('q', 'w1');
    const [o] = await t.claim('other', 'w2');
    const firing = async () => ((await t.get(`${api}/alerts`)).json.alerts as { name: string; queue: string; state: string; message: string }[]).filter((a) => a.name === 'stalled_jobs');
    // Heartbeats with the same progress for 70 s: alive, but not moving.
    for (let i = 0; i < 14; i++) {
      t.clock.advance(5_000);
      expect((await hb(e.id, c!.lockToken, { progress: { step: 1 } })).status).toBe(200);
      expect((await t.post(`${api}/jobs/${quiet.id}/heartbeat`, { workerId: 'w2', lockToken: o!.lockToken })).status).toBe(200);
    }
    // The first heartbeat (t = 5 s) set progress; it has not changed for 65 s since.
    const zombies = (await t.get('/dashboard/zombies')).text;
    expect(zombies).toContain(`zombie-${e.id}`);
    expect(zombies).toContain("stalled 1 m 5 s");
    expect(zombies).not.toContain(`zombie-${quiet.id}`);
    const page = (await t.get(`/dashboard/jobs/${e.id}`)).text;
    expect(page).toMatch(/stalled: no progress for/);
    const alerts = await firing();
    expect(alerts.find((a) => a.queue === 'q')).toMatchObject({ state: 'firing' });
    expect(alerts.find((a) => a.queue === 'q')!.message).toContain(`: ${e.id}`);
    expect(alerts.find((a) => a.queue === 'other')).toMatchObject({ state: 'ok' });
    // The queue's settings on the metrics page: its time limit and stall setting, and what is stalled now.
    const metrics = (await t.get('/dashboard/metrics')).text;
    expect(metrics).toContain('1 h 0 m · stall after 1 m 0 s · 1 stalled now');
    expect(metrics).toContain('1 h 0 m · stall after off');
    // Progress moves: no longer stalled.
    t.clock.advance(1_000);
    expect((await hb(e.id, c!.lockToken, { progress: { step: 2 } })).status).toBe(200);
    expect((await firing()).find((a) => a.queue === 'q')).toMatchObject({ state: 'ok' });
    expect((await t.get('/dashboard/zombies')).text).not.toContain(`zombie-${e.id}`);
  });

  test('a checkpoint change counts as progress; a job whose lease lapsed is a zombie, not stalled', async () => {
    t = await setup({ leaseMs: 30_000, heartbeatMs: 5_000 });
    await t.call('PATCH', `${api}/queues/q/settings`, { stallMs: 20_000 });
    const e = await t.enqueue('q');
    const [c] = await t.claim('q', 'w1');
    const stalledIds = async () => ((await t.get(`${api}/alerts`)).json.alerts as { name: string; queue: string; state: string; value: number }[]).find((a) => a.name === 'stalled_jobs' && a.queue === 'q')!;
    t.clock.advance(15_000);
    expect((await t.post(`${api}/jobs/${e.id}/checkpoint`, { workerId: 'w1', lockToken: c!.lockToken, checkpoint: { at: 1 } })).status).toBe(200);
    t.clock.advance(15_000);
    expect((await hb(e.id, c!.lockToken)).status).toBe(200);
    expect(await stalledIds()).toMatchObject({ state: 'ok', value: 0 });
    t.clock.advance(10_000); // 25 s since the checkpoint
    expect((await hb(e.id, c!.lockToken)).status).toBe(200);
    expect(await stalledIds()).toMatchObject({ state: 'firing', value: 1 });
    t.clock.advance(31_000); // the lease lapses: the reaper's business now
    expect(await stalledIds()).toMatchObject({ state: 'ok', value: 0 });
  });
});

describe.each(['in-process', 'http'] as const)('the worker SDK over %s', (kind) => {
  // Real time: a 2 s lease, beats every 0.4 s, and a 3 s server-wide job timeout. (The
  // worker fences itself a tenth of the lease early: a 1 s lease left a loaded machine
  // too little time for its renewals, and the fence came before the deadline.)
  const SHORT: Partial<Config> = { leaseMs: 2_000, heartbeatMs: 400, graceMs: 800, workerAliveMs: 1_200, maxReapDeferMs: 800, timeoutMs: 3_000, backoffBaseMs: 50, backoffMaxMs: 100 };
  let server: RunningServer | undefined;
  let w: Worker | undefined;
  afterEach(async () => {
    await w?.close({ drainTimeoutMs: 0 });
    await server?.close();
    w = undefined;
    server = undefined;
  });

  async function transportFor(): Promise<Transport> {
    t = await setup(SHORT, { realClock: databaseClock });
    if (kind === 'in-process') return dbTransport(t.engine);
    server = await startServer(defaultConfig({ ...SHORT, databaseUrl: t.url, port: 0 }), { reaper: false, log: silentLogger });
    return httpTransport({ url: server.url });
  }

  async function hungJob(transport: Transport) {
    const res = await t.app.request('/api/v1/queues/q/jobs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ payload: {}, maxAttempts: 1 }) });
    const id = ((await res.json()) as { job: { id: string } }).job.id;
    let reason: JobAbortedError | undefined;
    w = createWorker({
      transport,
      queue: 'q',
      pollMs: 20,
      maxPollMs: 100,
      handleSignals: false,
      logger: { info() {}, warn() {}, error() {} },
      // A hung handler: it heartbeats (the SDK's timer does) but never finishes until aborted.
      handler: (ctx) =>
        new Promise((_, reject) =>
          ctx.signal.addEventListener('abort', () => {
            reason = ctx.signal.reason as JobAbortedError;
            reject(ctx.signal.reason);
          }),
        ),
    }).start();
    const status = async () => String((await t.client.execute({ sql: 'SELECT status FROM jobs WHERE id = ?', args: [Number(id)] })).rows[0]!.status);
    await until('the job fails', async () => (await status()) === 'failed', 10_000);
    return { reason };
  }

  test('a hung handler with no timeout of its own is aborted with deadline_exceeded at the default timeout', async () => {
    const { reason } = await hungJob(await transportFor());
    expect(reason).toBeInstanceOf(JobAbortedError);
    expect(reason!.reason).toBe('deadline_exceeded');
  });

  test('told by the server (a refused heartbeat with cause deadline_exceeded), the SDK aborts with deadline_exceeded', async () => {
    const inner = await transportFor();
    // The claim answer without its time limit: the worker has no local deadline timer, so only
    // the server's refusal can tell it.
    const transport: Transport = { ...inner, claim: async (p) => {
        const answer = await inner.claim(p);
        return { ...answer, jobs: answer.jobs.map((j) => ({ ...j, timeoutMs: null, deadlineAt: null })) };
      } };
    const { reason } = await hungJob(transport);
    expect(reason!.reason).toBe('deadline_exceeded');
    expect(reason!.message).toMatch(/deadline/);
  });
});
