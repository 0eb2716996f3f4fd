/**
 * The claim loop: keeps the worker's slots full.
 *
 * - Claims in batches up to the room the run queue gives (its free slots,
 *   plus what it may claim ahead: run-queue.ts), at most `claimBatch` a call,
 *   round-robin over its queues. A claim riding on a completion (see
 *   completer.ts) reserves its room here too.
 * - Idle, on one queue: the claim waits on the server for work (`claimWaitMs`,
 *   bounded by a quarter of the lease, since the lease is counted from when
 *   the claim was sent), so a job enqueued to an idle worker starts within
 *   milliseconds instead of at the next poll.
 * - Idle otherwise (several queues, `claimWaitMs: 0`, or a server that
 *   answers at once): polls every `pollMs`, doubling while nothing comes up
 *   to `maxPollMs`, with jitter. Failed claims back off the same way, but
 *   never longer than 2 s between tries (MAX_FAILED_CLAIM_RETRY_MS).
 * - Every claim request carries its own claim id. A claim whose answer did
 *   not arrive (a dropped connection, a timeout) is sent again with the same
 *   queue, limit and id, its room still reserved: the server answers the jobs
 *   it took the first time, with the same tokens, instead of claiming more,
 *   so a lost answer leaves no job running under a token nobody has. The
 *   worker gives the claim up after retrying it for a lease, or when it starts
 *   closing: its id goes to `lostClaims`, and the next beat has the server
 *   give its jobs back.
 * - A refused token stops the worker (retrying cannot help).
 */
import type { RidingClaim } from './completer.ts';
import type { Held } from './held.ts';
import { describe } from './log.ts';
import { jitter, sleep } from './timers.ts';
import { TokenRefusedError, type ClaimAnswer, type ClaimedJob } from './transport.ts';

/**
 * The longest wait between two tries of a claim that failed. A failed call
 * to a server that is down costs it nothing, and an idle worker whose server
 * restarted must not sleep through the first seconds it is back: with the
 * idle poll's 10 s cap, a 5 s restart left workers idle for up to 10 s more.
 */
export const MAX_FAILED_CLAIM_RETRY_MS = 2_000;

/** The lease a retry budget is counted in when the server has not said one yet (its default). */
const DEFAULT_LEASE_MS = 30_000;

/** A claim request on its way, or whose answer did not arrive. */
interface SentClaim {
  queue: string;
  claimId: string;
  limit: number;
  /** Local time the first try was sent: the claim is given up a lease after it. */
  firstSentAt: number;
}

export interface ClaimLoopOptions {
  /** How many more jobs the worker may hold now (the run queue's room), and how many are worth a claim call of their own. */
  room(): number;
  roomForOwnClaim(): number;
  claimBatch: number;
  pollMs: number;
  maxPollMs: number;
  /** Longest a claim waits on the server for work when nothing is ready (0: never waits). */
  claimWaitMs: number;
  /** Lease to ask for; default: the queue's. */
  leaseMs?: number | undefined;
  /** Aborted when the worker starts closing: cuts an idle wait short. */
  stopping: AbortSignal;
  /** Runs a claimed job (local time `sentAt`: when its claim was sent). */
  start(job: ClaimedJob, sentAt: number): void;
  /** Gives back jobs a claim brought after close() began. */
  releaseUnstarted(jobs: ClaimedJob[]): Promise<void>;
  /** The server refused the worker's token: the worker stops. */
  onTokenRefused(err: TokenRefusedError): void;
}

