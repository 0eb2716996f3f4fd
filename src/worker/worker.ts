/**
 * createWorker: the claim loop, the heartbeat loop and the job's AbortSignal.
 *
 * - Claims in batches up to its free slots; never holds more jobs than slots.
 * - One heartbeat timer, apart from the handlers, renews all of the worker's
 *   leases in one call and beats the worker's liveness row.
 * - A job's signal is aborted when a heartbeat is refused (`lease_lost`), when
 *   the lease runs out locally without a successful renewal (self-fencing:
 *   before the reaper could hand the job to someone else), at the job's
 *   deadline, and at shutdown. `signal.reason` is a JobAbortedError.
 * - A handler that ignores its signal still cannot write: its completion is
 *   refused by the token, and the worker reports the attempt as `abandoned`.
 * - Completions of handlers that finish together go in one call.
 *
 * Local time here is `performance.now()` (monotonic). Lease deadlines are the
 * server's; the worker only keeps a conservative local copy: a renewal sent at
 * local time t is good until at least t + lease.
 */
import { JobAbortedError, NonRetryableError, RetryAfter, type AbortCause } from './errors.ts';
import type { ClaimedJob, LeaseAnswer, Transport } from './transport.ts';
import { TokenRefusedError, TransportError } from './transport.ts';
import { VERSION } from '../version.ts';
import { storableText, textProblem } from '../core/text.ts';

export interface JobContext<P = unknown> {
  job: {
    id: string;
    queue: string;
    payload: P;
    attempt: number;
    maxAttempts: number;
    priority: number;
    /** What an earlier attempt saved with checkpoint(), or null. */
    checkpoint: unknown;
    progress: unknown;
  };
  /** Aborted on lease loss, deadline or shutdown; `signal.reason` says which. */
  signal: AbortSignal;
  /** Stable across attempts: pass it to downstream systems to deduplicate. */
  idempotencyKey: string;
  /** Grows with every claim of this job: downstream systems can refuse writes from an older claim. */
  fencingToken: number;
  /** Renews the lease now (the heartbeat loop does it anyway), optionally with progress. */
  heartbeat(progress?: unknown): Promise<void>;
  /** Saves state the next attempt starts from (ctx.job.checkpoint). */
  checkpoint(data: unknown): Promise<void>;
  /** Sets the lease to `ms` from now, before a long step that cannot heartbeat. */
  extendLease(ms: number): Promise<void>;
  /**
   * Runs `fn` at most once per (job, key) across attempts, and returns its
   * recorded result on later attempts. A crash (or lost lease) after `fn`
   * ran but before its result was recorded runs it again: pass
   * `idempotencyKey` to the downstream system as well.
   */
  once<T>(key: string, fn: () => T | Promise<T>): Promise<T>;
}

export type Handler<P = unknown> = (ctx: JobContext<P>) => unknown;

export interface WorkerEvents {
  claimed: { job: ClaimedJob };
  completed: { job: ClaimedJob; result: unknown };
  failed: { job: ClaimedJob; error: unknown; retryable: boolean };
  lease_lost: { job: ClaimedJob; reason: AbortCause; message: string };
  heartbeat_failed: { error: unknown; jobs: string[] };
  abandoned: { job: ClaimedJob; reason: string };
  event_loop_blocked: { delayMs: number; jobs: string[] };
  error: { error: unknown; during: string };
  /** `error`: why the worker stopped by itself (its token was refused), when it did. */
  stopped: { released: string[]; error?: unknown };
}

/** What a log call carries besides its message: workerId, jobId / jobIds, error, ... */
export type LogFields = Record<string, unknown>;

/**
 * Where the worker reports what it cannot throw (a failed claim it retries,
 * a late heartbeat, a lease lost). Each call gets a message and structured
 * fields (always `workerId`; `jobId`/`jobIds`, `error`, durations where they
 * apply), so a JSON logger can index them. `console` fits as is (it prints
 * the fields after the message), and so does leasehold's own Logger
 * (createLogger in the `leasehold` entry). A logger written for the old
 * one-argument form keeps working: it just ignores the fields.
 */
