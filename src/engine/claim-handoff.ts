/**
 * An enqueue that runs the claims waiting for its jobs: when jobs due now
 * are enqueued to a queue on which claims wait (with an offer: their claim's
 * request), the claims' statements run right after the jobs' insert, in the
 * same transaction, and each is answered from its commit
 * (src/db/store/enqueue.ts, ClaimsAfterInsert). Before, the enqueue
 * committed, woke the claims, and each ran a transaction of its own: for an
 * idle worker, two commits and an event-loop turn between an enqueue and
 * its job's start, and two write transactions per job.
 *
 * The claim is the same statement a woken claim would run (limits, rate
 * windows, groups, fencing tokens, its event), so what it may take does not
 * change, only when. Used only where one request may answer another's: not
 * on Workers (the engine is built with batchEnqueues false there).
 */
import type { ClaimParams, ClaimsAfterInsert, ClaimedWithRateWait, NewJob } from '../db/store/port.ts';
import type { ClaimWaiters } from './claim-waiters.ts';
import type { ClaimCallParams, ClaimResult } from './worker-protocol.ts';

export interface HandedClaims {
  /** For the store: the claims to run after the jobs, and where their answers go. */
  thenClaim: ClaimsAfterInsert;
  /**
   * After the write, whether it committed or failed: a claim not answered
   * (the write failed, nothing was claimed) is answered with nothing and
   * claims again. Answers how many jobs the claims took.
   */
  settle(): number;
}

export interface HandoffDeps {
  waiters: ClaimWaiters<ClaimCallParams, ClaimResult>;
  /** The store's params of an offered claim (now, the server's limits). */
  params(offer: ClaimCallParams): ClaimParams;
  /** A claim's store answer as the claim answers it. */
  answer(claimed: ClaimedWithRateWait): ClaimResult;
}

/**
 * Due at once as the caller asked (the claim statement decides by the
 * database's clock; a job it finds not yet due is left for its due timer).
 * A debounced job runs after its quiet period.
 */
const dueNow = (j: NewJob, now: number) => (j.delayMs ?? 0) <= 0 && (j.runAt === undefined || j.runAt <= now) && j.uniqueWhile !== 'debounce';

/** The waiting claims that `jobs`, about to be written to `queue`, can run; undefined when none waits or none of the jobs is due now. */
export function handOffClaims(deps: HandoffDeps, queue: string, jobs: readonly NewJob[]): HandedClaims | undefined {
  // Most enqueues find no claim waiting: a bulk's jobs are not walked for them.
  if (!deps.waiters.hasWaiting(queue)) return undefined;
  const now = Date.now();
  const due = jobs.reduce((n, j) => n + (dueNow(j, now) ? 1 : 0), 0);
  if (due === 0) return undefined;
  const taken = deps.waiters.take(queue, due, (offer) => offer.limit);
  if (taken.length === 0) return undefined;
  let answered = false;
  let started = 0;
  return {
    thenClaim: {
      claims: taken.map((t) => deps.params(t.offer)),
      claimed(answers) {
        answered = true;
        answers.forEach((claimed, i) => {
          const answer = deps.answer(claimed);
          started += answer.jobs.length;
          taken[i]!.answer(answer);
        });
      },
    },
    settle() {
      if (!answered) for (const t of taken) t.answer();
      answered = true;
      return started;
    },
  };
}
