/**
 * The lease keeper: one heartbeat timer for all of a worker's leases, apart
 * from the handlers, and one fence timer per lease.
 *
 * - Each tick is one call (POST /heartbeats): it renews every held lease and
 *   carries the worker's liveness beat, recorded in the same transaction. An
 *   idle worker's tick is the same call with no leases.
 * - Ticks keep their pace whatever the calls do: a tick does not wait for the
 *   one before it. A renewal stuck on a dead kept-alive connection is so
 *   followed by the next one on a fresh connection, which may get through;
 *   cutting the stuck one at the next tick instead would also cut every
 *   renewal of a server merely slower than one interval, and lose its leases.
 *   At most two are in flight (a tick that finds two out sends nothing), so
 *   a slow server gets at most twice the calls it had; each call that
 *   carries leases gives up when they run out (call-budget.ts), an idle beat
 *   at the request timeout. What this leaves: after two calls in a row hang,
 *   the next renewal waits for one of them to give up.
 * - Self-fencing: each lease has its own timer, armed at the point the local,
 *   conservative copy says to stop (held.ts: a renewal sent at local time t
 *   is good until t + lease; the fence is a tenth of the lease before that).
 *   It aborts the handler with `lease_expired_locally` whatever the calls in
 *   flight are doing, before the reaper could hand the job to someone else.
 *   A tick fences what is due too, before it renews: after a pause every
 *   overdue timer fires at once, and the first of the keeper's to run tells
 *   the handler.
 * - The server's answers: a refused renewal aborts the handler with
 *   `lease_lost`, or `deadline_exceeded` when the attempt ran out of time.
 * - The job's own deadline (timeoutMs) aborts it locally too.
 * - Each beat names the claims the worker gave up on without an answer
 *   (`lostClaims`, at most MAX_LOST_CLAIMS a beat), until a beat that named
 *   them is answered: the server gives their jobs back to the queue.
 * - A tick that fires late says the event loop was blocked.
 */
import { withinLeases } from './call-budget.ts';
import { abortJob, abortRefused, confirmLease, type Held, type Running } from './held.ts';
import { checkLeaseTimings } from './lease-rules.ts';
import { describe } from './log.ts';
import type { CallOptions, ClaimedJob, LeaseAnswer, WorkerLiveness } from './transport.ts';

/** Heartbeat calls in flight at most: one stuck and one fresh (see above). */
const MAX_BEATS_IN_FLIGHT = 2;

/** Most lost claim ids one beat names (the server's cap); the rest go with the next beats. */
const MAX_LOST_CLAIMS = 100;

export interface LeaseKeeperOptions {
  /** Fixed interval; default: `defaultHeartbeatMs`, lowered to what the server asks for in each claim. */
  heartbeatMs?: number | undefined;
  /** The interval before any claim says otherwise (5 s, or a third of the worker's leaseMs). */
  defaultHeartbeatMs: number;
  /** The liveness fields the worker reports with each tick. */
  identity: { host?: string; pid?: number; version?: string };
}

export type LeaseKeeper = ReturnType<typeof createLeaseKeeper>;

