/**
 * The worker's public types: what a handler gets (JobContext), the events a
 * worker emits, the logger it reports to, and its options.
 */
import type { DependencyLinkWire } from '../core/wire.ts';
import type { AbortCause } from './errors.ts';
import type { WorkerTimers } from './timers.ts';
import type { ClaimedJob, Transport } from './transport.ts';

export interface JobContext<P = unknown> {
  job: {
    id: string;
    queue: string;
    payload: P;
    attempt: number;
    maxAttempts: number;
    priority: number;
    /** What an earlier attempt saved with checkpoint(), or null. */
    checkpoint: unknown;
    progress: unknown;
    /** The job's group (a tenant, a customer), or null; null also from a server older than groups. */
    group: string | null;
    /** How many times the job was snoozed so far (JobSnooze spends no attempt; the queue's maxSnoozes bounds them); 0 from a server older than snooze. */
    snoozes: number;
  };
  /** Aborted on lease loss, deadline or shutdown; `signal.reason` says which. */
  signal: AbortSignal;
  /** Stable across attempts: pass it to downstream systems to deduplicate. */
  idempotencyKey: string;
  /**
   * Grows with every claim of this job: downstream systems can refuse writes
   * from an older claim (leasehold/fencing: SQL for your own table, and the
   * `Leasehold-Fencing-Token` header for a service).
   */
  fencingToken: number;
  /** Renews the lease now (the heartbeat loop does it anyway), optionally with progress. */
  heartbeat(progress?: unknown): Promise<void>;
  /** Saves state the next attempt starts from (ctx.job.checkpoint). */
  checkpoint(data: unknown): Promise<void>;
  /** Sets the lease to `ms` from now, before a long step that cannot heartbeat. */
  extendLease(ms: number): Promise<void>;
  /**
   * Runs `fn` at most once per (job, key) across attempts, and returns its
   * recorded result on later attempts. A crash (or lost lease) after `fn`
   * ran but before its result was recorded runs it again: pass
   * `idempotencyKey` to the downstream system as well.
   */
  once<T>(key: string, fn: () => T | Promise<T>): Promise<T>;
  /**
   * Tells leasehold the handler found, downstream, that its work was already
   * done (a payment with this key exists, the row is already there): recorded
   * as event `duplicate_reported` with `key`, counted in
   * leasehold_duplicates_reported_total and by the duplicate_executions
   * alert. An owned write: refused (and the handler aborted) once the lease
   * is lost. `key`: 1 to 200 characters.
   */
  reportDuplicate(key: string): Promise<void>;
  /**
   * Runs `fn` as a named step of the job: once() and a checkpoint recorded
   * together. Before fn, the step is recorded `started` under the lease;
   * after it, its result (and `options.checkpoint`) in one owned write. On a
   * later attempt a step is either done (its recorded result is returned, fn
   * does not run) or uncertain: an earlier claim started it and never
   * recorded it done (it may or may not have run). For an uncertain step,
   * `options.ifUncertain` decides: 'run' runs fn again, 'skip' returns
   * undefined without running it, and the default, 'throw', fails the job for
   * good with a StepUncertainError naming the step. Names: 1 to 195
   * characters; once() keys that start with "step:" are steps'.
   */
  step<T>(name: string, fn: () => T | Promise<T>, options?: StepOptions<T>): Promise<T>;
  /**
   * The job's steps as this claim found them: fetched from leasehold once
   * per attempt, on the first call to steps() or step() (no request on a
   * job's first claim, which has none), then kept up to date by this
   * attempt's own steps. The server records each uncertain step it finds as
   * a `step_uncertain` event.
   */
  steps(): Promise<StepState[]>;
  /**
   * What this job waited for (a flow's job, docs/flows.md): each dependency
   * with its queue, status, the edge's state ('completed'; 'ignored': it
   * failed or was cancelled and this job's policy 'run' counted it as met)
   * and a completed one's `result`, in id order (as GET
   * /jobs/:id/dependencies answers). `R`: the type the results have (not
   * checked). One request per call; an empty list for a job that waits for
   * nothing.
   * @example
   *   const parts = await ctx.dependencies<{ url: string }>();
   *   const urls = parts.filter((d) => d.state === 'completed').map((d) => d.result!.url);
   */
  dependencies<R = unknown>(): Promise<JobDependency<R>[]>;
}

/** One job a job waits for, and where that edge stands: ctx.dependencies(). */
export interface JobDependency<R = unknown> extends Omit<DependencyLinkWire, 'result'> {
  /** The dependency's result when it completed; null otherwise. */
  result: R | null;
}

