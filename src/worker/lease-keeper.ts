/**
 * The lease keeper: one heartbeat timer for all of a worker's leases, apart
 * from the handlers.
 *
 * - Each tick is one call (POST /heartbeats): it renews every held lease and
 *   carries the worker's liveness beat, recorded in the same transaction. An
 *   idle worker's tick is the same call with no leases.
 * - Self-fencing: a lease not renewed within its length (by the local,
 *   conservative copy: a renewal sent at local time t is good until at least
 *   t + lease) aborts its handler with `lease_expired_locally`, before the
 *   reaper could hand the job to someone else.
 * - The server's answers: a refused renewal aborts the handler with
 *   `lease_lost`, or `deadline_exceeded` when the attempt ran out of time.
 * - The job's own deadline (timeoutMs) aborts it locally too.
 * - Each beat names the claims the worker gave up on without an answer
 *   (`lostClaims`, at most MAX_LOST_CLAIMS a beat), until a beat that named
 *   them is answered: the server gives their jobs back to the queue.
 * - A tick that fires late says the event loop was blocked.
 */
import { abortJob, abortRefused, type Held, type Running } from './held.ts';
import { describe } from './log.ts';
import type { ClaimedJob, LeaseAnswer, WorkerLiveness } from './transport.ts';

/** Most lost claim ids one beat names (the server's cap); the rest go with the next beats. */
const MAX_LOST_CLAIMS = 100;

export interface LeaseKeeperOptions {
  /** Fixed interval; default: 5 s, lowered to what the server asks for in each claim. */
  heartbeatMs?: number | undefined;
  /** The liveness fields the worker reports with each tick. */
  identity: { host?: string; pid?: number; version?: string };
}

export type LeaseKeeper = ReturnType<typeof createLeaseKeeper>;