export function createClaimLoop(w: Held, o: ClaimLoopOptions) {
  const { transport, workerId, instanceId, queues, timers, logger, emit } = w;
  let nextQueue = 0;
  /** Room promised to a claim in flight (the loop's, or one riding on a completion). */
  let reserved = 0;
  let wake: () => void = () => {};
  /** The lease the server last gave: bounds the claim's wait, as the lease is counted from when the claim was sent. */
  let lastLeaseMs = o.leaseMs;
  const free = () => o.room() - reserved;
  /** The claim request on its way now. */
  let sending: SentClaim | undefined;
  /** A claim whose answer did not arrive: the next round sends it again (its room stays reserved). */
  let unanswered: SentClaim | undefined;

  /** No more tries for this claim: the next beats name it, and the server gives back whatever it took. */
  function giveUp(c: SentClaim) {
    w.lostClaims.add(c.claimId);
    reserved -= c.limit;
    if (unanswered === c) unanswered = undefined;
  }

  async function run() {
    let idleRounds = 0;
    let failures = 0;
    while (w.state() === 'running') {
      const retry = unanswered;
      let limit: number;
      if (retry) limit = retry.limit;
      else {
        const room = o.roomForOwnClaim() - reserved;
        if (room <= 0) {
          await new Promise<void>((resolve) => (wake = resolve));
          continue;
        }
        limit = Math.min(room, o.claimBatch);
        reserved += limit;
      }
      let jobs: ClaimedJob[] = [];
      const sentAt = timers.now();
      const waitMs = queues.length === 1 ? Math.min(o.claimWaitMs, Math.floor((lastLeaseMs ?? 4_000) / 4)) : 0;
      try {
        if (retry) rateLimitedWait = undefined;
        jobs = retry ? (await claimOnce(retry, waitMs)).jobs : await claimRoundRobin(limit, waitMs);
        unanswered = undefined;
        reserved -= limit;
        failures = 0;
        w.server.answered('claim');
      } catch (err) {
        // The claim in flight may have taken jobs its lost answer would have
        // brought: send it again (same id), or give it up so the server
        // gives them back.
        const failed = retry ?? sending;
        sending = undefined;
        const retryFor = o.leaseMs ?? lastLeaseMs ?? DEFAULT_LEASE_MS;
        if (!failed) reserved -= limit;
        else if (o.stopping.aborted || err instanceof TokenRefusedError || timers.now() - failed.firstSentAt >= retryFor) giveUp(failed);
        else unanswered = failed;
        // close() cut a waiting claim short: not a failure.
        if (o.stopping.aborted) continue;
        if (err instanceof TokenRefusedError) {
          // A refused token stays refused: stop instead of retrying forever.
          logger.error(`${err.message}: stopping`, { error: err.message });
          emit('error', { error: err, during: 'claim' });
          o.onTokenRefused(err);
          return;
        }
        failures++;
        const delay = Math.min(o.maxPollMs, MAX_FAILED_CLAIM_RETRY_MS, o.pollMs * 2 ** Math.min(failures, 8));
        w.server.failed(`claim failed (${describe(err)}); retrying in ${Math.round(delay)} ms`, { error: describe(err), retryInMs: Math.round(delay), failures });
        emit('error', { error: err, during: 'claim' });
        await sleep(timers, jitter(delay), o.stopping);
        continue;
      }
      if (w.state() !== 'running') {
        await o.releaseUnstarted(jobs);
        continue;
      }
      if (jobs.length === 0) {
        // The server waited for work and there was none: ask again at once.
        // One that answered early (a server without waitMs, a shutdown) is polled.
        if (waitMs > 0 && timers.now() - sentAt >= waitMs / 2) continue;
        idleRounds++;
        const idle = Math.min(o.maxPollMs, o.pollMs * 2 ** Math.min(idleRounds - 1, 8));
        // Rate-limited everywhere: wait for the next window (at most a minute) instead of polling into it.
        const rateWait = rateLimitedWait === undefined ? 0 : Math.min(60_000, rateLimitedWait);
        await sleep(timers, Math.max(jitter(idle), rateWait + jitter(Math.min(rateWait / 10, 1000))), o.stopping);
        continue;
      }
      idleRounds = 0;
      for (const job of jobs) o.start(job, sentAt);
    }
    // Closing with a claim still unanswered: the closing beat names it.
    if (unanswered) giveUp(unanswered);
  }

  /** One claim request (a first try, or the same claim sent again). */
  async function claimOnce(c: Omit<SentClaim, 'firstSentAt'>, waitMs: number): Promise<ClaimAnswer> {
    sending = { ...c, firstSentAt: timers.now() };
    const answer = await transport.claim({ queue: c.queue, workerId, instanceId, limit: c.limit, leaseMs: o.leaseMs, claimId: c.claimId, ...(waitMs > 0 ? { waitMs, signal: o.stopping } : {}) });
    sending = undefined;
    if (answer.jobs.length > 0) lastLeaseMs = o.leaseMs ?? answer.jobs[0]!.leaseMs;
    return answer;
  }

  /** After an empty round: the shortest rate-limit wait, when every queue answered one (else undefined). */
  let rateLimitedWait: number | undefined;

  async function claimRoundRobin(limit: number, waitMs: number): Promise<ClaimedJob[]> {
    rateLimitedWait = undefined;
    const waits: number[] = [];
    for (let i = 0; i < queues.length; i++) {
      const queue = queues[(nextQueue + i) % queues.length]!;
      const { jobs, retryAfterMs } = await claimOnce({ queue, claimId: w.nextClaimId(), limit }, waitMs);
      if (jobs.length > 0) {
        nextQueue = (nextQueue + i + 1) % queues.length;
        return jobs;
      }
      if (typeof retryAfterMs === 'number') waits.push(retryAfterMs);
    }
    if (waits.length === queues.length) rateLimitedWait = Math.min(...waits);
    return [];
  }

  const riding: RidingClaim = {
    reserve() {
      // The completing jobs' handlers have returned: their slots are already counted free.
      const limit = w.state() === 'running' ? Math.max(0, Math.min(o.claimBatch, free())) : 0;
      const queue = queues[nextQueue]!;
      nextQueue = (nextQueue + 1) % queues.length;
      reserved += limit;
      return { claim: limit > 0 ? { queue, limit, leaseMs: o.leaseMs, claimId: w.nextClaimId() } : undefined, settle: () => void (reserved -= limit) };
    },
    start: (job, sentAt) => o.start(job, sentAt),
  };

  return {
    run,
    /** Room came free (or the worker is closing): let a waiting loop go on. */
    wake: () => wake(),
    /** For the completer: claims that ride on completions. */
    riding,
  };
}
