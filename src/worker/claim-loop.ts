/**
 * The claim loop: keeps the worker's slots full.
 *
 * - Claims in batches up to its free slots (at most `claimBatch` a call),
 *   round-robin over its queues; never holds more jobs than slots. A claim
 *   riding on a completion (see completer.ts) reserves its slots here too.
 * - Idle: polls every `pollMs`, doubling while nothing comes up to
 *   `maxPollMs`, with jitter. Failed claims back off the same way.
 * - A refused token stops the worker (retrying cannot help).
 */
import type { RidingClaim } from './completer.ts';
import type { Held } from './held.ts';
import { describe } from './log.ts';
import { jitter, sleep } from './timers.ts';
import { TokenRefusedError, type ClaimedJob } from './transport.ts';

export interface ClaimLoopOptions {
  concurrency: number;
  claimBatch: number;
  pollMs: number;
  maxPollMs: number;
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
  /** Slots promised to a claim in flight (the loop's, or one riding on a completion). */
  let reserved = 0;
  let wake: () => void = () => {};
  const free = () => o.concurrency - w.active.size - reserved;

  async function run() {
    let idleRounds = 0;
    let failures = 0;
    while (w.state() === 'running') {
      const room = free();
      if (room <= 0) {
        await new Promise<void>((resolve) => (wake = resolve));
        continue;
      }
      let jobs: ClaimedJob[] = [];
      const sentAt = timers.now();
      const limit = Math.min(room, o.claimBatch);
      reserved += limit;
      try {
        jobs = await claimRoundRobin(limit);
        failures = 0;
      } catch (err) {
        if (err instanceof TokenRefusedError) {
          // A refused token stays refused: stop instead of retrying forever.
          logger.error(`${err.message}: stopping`, { error: err.message });
          emit('error', { error: err, during: 'claim' });
          o.onTokenRefused(err);
          return;
        }
        failures++;
        const delay = Math.min(o.maxPollMs, o.pollMs * 2 ** Math.min(failures, 8));
        logger.warn(`claim failed (${describe(err)}); retrying in ${Math.round(delay)} ms`, { error: describe(err), retryInMs: Math.round(delay), failures });
        emit('error', { error: err, during: 'claim' });
        await sleep(timers, jitter(delay), o.stopping);
        continue;
      } finally {
        reserved -= limit;
      }
      if (w.state() !== 'running') {
        await o.releaseUnstarted(jobs);
        continue;
      }
      if (jobs.length === 0) {
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
  }

  /** After an empty round: the shortest rate-limit wait, when every queue answered one (else undefined). */
  let rateLimitedWait: number | undefined;

  async function claimRoundRobin(limit: number): Promise<ClaimedJob[]> {
    rateLimitedWait = undefined;
    const waits: number[] = [];
    for (let i = 0; i < queues.length; i++) {
      const queue = queues[(nextQueue + i) % queues.length]!;
      const jobs = await transport.claim({ queue, workerId, instanceId, limit, leaseMs: o.leaseMs });
      if (jobs.length > 0) {
        nextQueue = (nextQueue + i + 1) % queues.length;
        return jobs;
      }
      if (typeof jobs.retryAfterMs === 'number') waits.push(jobs.retryAfterMs);
    }
    if (waits.length === queues.length) rateLimitedWait = Math.min(...waits);
    return [];
  }

  const riding: RidingClaim = {
    reserve(finishing) {
      // The finished jobs still hold their slots until the completion call
      // returns; once it has completed them (first, in the same transaction)
      // the slots are free.
      const limit = w.state() === 'running' ? Math.max(0, Math.min(o.claimBatch, free() + finishing)) : 0;
      const queue = queues[nextQueue]!;
      nextQueue = (nextQueue + 1) % queues.length;
      reserved += limit;
      return { claim: limit > 0 ? { queue, limit, leaseMs: o.leaseMs } : undefined, settle: () => void (reserved -= limit) };
    },
    start: (job, sentAt) => o.start(job, sentAt),
  };

  return {
    run,
    /** A slot came free (or the worker is closing): let a waiting loop go on. */
    wake: () => wake(),
    /** For the completer: claims that ride on completions. */
    riding,
  };
}