export interface StepOptions<T = unknown> {
  /** What to do when an earlier claim started this step and never recorded it done. Default 'throw'. */
  ifUncertain?: 'run' | 'skip' | 'throw';
  /** Saved as the job's checkpoint in the same write as the step's result (a function gets the result). */
  checkpoint?: ((result: T) => unknown) | unknown;
}

/** One step as a claim finds it: done (with its result), uncertain, or running (started by this claim). */
export interface StepState {
  name: string;
  state: 'done' | 'uncertain' | 'running';
  /** The attempt that started it (for a done step: that recorded it). */
  attempt: number;
  /** The recorded result (done), else null. */
  result: unknown;
}

export type Handler<P = unknown> = (ctx: JobContext<P>) => unknown;

export interface WorkerEvents {
  claimed: { job: ClaimedJob };
  completed: { job: ClaimedJob; result: unknown };
  failed: { job: ClaimedJob; error: unknown; retryable: boolean };
  /** The handler threw JobSnooze and the server took it: due again after delayMs, no attempt spent. */
  snoozed: { job: ClaimedJob; delayMs: number };
  lease_lost: { job: ClaimedJob; reason: AbortCause; message: string };
  heartbeat_failed: { error: unknown; jobs: string[] };
  abandoned: { job: ClaimedJob; reason: string };
  event_loop_blocked: { delayMs: number; jobs: string[] };
  error: { error: unknown; during: string };
  /** `error`: why the worker stopped by itself (its token was refused), when it did. */
  stopped: { released: string[]; error?: unknown };
}

/** What a log call carries besides its message: workerId, jobId / jobIds, error, ... */
export type LogFields = Record<string, unknown>;

/**
 * Where the worker reports what it cannot throw (a failed claim it retries,
 * a late heartbeat, a lease lost). Each call gets a message and structured
 * fields (always `workerId`; `jobId`/`jobIds`, `error`, durations where they
 * apply), so a JSON logger can index them. `console` fits as is (it prints
 * the fields after the message), and so does leasehold's own Logger
 * (createLogger in the `leasehold` entry). A logger written for the old
 * one-argument form keeps working: it just ignores the fields.
 */
export interface Logger {
  debug?(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

export interface WorkerOptions<P = unknown> {
  transport: Transport;
  /** One queue, or several served round-robin. */
  queue: string | string[];
  handler: Handler<P>;
  /** Jobs run at once. Default 1. */
  concurrency?: number;
  /** Lease to ask for; default: the queue's. */
  leaseMs?: number;
  /**
   * Heartbeat interval. Default: 5 s, or a third of `leaseMs` when that is
   * shorter (logged once), lowered to what the server says in each claim.
   */
  heartbeatMs?: number;
  /** Poll interval when idle; doubles while idle up to maxPollMs, with jitter. Default 500. */
  pollMs?: number;
  maxPollMs?: number;
  /**
   * Idle on one queue, a claim waits on the server up to this long for work
   * (woken by an enqueue), at most a quarter of the lease. Default 5000; 0
   * turns it off (poll with pollMs instead).
   */
  claimWaitMs?: number;
  /** Most jobs per claim call. Default 200. A server takes at most its LEASEHOLD_MAX_CLAIM_BATCH (default 500) per claim, and a larger claimBatch as that. */
  claimBatch?: number;
  /**
   * Most jobs held beyond `concurrency`, claimed ahead so that fast handlers
   * do not wait a round trip for each batch. Only as many as the running
   * handlers are expected to start within an eighth of the lease (or of the
   * job's deadline), judged by how long recent handlers took: none before
   * the first handler has finished, none for handlers that slow. They are
   * renewed like running jobs and given back unstarted at close(). They
   * start in the server's fairness: jobs without a group first, then
   * grouped jobs a turn at a time across groups, so a group's backlog held
   * here does not hold back another group's jobs claimed after it.
   * Default: claimBatch - concurrency (at least 0); 0 turns it off.
   */
  claimAhead?: number;
  /** Default: host-pid-random. */
  workerId?: string;
  /** How long close() lets running jobs finish before it aborts them and releases their leases. Default 10 s. */
  drainTimeoutMs?: number;
  /** Close on SIGTERM / SIGINT (where the runtime has process signals). Default true. */
  handleSignals?: boolean;
  logger?: Logger;
  /** Reported in the worker registry. */
  identity?: { host?: string; pid?: number; version?: string };
  /**
   * For tests: the clock and timers every part of the worker uses (default:
   * performance.now() and the runtime's timers). A fake one lets a test watch
   * a lease run out or a deadline pass without waiting for it.
   */
  timers?: WorkerTimers;
}