export interface Logger {
  debug?(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

export interface WorkerOptions<P = unknown> {
  transport: Transport;
  /** One queue, or several served round-robin. */
  queue: string | string[];
  handler: Handler<P>;
  /** Jobs run at once. Default 1. */
  concurrency?: number;
  /** Lease to ask for; default: the queue's. */
  leaseMs?: number;
  /** Heartbeat interval; default: what the server says in each claim. */
  heartbeatMs?: number;
  /** Poll interval when idle; doubles while idle up to maxPollMs, with jitter. Default 500. */
  pollMs?: number;
  maxPollMs?: number;
  /** Most jobs per claim call. Default 50. */
  claimBatch?: number;
  /** Default: host-pid-random. */
  workerId?: string;
  /** How long close() lets running jobs finish before it aborts them and releases their leases. Default 10 s. */
  drainTimeoutMs?: number;
  /** Close on SIGTERM / SIGINT (where the runtime has process signals). Default true. */
  handleSignals?: boolean;
  logger?: Logger;
  /** Reported in the worker registry. */
  identity?: { host?: string; pid?: number; version?: string };
}

interface Running {
  job: ClaimedJob;
  controller: AbortController;
  leaseMs: number;
  /** Local time until which the lease is surely still ours. */
  leaseValidUntil: number;
  progress: unknown;
  deadlineTimer: ReturnType<typeof setTimeout> | undefined;
  /** The handler has returned and its completion or failure is being sent: shutdown must not release it. */
  finishing: boolean;
}

type Outcome = { kind: 'complete'; result: unknown } | { kind: 'fail'; error: string; retryable: boolean; retryAfterMs?: number | undefined; raw: unknown };

const now = () => performance.now();
/** How long shutdown keeps trying to give leases back before leaving them to expire. */
const RELEASE_RETRY_MS = 5_000;
/** Waits `ms`, or less if `signal` aborts; never leaves a listener behind on the signal. */
const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });

export function defaultWorkerId(identity: { host?: string; pid?: number } = {}): string {
  const random = Array.from(crypto.getRandomValues(new Uint8Array(4)), (b) => b.toString(16).padStart(2, '0')).join('');
  return `${identity.host ?? 'worker'}-${identity.pid ?? 0}-${random}`;
}

export type Worker = ReturnType<typeof createWorker>;

