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
 *   const worker = lh.createWorker({ queue: 'email', handler: async (ctx) => send(ctx.job.payload) }).start();
 *   const stopReaper = lh.startReaper();
 *   // on shutdown:
 *   await worker.stop(); stopReaper(); lh.close();
 */
import { parseQueue } from '../api/http.ts';
import { claimWaiters } from '../api/claim-waiters.ts';
import { newJob, toNewJob } from '../api/job-routes.ts';
import { databaseClock, type Clock } from '../core/clock.ts';
import { checkConfig, ConfigError, defaultConfig, type Config } from '../core/config.ts';
import type { Job } from '../core/wire.ts';
import type { Db } from '../db/db.ts';
import { reapOnce, type ReapReport } from '../maintenance/pass.ts';
import { createStore } from '../db/store/create-store.ts';
import { toJob } from '../core/job-record.ts';
import { openDatabase } from '../runtime/node.ts';
import { startReaperTimer } from '../runtime/reaper-timer.ts';
import { streamLogger } from '../runtime/log.ts';
import { createLogger, type Logger } from '../core/log.ts';
import { createWorker, type Worker, type WorkerOptions } from '../worker/worker.ts';
import type { Transport } from '../worker/transport.ts';
import { dbTransport } from './db-transport.ts';

export interface OpenOptions {
  /** Default `file:./leasehold.db`; also `libsql://` and `http(s)://` URLs. */
  databaseUrl?: string;
  databaseAuthToken?: string;
  /** Any other setting (lease, heartbeat, grace, retention...), as in loadConfig. */
  config?: Partial<Config>;
  /** Default: the database's clock. */
  clock?: Clock;
}

export interface EmbeddedEnqueueOptions {
  idempotencyKey?: string;
  /** 'retained' (default): the key deduplicates while a job enqueued with it is kept; 'active': while one is pending or running. */
  uniqueWhile?: 'retained' | 'active';
  priority?: number;
  delayMs?: number;
  runAt?: Date | string;
  maxAttempts?: number;
  timeoutMs?: number;
}

export interface Leasehold {
  /** The Drizzle database, for createApp({ db, config, clock }) when you also want the HTTP API. */
  readonly db: Db;
  readonly config: Config;
  readonly clock: Clock;
  /** The in-process transport a worker uses instead of httpTransport. */
  readonly transport: Transport;
  /** Adds a job (input checked as the API checks it: LeaseholdError naming the field). */
  enqueue(queue: string, payload: unknown, options?: EmbeddedEnqueueOptions): Promise<{ job: Job; deduplicated: boolean }>;
  getJob(id: string): Promise<Job | undefined>;
  /** A worker on the in-process transport (call start() on it). */
  createWorker<P = unknown>(options: Omit<WorkerOptions<P>, 'transport'>): Worker;
  /** One reaper pass now. */
  reap(): Promise<ReapReport>;
  /**
   * The reaper every config.reaperIntervalMs; returns its stop function. It
   * logs each job it takes back and each pass that did something: to `log`
   * (a Logger, or a function given each message), default stdout.
   */
  startReaper(log?: Logger | ((line: string) => void)): () => void;
  /** Closes the database (stop workers and the reaper first). */
  close(): void;
}

/** Opens (and migrates) the database and answers the embedded API over it. Throws ConfigError on impossible settings. */
export async function openLeasehold(options: OpenOptions = {}): Promise<Leasehold> {
  const config = defaultConfig({
    ...options.config,
    ...(options.databaseUrl !== undefined ? { databaseUrl: options.databaseUrl } : {}),
    ...(options.databaseAuthToken !== undefined ? { databaseAuthToken: options.databaseAuthToken } : {}),
  });
  const { errors } = checkConfig(config);
  if (errors.length > 0) throw new ConfigError(errors);
  const clock = options.clock ?? databaseClock;
  const opened = await openDatabase(config);
  const db = opened.db;
  const store = createStore(db);
  const transport = dbTransport({ db, config, clock });
  return {
    db,
    config,
    clock,
    transport,
    async enqueue(queue, payload, opts = {}) {
      const { runAt, ...rest } = opts;
      const input = { ...rest, payload, ...(runAt === undefined ? {} : { runAt: runAt instanceof Date ? runAt.toISOString() : runAt }) };
      const [result] = await store.jobsInsert({ queue: parseQueue(queue), jobs: [toNewJob(newJob.parse(input, ''), '')], actor: 'embedded', now: clock.now(), defaults: config, maxQueues: config.maxQueues });
      if (!result!.deduplicated) claimWaiters(db).notify(result!.job.queue_name);
      return { job: toJob(result!.job), deduplicated: result!.deduplicated };
    },
    async getJob(id) {
      if (!/^[0-9]{1,15}$/.test(id)) return undefined;
      const row = await store.jobGet({ id: Number(id) });
      return row && toJob(row);
    },
    createWorker: (workerOptions) => createWorker({ ...workerOptions, transport }),
    reap: () => reapOnce(db, clock.now(), config),
    startReaper: (log) => startReaperTimer(db, config, clock, typeof log === 'function' ? createLogger({ level: config.logLevel, sink: (r) => log(r.msg) }) : (log ?? streamLogger({ level: config.logLevel, format: config.logFormat }))),
    close: () => opened.close(),
  };
}
