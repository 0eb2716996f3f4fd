/**
 * The embedded enqueue's batching: calls for one queue made in the same
 * microtask turn (8 callers in flight, `Promise.all(items.map(...))`) are
 * written by one `write` call, so one transaction and one commit carry them
 * all instead of one each (issue 15: a commit per job held 8 callers in flight
 * to about 3,500 jobs/s). The producer client does the same over HTTP
 * (src/client/client.ts).
 *
 * Each caller gets its own answer, the jobs of a batch get ids in call order,
 * and a batch's idempotency keys behave as if the calls ran one after another
 * (the first creates, a later one with the same key is deduplicated onto it:
 * jobsInsert's single INSERT does that). Input is checked per call before it
 * joins a batch, so a bad call fails alone; what is left to fail is the write
 * itself (a new queue past maxQueues, a storage fault), and then every caller
 * of that batch gets the error and none of its jobs is stored.
 */
import type { Enqueued, NewJob } from '../db/store/enqueue.ts';

interface Caller {
  job: NewJob;
  resolve(answer: Enqueued): void;
  reject(err: unknown): void;
}

export interface EnqueueBatchesOptions {
  /** Writes one batch (all or none, one answer per job in order). */
  write(queue: string, jobs: NewJob[]): Promise<Enqueued[]>;
  /**
   * Most calls in one batch: more make further batches. Keep it at most the
   * store's chunk (ENQUEUE_CHUNK), so that one batch is one transaction and a
   * failure can never leave part of a batch stored.
   */
  maxBatch: number;
}

export interface EnqueueBatches {
  /** Joins the queue's batch of this turn; resolves with this job's own answer. */
  enqueue(queue: string, job: NewJob): Promise<Enqueued>;
  /** Starts writing every gathered batch now instead of at the end of the turn (before closing the database). */
  flush(): void;
}

export function enqueueBatches(options: EnqueueBatchesOptions): EnqueueBatches {
  const gathering = new Map<string, Caller[]>();

  async function writeBatch(queue: string, callers: Caller[]): Promise<void> {
    try {
      const answers = await options.write(queue, callers.map((c) => c.job));
      callers.forEach((c, i) => c.resolve(answers[i]!));
    } catch (err) {
      for (const c of callers) c.reject(err);
    }
  }

  // Every batch starts at once, in call order, none waiting for another: on
  // an embedded file the statement runs as the write starts (so ids follow
  // call order across batches too), and a `close()` right after unawaited
  // enqueues still stores them all, as it did when each call wrote at once.
  function flushQueue(queue: string): void {
    const callers = gathering.get(queue) ?? [];
    gathering.delete(queue);
    for (let i = 0; i < callers.length; i += options.maxBatch) void writeBatch(queue, callers.slice(i, i + options.maxBatch));
  }

  return {
    enqueue(queue, job) {
      return new Promise<Enqueued>((resolve, reject) => {
        let callers = gathering.get(queue);
        if (!callers) {
          gathering.set(queue, (callers = []));
          queueMicrotask(() => flushQueue(queue));
        }
        callers.push({ job, resolve, reject });
      });
    },
    flush() {
      for (const queue of [...gathering.keys()]) flushQueue(queue);
    },
  };
}