export function createLeaseKeeper(w: Held, options: LeaseKeeperOptions) {
  const { timers } = w;
  let timer: unknown;
  let ticking = false;
  let interval = options.heartbeatMs ?? 5_000;

  /** What the worker says about itself with each beat: who it is, what it holds, and its counters (the server keeps the latest). */
  function liveness(runningCount: number): WorkerLiveness {
    const { stats } = w;
    return {
      instanceId: w.instanceId,
      ...options.identity,
      queues: w.queues,
      runningCount,
      // Clamped to what the server accepts: a refused beat would fail the tick with it.
      eventLoopBlocks: Math.min(stats.eventLoopBlocked, 1e9),
      longestEventLoopBlockMs: Math.min(Math.round(stats.longestEventLoopBlockMs), 24 * 3600 * 1000),
      heartbeatFailures: Math.min(stats.heartbeatFailures, 1e9),
      leasesLost: Math.min(stats.leaseLost, 1e9),
      ...(w.lostClaims.size > 0 ? { lostClaims: [...w.lostClaims].slice(0, MAX_LOST_CLAIMS) } : {}),
    };
  }

  /** The server has recorded a beat: the lost claims it named are given back, not to be named again. */
  function delivered(beat: WorkerLiveness) {
    for (const id of beat.lostClaims ?? []) w.lostClaims.delete(id);
  }

  /** A beat outside the ticks (start, end of close): the heartbeats call with no leases. */
  async function beat(runningCount: number): Promise<void> {
    const b = liveness(runningCount);
    await w.transport.heartbeat({ workerId: w.workerId, leases: [], beat: b });
    delivered(b);
  }

  /** Starts keeping a lease claimed at local time `sentAt` (and its deadline, if it has one). */
  function track(job: ClaimedJob, sentAt: number): Running {
    const r: Running = { job, controller: new AbortController(), leaseMs: job.leaseMs, leaseValidUntil: sentAt + job.leaseMs, progress: undefined, deadlineTimer: undefined, finishing: false };
    // This worker claimed a job it still runs (an operator's forced requeue
    // handed it back to the queue): the earlier claim's token is void, so its
    // handler is stopped, and only the new claim is kept.
    const earlier = w.active.get(job.id);
    if (earlier) {
      timers.clearTimeout(earlier.deadlineTimer);
      abortJob(w, earlier, 'lease_lost', `job ${job.id} was claimed again (attempt ${job.attempt}): the earlier claim's lock token is void`);
    }
    w.active.set(job.id, r);
    if (job.timeoutMs !== null) {
      r.deadlineTimer = timers.setTimeout(
        () => abortJob(w, r, 'deadline_exceeded', `job ${job.id} passed its ${job.timeoutMs} ms deadline`),
        Math.max(0, sentAt + job.timeoutMs - timers.now()),
      );
    }
    if (options.heartbeatMs === undefined && job.heartbeatIntervalMs < interval) {
      // The server asks for quicker beats than the timer is set for: re-arm it now.
      interval = job.heartbeatIntervalMs;
      // A tick in flight schedules the next one with the new interval when it
      // ends; re-arming here too would start a second loop.
      if (!ticking) schedule();
    }
    return r;
  }

  /** The job is over (finished, abandoned or released): stop keeping it. */
  function untrack(r: Running) {
    timers.clearTimeout(r.deadlineTimer);
    // Only this claim: a later claim of the same job may have replaced it.
    if (w.active.get(r.job.id) === r) w.active.delete(r.job.id);
  }

  /** Applies the server's answers to a renewal sent at local time `sentAt`. */
  function applyAnswers(answers: LeaseAnswer[], sentAt: number) {
    for (const a of answers) {
      const r = w.active.get(a.id);
      if (!r) continue;
      if (a.ok) r.leaseValidUntil = Math.max(r.leaseValidUntil, sentAt + r.leaseMs);
      else abortRefused(w, r, a);
    }
  }

  /** (Re)arms the one heartbeat timer. */
  function schedule() {
    timers.clearTimeout(timer);
    const expectedAt = timers.now() + interval;
    timer = timers.setTimeout(() => void tick(expectedAt), interval);
  }

  async function tick(expectedAt: number) {
    ticking = true;
    try {
      await renewAll(expectedAt);
    } finally {
      ticking = false;
    }
    const state = w.state();
    if (state === 'running' || state === 'stopping') schedule();
  }

  async function renewAll(expectedAt: number) {
    const lateBy = timers.now() - expectedAt;
    const jobs = [...w.active.values()];
    if (lateBy > Math.max(500, interval / 2)) {
      // The timer could not fire: something blocked the event loop. This is
      // what "could not renew lock" usually means in other queues.
      w.stats.eventLoopBlocked++;
      w.stats.longestEventLoopBlockMs = Math.max(w.stats.longestEventLoopBlockMs, lateBy);
      const ids = jobs.map((r) => r.job.id);
      w.logger.warn(`event loop was blocked for ${Math.round(lateBy)} ms; heartbeat late for job(s) ${ids.join(', ') || '(none)'}: move CPU-bound work off the event loop or raise the lease`, {
        blockedMs: Math.round(lateBy),
        jobIds: ids,
      });
      w.emit('event_loop_blocked', { delayMs: lateBy, jobs: ids });
    }
    const live = jobs.filter((r) => !r.controller.signal.aborted);
    // Self-fencing: a lease we could not renew in time is gone; stop the handler
    // before the reaper can give the job to another worker.
    for (const r of live) {
      if (timers.now() > r.leaseValidUntil) abortJob(w, r, 'lease_expired_locally', `job ${r.job.id}: no successful heartbeat within the ${r.leaseMs} ms lease`);
    }
    // A job whose result is on its way is renewed only when its lease would
    // otherwise run low before the next tick: a renewal that reaches the
    // server after the completion is refused and recorded as a stale write,
    // but a completion slow to get through must not lose the lease either.
    const renew = live.filter((r) => !r.controller.signal.aborted && !(r.finishing && r.leaseValidUntil - timers.now() > interval));
    const sentAt = timers.now();
    try {
      // One request, one transaction: the renewals and the liveness beat
      // together. An idle worker sends the beat with no leases.
      const b = liveness(w.active.size);
      const answers = await w.transport.heartbeat({
        workerId: w.workerId,
        leases: renew.map((r) => ({ id: r.job.id, lockToken: r.job.lockToken, ...(r.progress !== undefined ? { progress: r.progress } : {}) })),
        beat: b,
      });
      delivered(b);
      applyAnswers(answers, sentAt);
    } catch (err) {
      w.stats.heartbeatFailures++;
      const ids = renew.map((r) => r.job.id);
      w.logger.warn(`heartbeat failed (${describe(err)}) for job(s) ${ids.join(', ') || '(none)'}`, { error: describe(err), jobIds: ids });
      w.emit('heartbeat_failed', { error: err, jobs: ids });
    }
  }

  return {
    beat,
    track,
    untrack,
    applyAnswers,
    start: schedule,
    stop: () => timers.clearTimeout(timer),
  };
}
