/**
 * The run queue: the worker's handler slots, and the jobs claimed ahead that
 * wait for one.
 *
 * Why claim ahead: with fast handlers, a worker that holds only `concurrency`
 * jobs spends its time waiting for the round trip that completes them and
 * claims the next, so 8 slots move at most 8 jobs per round trip. Holding a
 * few more, claimed in the same call, lets one round trip carry up to
 * `claimBatch` jobs.
 *
 * Why it is bounded by time: a job held here is leased from its claim (its
 * deadline runs too), and no other worker can take it. So the line may only be
 * as long as the running handlers work through in an eighth of the lease (or
 * of the job's deadline, when shorter), judged by how long recent handlers
 * took. Before a handler has finished, and for handlers that slow, nothing is
 * claimed ahead. Waiting jobs are renewed by the lease keeper like running
 * ones, and given back at shutdown without running.
 *
 * The order they start in keeps the server's fairness across groups (a job's
 * `group`, a tenant): the server claims round-robin over a queue's groups,
 * but a line run first-in first-out would run the backlog of one group,
 * claimed ahead, before another group's jobs claimed after it. So jobs
 * without a group go first, in the order claimed (as the server takes them
 * before grouped ones), and grouped jobs take turns, one job of each waiting
 * group per turn, the group whose turn came longest ago first (fair-line.ts). A
 * queue without groups has one line, first-in first-out, as before.
 */
import type { Running } from './held.ts';
import { createFairLine } from './fair-line.ts';

/** Share of the lease (or deadline) a job claimed ahead is expected to wait, at most. */
const WAIT_SHARE = 1 / 8;

export interface RunQueueOptions {
  concurrency: number;
  /** Most jobs held beyond the running ones (0: never claim ahead). */
  maxAhead: number;
  /** Starts a job's handler; resolves when the handler has returned or thrown. */
  run(r: Running): Promise<void>;
  /** A job that waited and is no longer ours to run (its lease was lost meanwhile). */
  drop(r: Running): void;
  /** Local clock (ms). */
  now(): number;
}

export function createRunQueue(o: RunQueueOptions) {
  const line = createFairLine(o.now);
  let running = 0;
  /** How long a handler takes (moving average; rises fast, falls slowly). */
  let handlerMs: number | undefined;
  /** The time budget of the jobs last claimed: WAIT_SHARE of their lease or deadline. */
  let budgetMs = Infinity;
  let paused = false;

  /** Jobs the line may hold now, by the budget and the handlers' pace. */
  function ahead(): number {
    if (o.maxAhead === 0 || handlerMs === undefined) return 0;
    return Math.min(o.maxAhead, Math.floor((o.concurrency * budgetMs) / Math.max(handlerMs, 0.01)));
  }

  function observe(ms: number) {
    handlerMs = handlerMs === undefined ? ms : handlerMs + (ms - handlerMs) * (ms > handlerMs ? 0.5 : 0.1);
  }

  function room(): number {
    return o.concurrency + ahead() - running - line.length;
  }

  function pump() {
    while (!paused && running < o.concurrency && line.length > 0) {
      const r = line.next()!;
      if (r.abortedBy) {
        o.drop(r);
        continue;
      }
      running++;
      const startedAt = o.now();
      void o.run(r).finally(() => {
        running--;
        observe(o.now() - startedAt);
        pump();
      });
    }
  }

  return {
    /** A job just claimed: runs at once if a slot is free, else waits in line. */
    push(r: Running) {
      budgetMs = Math.min(r.leaseMs, r.job.timeoutMs ?? Infinity) * WAIT_SHARE;
      line.push(r, budgetMs);
      pump();
    },
    /** How many more jobs the worker may claim now (with a completion, which costs no call of its own). */
    room,
    /**
     * How many to claim in a call of its own: any room once the line is
     * empty; while jobs still wait, only when half the capacity is free, so
     * such claims come in batches instead of one job per freed slot.
     */
    roomForOwnClaim(): number {
      const free = room();
      return line.length === 0 || free >= (o.concurrency + ahead()) / 2 ? free : 0;
    },
    /** Stops starting jobs and hands back those still waiting (shutdown). */
    takeWaiting(): Running[] {
      paused = true;
      return line.takeAll();
    },
  };
}
