/**
 * createWorker: a worker composed of five parts, each in its own file.
 *
 * - claim-loop.ts: claims in batches up to the run queue's room, waits on
 *   the server (or polls with backoff) when idle.
 * - run-queue.ts: the handler slots, and the few jobs claimed ahead that wait
 *   for one (bounded by the lease, so fast handlers are not held up by a
 *   round trip per batch and slow ones claim nothing ahead).
 * - lease-keeper.ts: one heartbeat timer, apart from the handlers, renews all
 *   of the worker's leases and beats the worker's liveness row in one call;
 *   it aborts a job's signal when a renewal is refused (`lease_lost`), when
 *   the lease runs out locally without a successful renewal (self-fencing,
 *   by a timer of its own, a tenth of the lease early: before the reaper
 *   could hand the job to someone else), and at the job's deadline.
 *   `signal.reason` is a JobAbortedError.
 * - call-budget.ts: no call that carries leases waits longer than they last.
 * - completer.ts: completions of handlers that finish together go in one
 *   call; a handler that ignored its signal still cannot write (the token
 *   refuses it), and the attempt is reported as `abandoned`.
 * - job-context.ts: what the handler gets (ctx).
 * - tracing.ts: a `process <queue>` span per attempt (OpenTelemetry, a no-op
 *   without a tracer provider), active inside the handler, ended with the
 *   attempt's outcome.
 *
 * This file wires them and owns the lifecycle: start, and close (drain, then
 * abort and release what is left, in one call).
 *
 * Local time is `performance.now()` (monotonic), or the `timers` option's
 * clock. Lease deadlines are the server's; the worker only keeps a
 * conservative local copy: a renewal sent at local time t is good until at
 * least t + lease.
 */
import { createClaimLoop } from './claim-loop.ts';
import { classify, createCompleter, RELEASE_RETRY_MS, type Outcome } from './completer.ts';
import { abortJob, createEmitter, type Held, type Running, type WorkerState, type WorkerStats } from './held.ts';
import { createJobContext } from './job-context.ts';
import { createLeaseKeeper } from './lease-keeper.ts';
import { checkLeaseTimings } from './lease-rules.ts';
import { createRunQueue } from './run-queue.ts';
import { createAttemptSpans } from './tracing.ts';
import { createServerWatch } from './server-watch.ts';
import { consoleLogger, describe, withFields } from './log.ts';
import { defaultWorkerId, onProcessSignals, processIdentity, randomHex } from './process.ts';
import { after, realTimers, sleep } from './timers.ts';
import type { ClaimedJob } from './transport.ts';
import type { WorkerEvents, WorkerOptions } from './types.ts';
import { VERSION } from '../version.ts';
import { textProblem } from '../core/text.ts';

export type { Handler, JobContext, LogFields, Logger, WorkerEvents, WorkerOptions } from './types.ts';
export { defaultWorkerId } from './process.ts';

export type Worker = ReturnType<typeof createWorker>;

/** A duration for a log line: "10 s", "1.5 s", "250 ms". */
const seconds = (ms: number) => (ms < 1_000 ? `${Math.round(ms)} ms` : `${Number((ms / 1_000).toFixed(1))} s`);

/** The heartbeat interval when neither heartbeatMs nor a short leaseMs says otherwise. */
const DEFAULT_HEARTBEAT_MS = 5_000;