export function createWorker<P = unknown>(options: WorkerOptions<P>) {
  const transport = options.transport;
  const queues = Array.isArray(options.queue) ? options.queue : [options.queue];
  const concurrency = options.concurrency ?? 1;
  const claimBatch = options.claimBatch ?? 50;
  const pollMs = options.pollMs ?? 500;
  const maxPollMs = options.maxPollMs ?? 10_000;
  const drainTimeoutMs = options.drainTimeoutMs ?? 10_000;
  const identity = { version: VERSION, ...processIdentity(), ...options.identity };
  const workerId = options.workerId ?? defaultWorkerId(identity);
  // This process's claims, apart from any earlier process that used the same
  // worker id: after a crash and restart, the server no longer counts the old
  // claims as alive, so their jobs are taken back without the reaper's wait.
  const instanceId = Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, '0')).join('');
  // Refused here, at once, rather than by every call the server gets later.
  for (const [what, value] of [['workerId', workerId], ...queues.map((q) => ['queue', q])] as const) {
    const problem = textProblem(value);
    if (problem) throw new TypeError(`createWorker: ${what} ${JSON.stringify(value)} ${problem}`);
  }
  const logger = withFields(options.logger ?? consoleLogger(workerId), { workerId });

  const active = new Map<string, Running>();
  const listeners = new Map<keyof WorkerEvents, Set<(e: never) => void>>();
  const stopping = new AbortController();
  let state: 'new' | 'running' | 'stopping' | 'stopped' = 'new';
  let wakeClaimLoop: () => void = () => {};
  let claimLoopDone: Promise<void> = Promise.resolve();
  let heartbeatTimer: ReturnType<typeof setTimeout> | undefined;
  let heartbeatTicking = false;
  let heartbeatInterval = options.heartbeatMs ?? 5_000;
  let nextQueue = 0;
  const stats = { claimed: 0, completed: 0, failed: 0, abandoned: 0, leaseLost: 0, eventLoopBlocked: 0, heartbeatFailures: 0 };
  let pendingCompletions: { running: Running; result: unknown }[] = [];
  /** Jobs a claim brought back after close() began: released without running. */
  const releasedInFlight: string[] = [];
  /** Slots promised to a claim in flight (the claim loop's, or one riding on a completion). */
  let reserved = 0;
  let completionFlush: Promise<void> | undefined;
  const removeSignalHandlers = options.handleSignals === false ? () => {} : onProcessSignals(() => void close());

  function emit<K extends keyof WorkerEvents>(event: K, payload: WorkerEvents[K]) {
    for (const fn of listeners.get(event) ?? []) {
      try {
        (fn as (e: WorkerEvents[K]) => void)(payload);
      } catch (err) {
        logger.error(`listener for ${event} threw: ${String(err)}`, { event, error: describe(err) });
      }
    }
  }

  function abort(r: Running, reason: AbortCause, message: string) {
    if (r.controller.signal.aborted) return;
    r.controller.abort(new JobAbortedError(reason, message));
    if (reason === 'lease_lost' || reason === 'lease_expired_locally') {
      stats.leaseLost++;
      emit('lease_lost', { job: r.job, reason, message });
    }
  }

  /** A refused write: the server says whether the attempt ran out of time or the lease is gone. */
  function refusedAbort(r: Running, a: Extract<LeaseAnswer, { ok: false }>) {
    abort(r, a.cause === 'deadline_exceeded' ? 'deadline_exceeded' : 'lease_lost', a.message);
  }

  /** Applies the server's answers to a renewal sent at local time `sentAt`. */
  function applyLeaseAnswers(answers: LeaseAnswer[], sentAt: number) {
    for (const a of answers) {
      const r = active.get(a.id);
      if (!r) continue;
      if (a.ok) r.leaseValidUntil = Math.max(r.leaseValidUntil, sentAt + r.leaseMs);
      else refusedAbort(r, a);
    }
  }

  // ---- claiming -------------------------------------------------------------

  async function claimLoop() {
    let idleRounds = 0;
    let failures = 0;
    while (state === 'running') {
      const free = concurrency - active.size - reserved;
      if (free <= 0) {
        await new Promise<void>((resolve) => (wakeClaimLoop = resolve));
        continue;
      }
      let jobs: ClaimedJob[] = [];
      const sentAt = now();
      const limit = Math.min(free, claimBatch);
      reserved += limit;
      try {
        jobs = await claimRoundRobin(limit);
        failures = 0;
      } catch (err) {
        if (err instanceof TokenRefusedError) {
          // A refused token stays refused: stop instead of retrying forever.
          logger.error(`${err.message}: stopping`, { error: err.message });
          emit('error', { error: err, during: 'claim' });
          stoppedBy = err;
          void close();
          return;
        }
        failures++;
        const delay = Math.min(maxPollMs, pollMs * 2 ** Math.min(failures, 8));
        logger.warn(`claim failed (${describe(err)}); retrying in ${Math.round(delay)} ms`, { error: describe(err), retryInMs: Math.round(delay), failures });
        emit('error', { error: err, during: 'claim' });
        await sleep(jitter(delay), stopping.signal);
        continue;
      } finally {
        reserved -= limit;
      }
      if (state !== 'running') {
        await releaseUnstarted(jobs);
        continue;
      }
      if (jobs.length === 0) {
        idleRounds++;
        const idle = Math.min(maxPollMs, pollMs * 2 ** Math.min(idleRounds - 1, 8));
        // Rate-limited everywhere: wait for the next window (at most a minute) instead of polling into it.
        const rateWait = rateLimitedWait === undefined ? 0 : Math.min(60_000, rateLimitedWait);
        await sleep(Math.max(jitter(idle), rateWait + jitter(Math.min(rateWait / 10, 1000))), stopping.signal);
        continue;
      }
      idleRounds = 0;
      for (const job of jobs) start(job, sentAt);
    }
  }

  /** Jobs a claim brought back after close() began: give them straight back. */
  async function releaseUnstarted(jobs: ClaimedJob[]) {
    const leases = jobs.map((j) => ({ id: j.id, lockToken: j.lockToken }));
    if (leases.length === 0) return;
    const answers = await persist(after(RELEASE_RETRY_MS), 'release', () => transport.release({ workerId, leases, reason: 'worker_shutdown' })).catch(() => undefined);
    releasedInFlight.push(...(answers ?? []).filter((a) => a.ok).map((a) => a.id));
  }

  /** After an empty round: the shortest rate-limit wait, when every queue answered one (else undefined). */
  let rateLimitedWait: number | undefined;

  async function claimRoundRobin(limit: number): Promise<ClaimedJob[]> {
    rateLimitedWait = undefined;
    const waits: number[] = [];
    for (let i = 0; i < queues.length; i++) {
      const queue = queues[(nextQueue + i) % queues.length]!;
      const jobs = await transport.claim({ queue, workerId, instanceId, limit, leaseMs: options.leaseMs });
      if (jobs.length > 0) {
        nextQueue = (nextQueue + i + 1) % queues.length;
        return jobs;
      }
      if (typeof jobs.retryAfterMs === 'number') waits.push(jobs.retryAfterMs);
    }
    if (waits.length === queues.length) rateLimitedWait = Math.min(...waits);
    return [];
  }

  function track(job: ClaimedJob, sentAt: number): Running {
    const r: Running = { job, controller: new AbortController(), leaseMs: job.leaseMs, leaseValidUntil: sentAt + job.leaseMs, progress: undefined, deadlineTimer: undefined, finishing: false };
    active.set(job.id, r);
    if (options.heartbeatMs === undefined && job.heartbeatIntervalMs < heartbeatInterval) {
      // The server asks for quicker beats than the timer is set for: re-arm it now.
      heartbeatInterval = job.heartbeatIntervalMs;
      // A tick in flight schedules the next one with the new interval when it
      // ends; re-arming here too would start a second loop.
      if (!heartbeatTicking) scheduleHeartbeat();
    }
    return r;
  }

  function start(job: ClaimedJob, sentAt: number) {
    stats.claimed++;
    const r = track(job, sentAt);
    emit('claimed', { job });
    if (job.timeoutMs !== null) {
      r.deadlineTimer = setTimeout(() => abort(r, 'deadline_exceeded', `job ${job.id} passed its ${job.timeoutMs} ms deadline`), Math.max(0, sentAt + job.timeoutMs - now()));
    }
    void run(r).finally(() => {
      clearTimeout(r.deadlineTimer);
      active.delete(job.id);
      wakeClaimLoop();
    });
  }

  // ---- running a job ----------------------------------------------------------

  async function run(r: Running) {
    let outcome: Outcome;
    try {
      outcome = { kind: 'complete', result: await options.handler(context(r)) };
    } catch (err) {
      outcome = classify(err);
    }
    const aborted = r.controller.signal.aborted ? (r.controller.signal.reason as JobAbortedError).reason : undefined;
    if (aborted === 'shutdown' && state === 'stopped') {
      stats.abandoned++;
      emit('abandoned', { job: r.job, reason: 'released at shutdown' });
      return;
    }
    if (aborted === 'lease_lost') {
      // The server has already said the lease is someone else's: a write now
      // could only be refused (and counted again as a stale write).
      stats.abandoned++;
      emit('abandoned', { job: r.job, reason: 'lease lost while running: result not sent' });
      return;
    }
    r.finishing = true;
    if (outcome.kind === 'complete') await complete(r, outcome.result);
    else await fail(r, outcome);
  }

  function classify(err: unknown): Outcome {
    // The server keeps at most 16,000 characters of an error, and refuses a
    // lone surrogate (a cut emoji) or NUL: an error message is anyone's text.
    const message = storableText(err instanceof Error ? `${err.name}: ${err.message}` : String(err), 16_000);
    if (err instanceof NonRetryableError) return { kind: 'fail', error: message, retryable: false, raw: err };
    if (err instanceof RetryAfter) return { kind: 'fail', error: message, retryable: true, retryAfterMs: Math.max(0, Math.round(err.delayMs)), raw: err };
    return { kind: 'fail', error: message, retryable: true, raw: err };
  }

  /**
   * Retries a write that failed in transit (network, 5xx) until `giveUp()` says
   * it no longer matters: past the lease, the reaper takes the job back anyway.
   */
  async function persist<T>(giveUp: () => boolean, during: string, write: () => Promise<T>): Promise<T | undefined> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await write();
      } catch (err) {
        if (!(err instanceof TransportError)) throw err;
        emit('error', { error: err, during });
        if (giveUp()) return undefined;
        await sleep(jitter(Math.min(2_000, 100 * 2 ** attempt)));
      }
    }
  }
  const leaseGone = (...rs: Running[]) => () => rs.every((r) => now() > r.leaseValidUntil);
  const after = (ms: number) => {
    const until = now() + ms;
    return () => now() > until;
  };

  function complete(r: Running, result: unknown): Promise<void> {
    pendingCompletions.push({ running: r, result });
    completionFlush ??= Promise.resolve().then(flushCompletions);
    return completionFlush;
  }

  /**
   * Sends every completion that piled up since the last flush in one call, and
   * in the same call claims jobs for the slots those completions free: one
   * transaction and one round trip per cycle instead of two.
   */
  async function flushCompletions() {
    const batch = pendingCompletions;
    pendingCompletions = [];
    completionFlush = undefined;
    // The finished jobs still hold their slots until this call returns; once it
    // has completed them (first, in the same transaction) the slots are free.
    const wanted = state === 'running' ? Math.max(0, Math.min(claimBatch, concurrency - active.size - reserved + batch.length)) : 0;
    const queue = queues[nextQueue]!;
    nextQueue = (nextQueue + 1) % queues.length;
    // Only the first try claims: if its answer was lost in transit, a retry
    // must not claim again (those jobs would wait for the reaper).
    let claim = wanted > 0 ? { queue, limit: wanted, leaseMs: options.leaseMs } : undefined;
    reserved += wanted;
    const sentAt = now();
    const reply = await persist(leaseGone(...batch.map((b) => b.running)), 'complete', () => {
      const once = claim;
      claim = undefined;
      return transport.complete({ workerId, instanceId, results: batch.map(({ running, result }) => ({ id: running.job.id, lockToken: running.job.lockToken, result: result ?? null })), claim: once });
    })
      .catch((err) => {
        emit('error', { error: err, during: 'complete' });
        return undefined;
      })
      .finally(() => (reserved -= wanted));
    const answers = reply?.answers;
    const claimed = reply?.claimed ?? [];
    if (state !== 'running') await releaseUnstarted(claimed);
    else for (const job of claimed) start(job, sentAt);
    batch.forEach(({ running, result }, i) => {
      const answer = answers?.[i];
      if (answer?.ok) {
        stats.completed++;
        emit('completed', { job: running.job, result });
      } else {
        stats.abandoned++;
        emit('abandoned', { job: running.job, reason: answer ? `completion refused: ${answer.message}` : 'completion could not be delivered' });
      }
    });
  }

  async function fail(r: Running, o: Extract<Outcome, { kind: 'fail' }>) {
    const answer = await persist(leaseGone(r), 'fail', () =>
      transport.fail({ workerId, lease: { id: r.job.id, lockToken: r.job.lockToken }, error: o.error, retryable: o.retryable, retryAfterMs: o.retryAfterMs }),
    ).catch((err) => {
      emit('error', { error: err, during: 'fail' });
      return undefined;
    });
    if (answer?.ok) {
      stats.failed++;
      emit('failed', { job: r.job, error: o.raw, retryable: o.retryable });
    } else {
      stats.abandoned++;
      emit('abandoned', { job: r.job, reason: answer ? `failure refused: ${answer.message}` : 'failure could not be delivered' });
    }
  }

  function context(r: Running): JobContext<P> {
    const lease = { id: r.job.id, lockToken: r.job.lockToken };
    const refused = (a: LeaseAnswer) => {
      if (a.ok) return;
      refusedAbort(r, a);
      throw r.controller.signal.reason;
    };
    return {
      job: {
        id: r.job.id,
        queue: r.job.queue,
        payload: r.job.payload as P,
        attempt: r.job.attempt,
        maxAttempts: r.job.maxAttempts,
        priority: r.job.priority,
        checkpoint: r.job.checkpoint,
        progress: r.job.progress,
      },
      signal: r.controller.signal,
      idempotencyKey: r.job.idempotencyKey ?? `${r.job.queue}:${r.job.id}`,
      fencingToken: r.job.fencingToken,
      async heartbeat(progress) {
        if (progress !== undefined) r.progress = progress;
        const sentAt = now();
        const [answer] = await transport.heartbeat({ workerId, leases: [{ ...lease, progress }] });
        applyLeaseAnswers([answer!], sentAt);
        refused(answer!);
      },
      async checkpoint(data) {
        const sentAt = now();
        const answer = await transport.checkpoint({ workerId, lease, checkpoint: data });
        applyLeaseAnswers([answer], sentAt);
        refused(answer);
      },
      async extendLease(ms) {
        const sentAt = now();
        const [answer] = await transport.heartbeat({ workerId, leases: [lease], leaseMs: ms });
        if (answer!.ok) r.leaseValidUntil = Math.max(r.leaseValidUntil, sentAt + ms);
        refused(answer!);
      },
      async once<T>(key: string, fn: () => T | Promise<T>): Promise<T> {
        const problem = textProblem(key);
        if (problem) throw new TypeError(`once(): the key ${JSON.stringify(key)} ${problem}`);
        const started = await transport.effectStart({ workerId, lease, key });
        if (started.kind === 'done') return started.result as T;
        if (started.kind === 'lease_lost') {
          abort(r, 'lease_lost', started.message);
          throw r.controller.signal.reason;
        }
        const result = await fn();
        // Recorded only under the lease, like every owned write. If the lease
        // was lost meanwhile, the effect stays `started` and the attempt that
        // now holds the job runs it again: the window that at-least-once leaves.
        const recorded = await persist(leaseGone(r), 'once', () => transport.effectFinish({ workerId, lease, key, result: result ?? null }));
        if (recorded?.kind === 'lease_lost') {
          abort(r, 'lease_lost', recorded.message);
          throw r.controller.signal.reason;
        }
        return (recorded === undefined ? result : recorded.result) as T;
      },
    };
  }

  // ---- heartbeats -------------------------------------------------------------

  /** (Re)arms the one heartbeat timer. */
  function scheduleHeartbeat() {
    clearTimeout(heartbeatTimer);
    const expectedAt = now() + heartbeatInterval;
    heartbeatTimer = setTimeout(() => void heartbeatTick(expectedAt), heartbeatInterval);
  }

  async function heartbeatTick(expectedAt: number) {
    heartbeatTicking = true;
    try {
      await heartbeatTickBody(expectedAt);
    } finally {
      heartbeatTicking = false;
    }
    if (state === 'running' || state === 'stopping') scheduleHeartbeat();
  }

  async function heartbeatTickBody(expectedAt: number) {
    const lateBy = now() - expectedAt;
    const jobs = [...active.values()];
    if (lateBy > Math.max(500, heartbeatInterval / 2)) {
      // The timer could not fire: something blocked the event loop. This is
      // what "could not renew lock" usually means in other queues.
      stats.eventLoopBlocked++;
      const ids = jobs.map((r) => r.job.id);
      logger.warn(`event loop was blocked for ${Math.round(lateBy)} ms; heartbeat late for job(s) ${ids.join(', ') || '(none)'}: move CPU-bound work off the event loop or raise the lease`, {
        blockedMs: Math.round(lateBy),
        jobIds: ids,
      });
      emit('event_loop_blocked', { delayMs: lateBy, jobs: ids });
    }
    const live = jobs.filter((r) => !r.controller.signal.aborted);
    // Self-fencing: a lease we could not renew in time is gone; stop the handler
    // before the reaper can give the job to another worker.
    for (const r of live) {
      if (now() > r.leaseValidUntil) abort(r, 'lease_expired_locally', `job ${r.job.id}: no successful heartbeat within the ${r.leaseMs} ms lease`);
    }
    const renew = live.filter((r) => !r.controller.signal.aborted);
    const sentAt = now();
    try {
      // Both calls in flight at once, and both awaited: a failed liveness beat
      // must not become an unhandled rejection (found by the chaos run: it
      // killed every worker whose server went away).
      const [, answers] = await Promise.all([
        transport.beat({ workerId, instanceId, ...identity, queues, runningCount: active.size }),
        renew.length > 0
          ? transport.heartbeat({
              workerId,
              leases: renew.map((r) => ({ id: r.job.id, lockToken: r.job.lockToken, ...(r.progress !== undefined ? { progress: r.progress } : {}) })),
            })
          : [],
      ]);
      applyLeaseAnswers(answers, sentAt);
    } catch (err) {
      stats.heartbeatFailures++;
      logger.warn(`heartbeat failed (${describe(err)}) for job(s) ${renew.map((r) => r.job.id).join(', ') || '(none)'}`, { error: describe(err), jobIds: renew.map((r) => r.job.id) });
      emit('heartbeat_failed', { error: err, jobs: renew.map((r) => r.job.id) });
    }
  }

  // ---- lifecycle ----------------------------------------------------------------

  function startWorker() {
    if (state !== 'new') return worker;
    state = 'running';
    void transport.beat({ workerId, instanceId, ...identity, queues, runningCount: 0 }).catch((err) => emit('error', { error: err, during: 'beat' }));
    scheduleHeartbeat();
    claimLoopDone = claimLoop().catch((err) => {
      logger.error(`claim loop stopped: ${describe(err)}`, { error: describe(err) });
      emit('error', { error: err, during: 'claim' });
    });
    return worker;
  }

  /**
   * Stops claiming, lets running jobs finish for up to `drainTimeoutMs`, then
   * aborts the rest and releases their leases so they run again at once.
   */
  async function close(opts: { drainTimeoutMs?: number } = {}): Promise<void> {
    if (state === 'stopped' || state === 'stopping') return closed;
    const wasRunning = state === 'running';
    state = 'stopping';
    stopping.abort();
    wakeClaimLoop();
    closed = (async () => {
      if (wasRunning) await claimLoopDone;
      const deadline = now() + (opts.drainTimeoutMs ?? drainTimeoutMs);
      while (active.size > 0 && now() < deadline) await sleep(Math.min(50, deadline - now()));
      // A job whose result is already on its way is not released: that would
      // either be refused or, winning the race, run a finished job again.
      const leftover = [...active.values()].filter((r) => !r.finishing);
      state = 'stopped';
      clearTimeout(heartbeatTimer);
      for (const r of leftover) abort(r, 'shutdown', `worker ${workerId} is shutting down`);
      const released = [...releasedInFlight];
      if (leftover.length > 0) {
        const answers = await persist(after(RELEASE_RETRY_MS), 'release', () =>
          transport.release({ workerId, leases: leftover.map((r) => ({ id: r.job.id, lockToken: r.job.lockToken })), reason: 'worker_shutdown' }),
        ).catch(() => undefined);
        released.push(...(answers ?? []).filter((a) => a.ok).map((a) => a.id));
      }
      // Results in flight get their answer (bounded: their own retries stop when the lease ends).
      const settleBy = after(RELEASE_RETRY_MS);
      while ([...active.values()].some((r) => r.finishing) && !settleBy()) await sleep(20);
      await transport.beat({ workerId, instanceId, ...identity, queues, runningCount: 0 }).catch(() => {});
      removeSignalHandlers();
      emit('stopped', stoppedBy === undefined ? { released } : { released, error: stoppedBy });
    })();
    return closed;
  }
  let closed: Promise<void> = Promise.resolve();
  let stoppedBy: unknown;

  const worker = {
    id: workerId,
    /** This process's instance id (random per createWorker): the server tells a restart from the same worker by it. */
    instanceId,
    start: startWorker,
    close,
    /** Counts since start: claimed, completed, failed, abandoned, leaseLost, eventLoopBlocked, heartbeatFailures. */
    stats,
    get running() {
      return active.size;
    },
    on<K extends keyof WorkerEvents>(event: K, fn: (e: WorkerEvents[K]) => void) {
      let set = listeners.get(event);
      if (!set) listeners.set(event, (set = new Set()));
      set.add(fn as (e: never) => void);
      return worker;
    },
  };
  return worker;
}

