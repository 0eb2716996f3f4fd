/**
 * A step of the wall clock the leases use, under a real SDK worker on the
 * defaults (lease 30 s, heartbeat 5 s, grace 10 s, reaper every 5 s).
 *
 * Time is fake and split in two, as on a real host: a monotonic clock (the
 * worker's timers and the server's gap watch) and the server's wall clock,
 * which is the monotonic one plus an offset the test steps while the
 * monotonic clock does not move. The server's reaper is the real one
 * (makeReaperPass with its gap watch), ticked every 5 s of monotonic time.
 *
 * - forward +5 min: every lease looks 5 minutes old at once; the reaper took
 *   all four live jobs at its next pass. Now it holds them until the owner has
 *   renewed on the new clock.
 * - backward -5 min and the worker gone right after: its lease, renewed on
 *   the clock that was ahead, ran 5 minutes longer. Now the job comes back at
 *   about lease + grace + a reaper interval of the new clock.
 */
import { afterEach, expect, test } from 'vitest';
import { manualClock, type Clock } from '../../src/core/clock.ts';
import { dbTransport } from '../../src/embedded/db-transport.ts';
import { gapWatch } from '../../src/runtime/gap-watch.ts';
import { makeReaperPass, type ReaperPass } from '../../src/runtime/reaper-timer.ts';
import { createWorker, type Transport, type Worker } from '../../src/worker/index.ts';
import type { LogRecord } from '../../src/core/log.ts';
import { runMaintenancePass } from '../../src/maintenance/pass.ts';
import { fakeTimers, type FakeTimers } from '../support/fake-timers.ts';
import { recordingLogger, setup, type TestBed } from '../support/helpers.ts';

const quiet = { info() {}, warn() {}, error() {} };
const STEP_MS = 5 * 60_000;

let t: TestBed;
let timers: FakeTimers;
let worker: Worker | undefined;
afterEach(async () => {
  if (worker) {
    let closed = false;
    void worker.close({ drainTimeoutMs: 0 }).finally(() => (closed = true));
    await timers.advanceUntil('worker closed', () => closed, { maxMs: 120_000 });
  }
  worker = undefined;
  t.close();
});

/** A bed on the defaults: monotonic time for the worker and the gap watch, the wall clock = monotonic + offset for the server. */
async function splitClockBed() {
  const mono = manualClock();
  const wall = { offset: 0 };
  const serverClock: Clock = { now: () => mono.now() + wall.offset };
  t = await setup({}, { realClock: serverClock });
  expect(t.config).toMatchObject({ leaseMs: 30_000, heartbeatMs: 5_000, graceMs: 10_000, reaperIntervalMs: 5_000 });
  timers = fakeTimers(mono);
  const logs: LogRecord[] = [];
  const pass = makeReaperPass(t.engine, recordingLogger(logs), gapWatch(t.config, () => mono.now()));
  await pass.noteStart();
  return { mono, wall, pass, logs, now: () => serverClock.now() as number };
}

/** `ms` of monotonic time: the worker's timers fire on the way, and the reaper ticks every interval. */
async function run(pass: ReaperPass, ms: number, each?: () => Promise<boolean>) {
  for (let spent = 0; spent < ms; spent += t.config.reaperIntervalMs) {
    await timers.advance(t.config.reaperIntervalMs);
    await pass('interval');
    if (each && (await each())) return spent + t.config.reaperIntervalMs;
  }
  return undefined;
}

/** A handler that runs until released, counting the aborts it sees. */
function parked() {
  const aborted: string[] = [];
  const releases: (() => void)[] = [];
  const handler = (ctx: { signal: AbortSignal }) =>
    new Promise<string>((resolve) => {
      releases.push(() => resolve('done'));
      ctx.signal.addEventListener('abort', () => {
        aborted.push(String((ctx.signal.reason as Error)?.message ?? ctx.signal.reason));
        resolve('aborted');
      });
    });
  return { handler, aborted, releases };
}

const row = async (id: string) => (await t.get(`/api/v1/jobs/${id}`)).json as { job: { status: string; attempt: number }; events: { type: string; reason: string | null; message?: string | null }[] };