export function createLeaseKeeper(w: Held, options: LeaseKeeperOptions) {
  const { timers } = w;
  let timer: unknown;
  /** Heartbeat calls sent and not yet answered. */
  let inFlight = 0;
  let interval = options.heartbeatMs ?? options.defaultHeartbeatMs;
  /** Lease and interval pairs already checked against the lease rules (each is said once). */
  const checked = new Set<string>();

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
    const r: Running = {
      job,
      abortedBy: undefined,
      controller: undefined,
      leaseMs: job.leaseMs,
      leaseValidUntil: -Infinity,
      fenceAt: -Infinity,
      progress: undefined,
      deadlineTimer: undefined,
      fenceTimer: undefined,
      finishing: false,
    };
    confirmLease(r, sentAt, job.leaseMs);
    // This worker claimed a job it still runs (an operator's forced requeue
    // handed it back to the queue): the earlier claim's token is void, so its
    // handler is stopped, and only the new claim is kept.
    const earlier = w.active.get(job.id);
    if (earlier) {
      timers.clearTimeout(earlier.deadlineTimer);
      timers.clearTimeout(earlier.fenceTimer);
      abortJob(w, earlier, 'lease_lost', `job ${job.id} was claimed again (attempt ${job.attempt}): the earlier claim's lock token is void`);
    }
    w.active.set(job.id, r);
    if (job.timeoutMs !== null) {
      r.deadlineTimer = timers.setTimeout(
        () => abortJob(w, r, 'deadline_exceeded', `job ${job.id} passed its ${job.timeoutMs} ms deadline`),
        Math.max(0, sentAt + job.timeoutMs - timers.now()),
      );
    }
    // A claim answered too late (its lease already past the fence by the
    // local clock) is fenced now, so its handler is never started.
    if (!fenceIfDue(r)) armFence(r);
    if (options.heartbeatMs === undefined && job.heartbeatIntervalMs < interval) {
      // The server asks for quicker beats than the timer is set for: re-arm it
      // now (the one timer, so still one loop).
      interval = job.heartbeatIntervalMs;
      schedule();
    }
    checkTimings(job.leaseMs);
    return r;
  }

  /**
   * Aborts the handler once its lease runs out by the local clock (at
   * `fenceAt`), whatever its calls are doing. Renewals only move `fenceAt`
   * later, so the timer is not re-armed on each of them: when it fires and
   * finds the lease renewed meanwhile, it waits for the new end.
   */
  function armFence(r: Running) {
    r.fenceTimer = timers.setTimeout(
      () => {
        if (w.active.get(r.job.id) !== r || r.abortedBy) return;
        if (!fenceIfDue(r)) armFence(r);
      },
      Math.max(0, r.fenceAt - timers.now()),
    );
  }

  /** Aborts the handler if its fence has passed; says whether it has. */
  function fenceIfDue(r: Running): boolean {
    if (timers.now() < r.fenceAt) return false;
    abortJob(
      w,
      r,
      'lease_expired_locally',
      `job ${r.job.id}: no renewal got through, and its lease runs out by the worker's clock in ${Math.max(0, Math.round(r.leaseValidUntil - timers.now()))} ms: stopped before the reaper may give it to another worker`,
    );
    return true;
  }

  /** The lease rules (lease-rules.ts) for a lease the server granted, said once per lease and interval. */
  function checkTimings(leaseMs: number) {
    const key = `${leaseMs}/${interval}`;
    if (checked.has(key)) return;
    checked.add(key);
    const { errors, warnings } = checkLeaseTimings({ leaseMs, heartbeatMs: interval, requestTimeoutMs: w.transport.requestTimeoutMs });
    const fields = { leaseMs, heartbeatMs: interval, requestTimeoutMs: w.transport.requestTimeoutMs };
    for (const problem of errors) w.logger.error(`lease of ${leaseMs} ms: ${problem}`, fields);
    for (const problem of warnings) w.logger.warn(`lease of ${leaseMs} ms: ${problem}`, fields);
  }

  /** The job is over (finished, abandoned or released): stop keeping it. */
  function untrack(r: Running) {
    timers.clearTimeout(r.deadlineTimer);
    timers.clearTimeout(r.fenceTimer);
    // Only this claim: a later claim of the same job may have replaced it.
    if (w.active.get(r.job.id) === r) w.active.delete(r.job.id);
  }

  /** Applies the server's answers to a renewal sent at local time `sentAt`. */
  function applyAnswers(answers: LeaseAnswer[], sentAt: number) {
    for (const a of answers) {
      const r = w.active.get(a.id);
      if (!r) continue;
      if (a.ok) confirmLease(r, sentAt, r.leaseMs);
      else abortRefused(w, r, a);
    }
  }

  /** (Re)arms the one heartbeat timer. */
  function schedule() {
    timers.clearTimeout(timer);
    const expectedAt = timers.now() + interval;
    timer = timers.setTimeout(() => void tick(expectedAt), interval);
  }

  /** The next tick is armed before this one's call goes out, so a call that hangs does not hold it back. */
  function tick(expectedAt: number) {
    const state = w.state();
    if (state === 'running' || state === 'stopping') schedule();
    void renewAll(expectedAt);
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
    // After a pause (SIGSTOP, a suspended VM) every overdue timer fires at
    // once, in no order this code chooses: whichever of the keeper's runs
    // first fences what is due, before it renews anything.
    for (const r of jobs) if (!r.abortedBy) fenceIfDue(r);
    if (inFlight >= MAX_BEATS_IN_FLIGHT) {
      // Both calls in flight are stuck or slow: a third would only add to
      // them. Each gives up when its leases run out, and the fences stand.
      w.logger.debug(`heartbeat skipped: ${inFlight} still in flight`, { inFlight });
      return;
    }
    // Fenced jobs are not renewed: their handlers were told to stop. A job
    // whose result is on its way is renewed only when its fence would
    // otherwise come before the next tick: a renewal that reaches the server
    // after the completion is refused and recorded as a stale write, but a
    // completion slow to get through must not lose the lease either.
    const renew = jobs.filter((r) => !r.abortedBy && !(r.finishing && r.fenceAt - timers.now() > interval));
    const sentAt = timers.now();
    // One request, one transaction: the renewals and the liveness beat
    // together. An idle worker sends the beat with no leases.
    const b = liveness(w.active.size);
    const send = (call?: CallOptions) =>
      w.transport.heartbeat(
        {
          workerId: w.workerId,
          leases: renew.map((r) => ({ id: r.job.id, lockToken: r.job.lockToken, ...(r.progress !== undefined ? { progress: r.progress } : {}) })),
          beat: b,
        },
        call,
      );
    inFlight++;
    try {
      // A renewal answered after the last of its jobs was fenced saves nothing.
      const answers = await (renew.length > 0 ? withinLeases(w, renew.reduce((end, r) => Math.max(end, r.fenceAt), -Infinity), 'heartbeat', send) : send());
      delivered(b);
      w.server.answered('heartbeat');
      applyAnswers(answers, sentAt);
    } catch (err) {
      w.stats.heartbeatFailures++;
      const ids = renew.map((r) => r.job.id);
      w.server.failed(`heartbeat failed (${describe(err)})${ids.length > 0 ? ` for job(s) ${ids.join(', ')}` : ''}`, { error: describe(err), jobIds: ids });
      w.emit('heartbeat_failed', { error: err, jobs: ids });
    } finally {
      inFlight--;
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