export function createWorker<P = unknown>(options: WorkerOptions<P>) {
  const queues = Array.isArray(options.queue) ? options.queue : [options.queue];
  const drainTimeoutMs = options.drainTimeoutMs ?? 10_000;
  const identity = { version: VERSION, ...processIdentity(), ...options.identity };
  const workerId = options.workerId ?? defaultWorkerId(identity);
  // This process's claims, apart from any earlier process that used the same
  // worker id: after a crash and restart, the server no longer counts the old
  // claims as alive, so their jobs are taken back without the reaper's wait.
  const instanceId = randomHex(8);
  // Refused here, at once, rather than by every call the server gets later.
  for (const [what, value] of [['workerId', workerId], ...queues.map((q) => ['queue', q])] as const) {
    const problem = textProblem(value);
    if (problem) throw new TypeError(`createWorker: ${what} ${JSON.stringify(value)} ${problem}`);
  }
  // A negative or fractional count would shrink the worker's room below its slots and stall it.
  for (const [what, value, least] of [['concurrency', options.concurrency, 1], ['claimBatch', options.claimBatch, 1], ['claimAhead', options.claimAhead, 0]] as const) {
    if (value !== undefined && !(Number.isInteger(value) && value >= least)) throw new TypeError(`createWorker: ${what} must be an integer of at least ${least}, got ${String(value)}`);
  }
  // The lease rules a worker's own timings can break (lease-rules.ts); the
  // ones that involve the server's lease are said when a claim brings it.
  if (options.leaseMs !== undefined && options.heartbeatMs !== undefined) {
    const { errors } = checkLeaseTimings({ leaseMs: options.leaseMs, heartbeatMs: options.heartbeatMs });
    if (errors.length > 0) throw new TypeError(`createWorker: ${errors.join('; ')}`);
  }
  const logger = withFields(options.logger ?? consoleLogger(workerId), { workerId });
  // A lease given without a heartbeat gets one that keeps the rules (a third
  // of it, as the server tells workers in each claim), not the 5 s default.
  const defaultHeartbeatMs = options.leaseMs === undefined ? DEFAULT_HEARTBEAT_MS : Math.min(DEFAULT_HEARTBEAT_MS, Math.floor(options.leaseMs / 3));
  if (options.heartbeatMs === undefined && defaultHeartbeatMs !== DEFAULT_HEARTBEAT_MS) {
    logger.info(`heartbeat every ${defaultHeartbeatMs} ms: heartbeatMs not given, a third of leaseMs (${options.leaseMs} ms)`, { heartbeatMs: defaultHeartbeatMs, leaseMs: options.leaseMs });
  }
  const events = createEmitter(() => logger);
  const stats: WorkerStats = { claimed: 0, completed: 0, failed: 0, snoozed: 0, abandoned: 0, leaseLost: 0, eventLoopBlocked: 0, longestEventLoopBlockMs: 0, heartbeatFailures: 0 };
  let state: WorkerState = 'new';
  /** Claim requests sent so far: each gets its own id (the instance id and this count). */
  let claimsSent = 0;
  const timersOf = options.timers ?? realTimers;
  const w: Held = {
    transport: options.transport,
    workerId,
    instanceId,
    queues,
    timers: timersOf,
    logger,
    server: createServerWatch(logger, () => timersOf.now()),
    emit: events.emit,
    stats,
    active: new Map(),
    lostClaims: new Set(),
    nextClaimId: () => `${instanceId}-${++claimsSent}`,
    state: () => state,
  };
  const { timers, active, emit } = w;
  const stopping = new AbortController();

  const keeper = createLeaseKeeper(w, { heartbeatMs: options.heartbeatMs, defaultHeartbeatMs, identity });
  const spans = createAttemptSpans(w, events.on);
  const concurrency = options.concurrency ?? 1;
  const claimBatch = options.claimBatch ?? 200;
  const runQueue = createRunQueue({
    concurrency,
    maxAhead: options.claimAhead ?? Math.max(0, claimBatch - concurrency),
    now: () => timers.now(),
    run: runHandler,
    drop(r) {
      // Its lease was lost (announced as lease_lost) or its deadline passed while it waited: not ours to run.
      const cause = r.abortedBy?.reason;
      stats.abandoned++;
      emit('abandoned', { job: r.job, reason: cause === 'deadline_exceeded' ? 'deadline passed before it started' : 'lease lost before it started' });
      keeper.untrack(r);
      claims.wake();
    },
  });
  const claims = createClaimLoop(w, {
    room: () => runQueue.room(),
    roomForOwnClaim: () => runQueue.roomForOwnClaim(),
    claimBatch,
    pollMs: options.pollMs ?? 500,
    maxPollMs: options.maxPollMs ?? 10_000,
    claimWaitMs: options.claimWaitMs ?? 5_000,
    leaseMs: options.leaseMs,
    stopping: stopping.signal,
    start: acceptJob,
    releaseUnstarted: (jobs) => completer.releaseUnstarted(jobs),
    onTokenRefused(err) {
      stoppedBy = err;
      void close();
    },
  });
  const completer = createCompleter(w, claims.riding);
  let claimLoopDone: Promise<void> = Promise.resolve();
  let closed: Promise<void> = Promise.resolve();
  let stoppedBy: unknown;
  const removeSignalHandlers = options.handleSignals === false ? () => {} : onProcessSignals(() => void close());

  /** A claimed job: its lease is kept from now, and it runs when a slot is free. */
  function acceptJob(job: ClaimedJob, sentAt: number) {
    stats.claimed++;
    const r = keeper.track(job, sentAt);
    emit('claimed', { job });
    runQueue.push(r);
  }

  /**
   * Runs a job's handler; its slot is free once the handler returns. How it
   * ended is then reported on its own, and the lease is kept until the server
   * has answered.
   */
  async function runHandler(r: Running): Promise<void> {
    let outcome: Outcome;
    try {
      outcome = { kind: 'complete', result: await spans.run(r, () => options.handler(createJobContext<P>(w, keeper, r))) };
    } catch (err) {
      outcome = classify(err);
    }
    void completer.finish(r, outcome).finally(() => {
      keeper.untrack(r);
      claims.wake();
    });
  }

  function start() {
    if (state !== 'new') return worker;
    state = 'running';
    void keeper.beat(0).catch((err) => emit('error', { error: err, during: 'beat' }));
    keeper.start();
    claimLoopDone = claims.run().catch((err) => {
      logger.error(`claim loop stopped: ${describe(err)}`, { error: describe(err) });
      emit('error', { error: err, during: 'claim' });
    });
    return worker;
  }

  /**
   * Stops claiming, lets running jobs finish for up to `drainTimeoutMs`, then
   * aborts the rest and releases their leases (in one call) so they run again at once.
   */
  async function close(opts: { drainTimeoutMs?: number } = {}): Promise<void> {
    if (state === 'stopped' || state === 'stopping') return closed;
    const wasRunning = state === 'running';
    state = 'stopping';
    stopping.abort();
    claims.wake();
    // Jobs claimed ahead that have not started go back at once, without running.
    const unstarted = runQueue.takeWaiting();
    closed = (async () => {
      if (unstarted.length > 0) {
        await completer.releaseUnstarted(unstarted.map((r) => r.job));
        for (const r of unstarted) keeper.untrack(r);
      }
      if (wasRunning) await claimLoopDone;
      const drainMs = opts.drainTimeoutMs ?? drainTimeoutMs;
      const waitedFrom = timers.now();
      const deadline = waitedFrom + drainMs;
      // Said, so a Ctrl-C that seems to hang is seen to wait, for what and how long.
      const draining = [...active.keys()];
      if (draining.length > 0) {
        logger.info(`shutting down: waiting up to ${seconds(drainMs)} for ${draining.length} running job(s) to finish (${draining.join(', ')}); then the rest are stopped and their leases released`, {
          jobIds: draining,
          drainTimeoutMs: drainMs,
        });
      }
      while (active.size > 0 && timers.now() < deadline) await sleep(timers, Math.min(50, deadline - timers.now()));
      // A job whose result is already on its way is not released: that would
      // either be refused or, winning the race, run a finished job again.
      const leftover = [...active.values()].filter((r) => !r.finishing);
      if (draining.length > 0 && leftover.length === 0) {
        logger.info(`shutting down: the running jobs finished in ${seconds(timers.now() - waitedFrom)}`, { jobIds: draining, waitedMs: Math.round(timers.now() - waitedFrom) });
      } else if (leftover.length > 0) {
        const ids = leftover.map((r) => r.job.id);
        logger.warn(`shutting down: ${ids.length} job(s) still running after ${seconds(drainMs)} (${ids.join(', ')}): stopping them and releasing their leases, so they run again at once`, {
          jobIds: ids,
          drainTimeoutMs: drainMs,
        });
      }
      state = 'stopped';
      keeper.stop();
      for (const r of leftover) abortJob(w, r, 'shutdown', `worker ${workerId} is shutting down`);
      const released = [...completer.releasedUnstarted, ...(await completer.release(leftover.map((r) => ({ id: r.job.id, lockToken: r.job.lockToken }))))];
      // Results in flight get their answer (bounded: their own retries stop when the lease ends).
      const settled = after(timers, RELEASE_RETRY_MS);
      while ([...active.values()].some((r) => r.finishing) && !settled()) await sleep(timers, 20);
      await keeper.beat(0).catch(() => {});
      removeSignalHandlers();
      emit('stopped', stoppedBy === undefined ? { released } : { released, error: stoppedBy });
    })();
    return closed;
  }

  const worker = {
    id: workerId,
    /** This process's instance id (random per createWorker): the server tells a restart from the same worker by it. */
    instanceId,
    start,
    close,
    /** Counts since start: claimed, completed, failed, abandoned, leaseLost, eventLoopBlocked (and the longest, in ms), heartbeatFailures. Beats report the last four to the server. */
    stats,
    /** Jobs the worker holds: running, claimed ahead and waiting for a slot, or with their result on its way. */
    get running() {
      return active.size;
    },
    on<K extends keyof WorkerEvents>(event: K, fn: (e: WorkerEvents[K]) => void) {
      events.on(event, fn);
      return worker;
    },
  };
  return worker;
}