test('a forward step of 5 min: the reaper holds until the heartbeating owner renewed on the new clock, and takes none of its 4 jobs', async () => {
  const bed = await splitClockBed();
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) ids.push((await t.enqueue('q', { payload: i })).id);
  const p = parked();
  worker = createWorker({ transport: dbTransport(t.engine), queue: 'q', concurrency: 4, handleSignals: false, logger: quiet, timers, claimWaitMs: 0, handler: p.handler });
  void worker.start();
  await timers.advanceUntil('4 jobs running', async () => p.releases.length === 4);
  // Past the start's hold, heartbeating all along.
  await run(bed.pass, 30_000);

  // The wall clock steps 5 minutes forward; the monotonic clock does not move. The reaper's tick comes first.
  bed.wall.offset += STEP_MS;
  await bed.pass('interval');
  await run(bed.pass, 60_000);

  for (const id of ids) {
    const r = await row(id);
    expect(r.job).toMatchObject({ status: 'running', attempt: 1 });
    expect(r.events.map((e) => e.type)).not.toContain('reaped');
  }
  expect(p.aborted).toEqual([]);
  // Recorded and said: the hold's cause on the jobs it held, and the log line.
  const held = (await row(ids[0]!)).events.filter((e) => e.type === 'reap_held');
  expect(held.length).toBeGreaterThan(0);
  expect(held[0]!.message).toContain('the clock the leases use stepped forward 300.0 s');
  expect(bed.logs.find((l) => l.event === 'clock_step')).toMatchObject({ level: 'warn', direction: 'forward', stepMs: STEP_MS });

  for (const release of p.releases) release();
  await timers.advanceUntil('all completed', async () => {
    for (const id of ids) if ((await row(id)).job.status !== 'completed') return false;
    return true;
  });
  expect(t.errors).toEqual([]);
});

/**
 * The passes after the step: the server's own reaper, or passes that keep no
 * memory of the clock (`leasehold reap`, the Workers cron, a server restarted
 * after the step): the database shows the step to every one of them.
 */
const afterStep = [
  ['the server\'s reaper', (bed: Awaited<ReturnType<typeof splitClockBed>>) => bed.pass],
  ['a pass with no memory of the clock (leasehold reap, the Workers cron)', (bed: Awaited<ReturnType<typeof splitClockBed>>) => Object.assign(async () => void (await runMaintenancePass(t.db, bed.now(), t.config)), { noteStart: async () => undefined }) as ReaperPass],
] as const;

test.each(afterStep)('a backward step of 5 min, the worker gone right after, passes by %s: its job comes back at lease + grace + a reaper interval of the new clock, not 5 min late', async (by, passAfterStep) => {
  const bed = await splitClockBed();
  const id = (await t.enqueue('q', { payload: 'x' })).id;
  const p = parked();
  // The worker dies: from then on none of its calls reaches the server.
  let dead = false;
  const live = dbTransport(t.engine);
  const transport = new Proxy(live, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => (dead ? Promise.reject(new Error('connection refused (the worker is gone)')) : (value as (...a: unknown[]) => unknown).apply(target, args));
    },
  }) as Transport;
  worker = createWorker({ transport, queue: 'q', handleSignals: false, logger: quiet, timers, claimWaitMs: 0, handler: p.handler });
  void worker.start();
  await timers.advanceUntil('running', async () => p.releases.length === 1);
  await run(bed.pass, 30_000);

  bed.wall.offset -= STEP_MS;
  dead = true;
  const stepAt = bed.now();
  const recoveredAfter = await run(passAfterStep(bed), 120_000, async () => (await row(id)).job.status !== 'running');
  expect(recoveredAfter, 'the job was still running 120 s after the step').toBeDefined();
  // lease 30 s + grace 10 s, and the reaper's interval: the pass after that takes it.
  expect(recoveredAfter!).toBeLessThanOrEqual(t.config.leaseMs + t.config.graceMs + 2 * t.config.reaperIntervalMs);
  const r = await row(id);
  expect(r.job.status).toBe('pending');
  expect(r.events.find((e) => e.type === 'reaped')?.reason).toBe('reaped_due_to_expired_lease');
  expect(bed.now() - stepAt).toBe(recoveredAfter);
  if (by === afterStep[0][0]) {
    expect(bed.logs.find((l) => l.event === 'clock_step')).toMatchObject({ direction: 'backward', stepMs: STEP_MS });
    expect(bed.logs.find((l) => l.event === 'reaper_pass' && /the clock had stepped back/.test(l.msg))?.msg).toMatch(/1 running lease counted from now/);
  }
  expect(t.errors).toEqual([]);
});
