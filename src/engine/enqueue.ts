/**
 * The enqueue path, written once for the HTTP route and the embedded API:
 * insert through the store, gather single-job enqueues of one turn into one
 * transaction (src/engine/tick-batches.ts), and after each commit tell the
 * engine how many jobs each queue gained (`added`), so the claims waiting on
 * it look now rather than at their next re-poll. Claims waiting on the
 * queue that the jobs can serve run in the write's own transaction instead
 * (`handoff`, src/engine/claim-handoff.ts).
 *
 * Two sources gather differently:
 * - `api`: single-job requests read in one event-loop turn share a batch (the
 *   next turn, after the I/O read in this one), at most SINGLE_BATCH_MAX;
 *   off (`batchEnqueues: false`) on Workers, where one request cannot finish
 *   another's I/O;
 * - `embedded`: calls made together in one piece of code (one microtask
 *   turn), up to one store chunk, so a batch is one transaction.
 * A failed write (a new queue past maxQueues, a storage fault) fails every
 * call of its batch, as it would have failed each alone.
 */
import type { Clock } from '../core/clock.ts';
import type { Config } from '../core/config.ts';
import { ENQUEUE_CHUNK } from '../db/db.ts';
import type { EnqueueParams, Enqueued, JobStore, NewJob } from '../db/store/port.ts';
import type { HandedClaims } from './claim-handoff.ts';
import { tickBatches, type TickBatches } from './tick-batches.ts';

/** Who enqueues: the audit's actor, and how single enqueues are gathered. */
export type EnqueueSource = 'api' | 'embedded';

/** Most single-job requests in one transaction: below the store's chunk (500), so a batch is one transaction, all or none. */
const SINGLE_BATCH_MAX = 100;

/** The next event-loop turn, after the I/O read in this one (setImmediate where the runtime has it). */
const nextTurn = (run: () => void) => (typeof setImmediate === 'function' ? setImmediate(run) : setTimeout(run, 0));

export interface Enqueuing {
  /** One job, gathered with the others of its turn. */
  one(queue: string, job: NewJob, source: EnqueueSource): Promise<Enqueued>;
  /** Many jobs, one chunk per transaction; `summaries`: answer rows without their payloads (a bulk over HTTP). */
  many(queue: string, jobs: NewJob[], source: EnqueueSource, options?: { summaries?: boolean }): Promise<Enqueued[]>;
  /** Starts writing every gathered batch now (before the database closes). */
  flush(): void;
}

export function createEnqueuing(deps: {
  store: JobStore;
  config: Config;
  clock: Clock;
  batchEnqueues: boolean;
  /**
   * After a commit: the jobs it added or rewrote (not deduplicated), each
   * once, to wake claims and arm due timers, and how many jobs the claims
   * it ran took (`started`: those wake nobody); answers how many waiting
   * claims it woke.
   */
  added(queue: string, jobs: readonly Enqueued[], started: number): number;
  /** Before a write: the claims waiting on the queue it is to run in its transaction (absent: none, claims are woken). */
  handoff?(queue: string, jobs: readonly NewJob[]): HandedClaims | undefined;
}): Enqueuing {
  const { store, config, clock } = deps;
  // One `now` per write, read when it starts: a batch's calls were all made in that turn.
  const params = (queue: string, jobs: NewJob[], source: EnqueueSource) => ({ queue, jobs, actor: source, now: clock.now(), defaults: config, maxQueues: config.maxQueues });
  /** One write of the store (`write`), with the claims waiting on the queue that its jobs can serve run in its transaction. */
  const written = async (write: (p: EnqueueParams) => Promise<Enqueued[]>, queue: string, jobs: NewJob[], source: EnqueueSource): Promise<Enqueued[]> => {
    const handed = deps.handoff?.(queue, jobs);
    let enqueued: Enqueued[];
    try {
      enqueued = await write({ ...params(queue, jobs, source), thenClaim: handed?.thenClaim });
    } catch (err) {
      handed?.settle(); // the claims it carried claim again
      throw err;
    }
    const started = handed?.settle() ?? 0;
    return committed(queue, enqueued, source, started);
  };
  const committed = async (queue: string, enqueued: Enqueued[], source: EnqueueSource, started: number): Promise<Enqueued[]> => {
    // A rewritten job (replace, debounce) may be due at a new time; a bulk that
    // names one key twice answers its job twice, counted once here.
    const added = [...new Map(enqueued.filter((e) => !e.deduplicated).map((e) => [e.job.id, e] as const)).values()];
    const woke = added.length > 0 ? deps.added(queue, added, started) : 0;
    // An HTTP enqueue that started jobs (claims it ran, or woke) answers on
    // the next turn: the claims' answers go out first (a woken claim's
    // statements are synchronous on an embedded file). The job's start is
    // what the enqueue was for; sending the producer's answer first put that
    // write (on loopback, a wake-up of the producer's process) before the worker's.
    if (woke + started > 0 && source === 'api' && deps.batchEnqueues) await new Promise<void>((resolve) => nextTurn(resolve));
    return enqueued;
  };
  const insert = (source: EnqueueSource) => (queue: string, jobs: NewJob[]) => written((p) => store.jobsInsert(p), queue, jobs, source);
  const gathering: Record<EnqueueSource, TickBatches<NewJob, Enqueued> | undefined> = {
    api: deps.batchEnqueues ? tickBatches({ write: insert('api'), maxBatch: SINGLE_BATCH_MAX, schedule: nextTurn }) : undefined,
    embedded: tickBatches({ write: insert('embedded'), maxBatch: ENQUEUE_CHUNK }),
  };
  return {
    async one(queue, job, source) {
      const batches = gathering[source];
      return batches ? batches.add(queue, job) : (await insert(source)(queue, [job]))[0]!;
    },
    async many(queue, jobs, source, options = {}) {
      if (jobs.length === 0) return [];
      if (!options.summaries) return insert(source)(queue, jobs);
      // A bulk answer does not echo payloads back: for large batches the copy
      // was most of the response time and of the server's memory.
      return written((p) => store.jobsInsertSummaries(p), queue, jobs, source);
    },
    flush() {
      gathering.api?.flush();
      gathering.embedded?.flush();
    },
  };
}