function jitter(ms: number) {
  return ms * (0.8 + Math.random() * 0.4);
}

function describe(err: unknown) {
  return err instanceof Error ? err.message : String(err);
}

/** One readable line per call: the message, then the fields as key=value (the worker id is in the prefix). */
function consoleLogger(workerId: string): Logger {
  const line = (m: string, fields?: LogFields) => {
    const pairs = Object.entries(fields ?? {})
      .filter(([key, value]) => key !== 'workerId' && value !== undefined)
      .map(([key, value]) => `${key}=${typeof value === 'string' && /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value)}`);
    return [`leasehold worker ${workerId}: ${m}`, ...pairs].join(' ');
  };
  return {
    debug: () => {},
    info: (m, f) => console.log(line(m, f)),
    warn: (m, f) => console.warn(line(m, f)),
    error: (m, f) => console.error(line(m, f)),
  };
}

/** The same logger with `base` added to every call's fields. */
function withFields(logger: Logger, base: LogFields): Required<Logger> {
  const call = (level: keyof Logger) => (message: string, fields?: LogFields) => logger[level]?.call(logger, message, { ...base, ...fields });
  return { debug: call('debug'), info: call('info'), warn: call('warn'), error: call('error') };
}

type ProcessLike = {
  pid?: number;
  env?: Record<string, string | undefined>;
  once?: (s: string, f: () => void) => void;
  off?: (s: string, f: () => void) => void;
  getBuiltinModule?: (name: string) => { hostname?: () => string } | undefined;
};

/**
 * Host and pid where the runtime has a `process` (Node, Deno, Bun); nothing on
 * Workers. `getBuiltinModule` reaches os.hostname() without importing a runtime.
 */
function processIdentity(): { host?: string; pid?: number } {
  const proc = (globalThis as { process?: ProcessLike }).process;
  let host: string | undefined;
  try {
    host = proc?.getBuiltinModule?.('os')?.hostname?.();
  } catch {
    host = undefined;
  }
  host ??= proc?.env?.HOSTNAME;
  return { ...(host ? { host } : {}), ...(proc?.pid ? { pid: proc.pid } : {}) };
}

function onProcessSignals(handler: () => void): () => void {
  const proc = (globalThis as { process?: ProcessLike }).process;
  if (!proc?.once || !proc.off) return () => {};
  proc.once('SIGTERM', handler);
  proc.once('SIGINT', handler);
  return () => {
    proc.off!('SIGTERM', handler);
    proc.off!('SIGINT', handler);
  };
}
