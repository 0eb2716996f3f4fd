/**
 * leasehold as a library, for people who want a queue inside their own Node
 * process rather than a server: open a database (an embedded SQLite file, or
 * a remote libSQL URL), enqueue, run workers in-process, run the reaper. The
 * same guarded statements the HTTP API runs, without HTTP.
 *
 * @example
 *   import { openLeasehold } from 'leasehold';
 *   const lh = await openLeasehold({ databaseUrl: 'file:./jobs.db' });
 *   await lh.enqueue('email', { to: 'ada@example.com' }, { idempotencyKey: 'welcome-ada' });
 *   await lh.enqueueMany('email', users.map((u) => ({ payload: { to: u.email }, idempotencyKey: `welcome-${u.id}` })));
 *   const worker = lh.createWorker({ queue: 'email', handler: async (ctx) => send(ctx.job.payload) }).start();
 *   const stopReaper = lh.startReaper();
 *   // on shutdown:
 *   await worker.stop(); stopReaper(); lh.close();
 */
import { databaseClock, type Clock } from '../core/clock.ts';
import { checkConfig, ConfigError, defaultConfig, deriveFromLease, type Config } from '../core/config.ts';
import { describeEnqueued, traceSend } from '../core/trace-context.ts';
import type { Job } from '../core/wire.ts';
import type { Db } from '../db/db.ts';
import type { MaintenancePassReport } from '../maintenance/pass.ts';
import { createStore } from '../db/store/create-store.ts';
import { toJob } from '../core/job-record.ts';
import { createEngine, type Engine } from '../engine/engine.ts';
import { checkedJob, parseQueue, type EnqueueItem } from '../engine/enqueue-input.ts';
import { openDatabase } from '../runtime/node.ts';
import { startReaperTimer } from '../runtime/reaper-timer.ts';
import { streamLogger } from '../runtime/log.ts';
import { createLogger, type Logger } from '../core/log.ts';
import { createWorker, type Worker, type WorkerOptions } from '../worker/worker.ts';
import type { Transport } from '../worker/transport.ts';
import { dbTransport } from './db-transport.ts';
import type { Enqueued } from '../db/store/port.ts';

export interface OpenOptions {
  /** Default `file:./leasehold.db`; also `libsql://` and `http(s)://` URLs. */
  databaseUrl?: string;
  databaseAuthToken?: string;
  /** Any other setting (lease, heartbeat, grace, retention...), as in loadConfig. */
  config?: Partial<Config>;
  /** Default: the database's clock. */
  clock?: Clock;
}

/**
 * An enqueue's options. `uniqueWhile` 'retained' (default): the key
 * deduplicates while a job enqueued with it is kept; 'active': while one is
 * pending or running; 'replace' and 'debounce' (with `debounceMs`) rewrite the
 * key's job no worker has claimed yet; 'throttle' (with `throttleMs`) answers
 * the key's job made within the window (docs/guarantees.md, "Key modes").
 */
export type EmbeddedEnqueueOptions = Omit<EnqueueItem, 'payload'>;

export type EmbeddedEnqueueItem = EnqueueItem;

/** What an enqueue answers: the new job, or the existing one for a duplicate idempotency key (unchanged, or rewritten: `replaced`). */
export interface EmbeddedEnqueued {
  job: Job;
  deduplicated: boolean;
  /** The key's unclaimed job, rewritten by this enqueue (replace, debounce). */
  replaced: boolean;
}

export interface Leasehold {
  /** The Drizzle database. */
  readonly db: Db;
  /**
   * The engine the in-process transport runs on: createApp({ engine }) when
   * you also want the HTTP API, so its claims and this process's workers
   * wake each other.
   */
  readonly engine: Engine;
  readonly config: Config;
  readonly clock: Clock;
  /** The in-process transport a worker uses instead of httpTransport. */
  readonly transport: Transport;
  /**
   * Adds a job (input checked as the API checks it: LeaseholdError naming the
   * field). Calls for one queue made in the same tick (e.g. several callers in
   * flight, or `Promise.all(items.map(...))`) are stored together in one
   * transaction, up to 500 per transaction, with ids in call order; each caller
   * still gets its own answer, and a call with bad input fails alone. If the
   * write itself fails (a new queue past maxQueues, a storage fault), every
   * call of that transaction rejects with the error and none of its jobs is stored.
   */
  enqueue(queue: string, payload: unknown, options?: EmbeddedEnqueueOptions): Promise<EmbeddedEnqueued>;
  /**
   * Adds many jobs; one answer per item, in order. Every item is checked first
   * (a LeaseholdError names the item, `jobs[3].priority`, and nothing is
   * stored); then 500 at a time, one transaction each. An empty list stores
   * nothing. A storage fault after the first 500 leaves the earlier chunks
   * stored (EnqueuePartlyStored says how many): with idempotency keys, calling
   * again with the same items stores only the rest.
   */
  enqueueMany(queue: string, items: readonly EmbeddedEnqueueItem[]): Promise<EmbeddedEnqueued[]>;
  getJob(id: string): Promise<Job | undefined>;
  /** A worker on the in-process transport (call start() on it). */
  createWorker<P = unknown>(options: Omit<WorkerOptions<P>, 'transport'>): Worker;
  /** One reaper pass now. */
  reap(): Promise<MaintenancePassReport>;
  /**
   * The reaper every config.reaperIntervalMs; returns its stop function. It
   * logs each job it takes back and each pass that did something: to `log`
   * (a Logger, or a function given each message), default stdout.
   */
  startReaper(log?: Logger | ((line: string) => void)): () => void;
  /** Closes the database (stop workers and the reaper first). Enqueues still gathering for their batch are started first. */
  close(): void;
}

/** Opens (and migrates) the database and answers the embedded API over it. Throws ConfigError on impossible settings. */
export async function openLeasehold(options: OpenOptions = {}): Promise<Leasehold> {
  const config = defaultConfig({
    ...options.config,
    ...(options.databaseUrl !== undefined ? { databaseUrl: options.databaseUrl } : {}),
    ...(options.databaseAuthToken !== undefined ? { databaseAuthToken: options.databaseAuthToken } : {}),
  });
  // A lease given without a heartbeat or grace gets them from it, as the server's settings do.
  deriveFromLease(config, new Set(Object.keys(options.config ?? {}).filter((k) => options.config![k as keyof Config] !== undefined) as (keyof Config)[]));
  const { errors } = checkConfig(config);
  if (errors.length > 0) throw new ConfigError(errors);
  const clock = options.clock ?? databaseClock;
  const opened = await openDatabase(config);
  const db = opened.db;
  const log = streamLogger({ level: config.logLevel, format: config.logFormat });
  const engine = createEngine({ store: createStore(db), config, clock, log });
  const transport = dbTransport(engine);
  return {
    db,
    engine,
    config,
    clock,
    transport,
    // Each call in its producer span, whose trace context goes on its jobs (src/core/trace-context.ts).
    enqueue: (queue, payload, opts = {}) =>
      traceSend(
        queue,
        undefined,
        async (trace) => {
          // Checked before joining a batch: a bad call rejects here, alone.
          const job = { ...checkedJob({ ...opts, payload }, ''), ...trace };
          return answer(await engine.enqueue(parseQueue(queue), job, 'embedded'));
        },
        (span, a) => describeEnqueued(span, [{ id: a.job.id, deduplicated: a.deduplicated }]),
      ),
    enqueueMany: (queue, items) =>
      traceSend(
        queue,
        items.length,
        async (trace) => {
          const name = parseQueue(queue);
          const jobs = items.map((item, i) => ({ ...checkedJob(item, `jobs[${i}]`), ...trace }));
          return (await engine.enqueueMany(name, jobs, 'embedded')).map(answer);
        },
        (span, answers) => describeEnqueued(span, answers.map((a) => ({ id: a.job.id, deduplicated: a.deduplicated }))),
      ),
    async getJob(id) {
      if (!/^[0-9]{1,15}$/.test(id)) return undefined;
      const row = await engine.store.jobGet({ id: Number(id) });
      return row && toJob(row);
    },
    createWorker: (workerOptions) => createWorker({ ...workerOptions, transport }),
    reap: () => engine.maintenancePass(clock.now()),
    startReaper: (to) => startReaperTimer(engine, typeof to === 'function' ? createLogger({ level: config.logLevel, sink: (r) => to(r.msg) }) : (to ?? log)),
    close() {
      // Enqueues made this turn and not yet written go first (the engine starts them), as they would have before batching.
      engine.close();
      opened.close();
    },
  };
}

function answer({ job, deduplicated, replaced }: Enqueued): EmbeddedEnqueued {
  return { job: toJob(job), deduplicated, replaced };
}
