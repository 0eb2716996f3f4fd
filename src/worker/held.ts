/**
 * What the parts of a worker share: the jobs it holds (one `Running` per
 * claimed job, each with its own AbortController and local lease copy), its
 * counters, its events, and the one way a job's signal gets aborted.
 *
 * The claim loop adds jobs, the lease keeper renews and fences them, the
 * completer ends them, and close() drains them; each reads and writes this
 * and nothing of the others'.
 */
import { JobAbortedError, type AbortCause } from './errors.ts';
import { describe } from './log.ts';
import type { ServerWatch } from './server-watch.ts';
import type { WorkerTimers } from './timers.ts';
import type { ClaimedJob, LeaseAnswer, Transport } from './transport.ts';
import type { Logger, WorkerEvents } from './types.ts';

export interface Running {
  job: ClaimedJob;
  /**
   * Why the job was stopped (lease lost, deadline, shutdown), once it was
   * (abortJob). The worker's own checks read this, not the signal: an
   * AbortSignal's getters cost more than a field, on every job.
   */
  abortedBy: JobAbortedError | undefined;
  /** The handler's signal, made when the handler starts (signalOf). */
  controller: AbortController | undefined;
  leaseMs: number;
  /** Local time until which the lease is surely still ours (a renewal sent at local time t is good until t + lease). */
  leaseValidUntil: number;
  /** Local time at which the worker fences itself: `leaseValidUntil` less a tenth of the lease (see FENCE_SHARE). */
  fenceAt: number;
  progress: unknown;
  deadlineTimer: unknown;
  /** Fires at `fenceAt` (re-armed when it finds the lease renewed meanwhile): lease-keeper.ts. */
  fenceTimer: unknown;
  /** The handler has returned and its completion or failure is being sent: shutdown must not release it. */
  finishing: boolean;
}

export type WorkerState = 'new' | 'running' | 'stopping' | 'stopped';

/** Counts since start. */
export interface WorkerStats {
  claimed: number;
  completed: number;
  failed: number;
  /** Snoozes the server took (JobSnooze): back to pending, the attempt given back. */
  snoozed: number;
  abandoned: number;
  leaseLost: number;
  eventLoopBlocked: number;
  /** The longest of those blocks, in ms. */
  longestEventLoopBlockMs: number;
  heartbeatFailures: number;
}

export type Emit = <K extends keyof WorkerEvents>(event: K, payload: WorkerEvents[K]) => void;

/** One worker's shared state and surroundings, handed to each of its parts. */
export interface Held {
  transport: Transport;
  workerId: string;
  /** This process of the worker (random per createWorker). */
  instanceId: string;
  queues: string[];
  timers: WorkerTimers;
  logger: Required<Logger>;
  /** Whether the server answers the worker's calls: folds an outage's failures into two log lines. */
  server: ServerWatch;
  emit: Emit;
  stats: WorkerStats;
  /** The jobs this worker holds, by id. */
  active: Map<string, Running>;
  /**
   * Ids of claims whose answer never arrived and that the worker gave up on
   * (it will never act on them): the next beats name them, so the server
   * gives their jobs back to the queue, until a beat naming them is answered.
   */
  lostClaims: Set<string>;
  /** A new id for a claim request, unique to this process: sent again with a retry of that claim, never with another. */
  nextClaimId(): string;
  state(): WorkerState;
}

/** Listeners per event; a listener that throws is logged, never breaks the worker. */
export function createEmitter(logger: () => Required<Logger>) {
  const listeners = new Map<keyof WorkerEvents, Set<(e: never) => void>>();
  const emit: Emit = function emit(event, payload) {
    for (const fn of listeners.get(event) ?? []) {
      try {
        (fn as (e: typeof payload) => void)(payload);
      } catch (err) {
        logger().error(`listener for ${event} threw: ${String(err)}`, { event, error: describe(err) });
      }
    }
  };
  function on<K extends keyof WorkerEvents>(event: K, fn: (e: WorkerEvents[K]) => void) {
    let set = listeners.get(event);
    if (!set) listeners.set(event, (set = new Set()));
    set.add(fn as (e: never) => void);
  }
  return { emit, on };
}

/**
 * The job's AbortSignal, aborted with `abortedBy` if the job was stopped
 * before it was made. Made for the handler's context, not at claim: creating
 * an AbortSignal costs a few microseconds, and a job dropped before it
 * starts never needs one. (A getter on ctx that made it only when read cost
 * more than it saved: an object literal with an accessor is slow to create.)
 */
export function signalOf(r: Running): AbortSignal {
  if (!r.controller) {
    r.controller = new AbortController();
    if (r.abortedBy) r.controller.abort(r.abortedBy);
  }
  return r.controller.signal;
}

/** Aborts the job's signal once, with a JobAbortedError; a lost lease is counted and announced. */
export function abortJob(w: Held, r: Running, reason: AbortCause, message: string): void {
  if (r.abortedBy) return;
  r.abortedBy = new JobAbortedError(reason, message);
  r.controller?.abort(r.abortedBy);
  if (reason === 'lease_lost' || reason === 'lease_expired_locally') {
    w.stats.leaseLost++;
    w.emit('lease_lost', { job: r.job, reason, message });
  }
}

/** A refused write: the server says whether the attempt ran out of time or the lease is gone. */
export function abortRefused(w: Held, r: Running, a: Extract<LeaseAnswer, { ok: false }>): void {
  abortJob(w, r, a.cause === 'deadline_exceeded' ? 'deadline_exceeded' : 'lease_lost', a.message);
}

/**
 * Share of a lease the worker gives up before the lease runs out by its own
 * clock: its handler is aborted (`lease_expired_locally`) at
 * `confirmed-until - lease / 10`, never after it.
 *
 * The local copy is already conservative (counted from when the renewal was
 * sent, not when the server stored it), and the reaper waits a grace of at
 * least one heartbeat past the server's expiry. The tenth is on top of both:
 * it covers a worker clock running slower than the database's (a tenth of the
 * lease is a hundred times what NTP lets a clock drift), a fence timer that
 * fires late because the event loop was blocked, and the travel time of the
 * last request the handler had in flight when it was stopped. Between the
 * abort and the earliest moment the reaper may hand the job to someone else
 * there are so at least grace + lease / 10.
 */
export const FENCE_SHARE = 1 / 10;

/** The server accepted a lease of `leaseMs` sent at local time `sentAt` (a claim, a renewal, an extend): the local copy only grows. */
export function confirmLease(r: Pick<Running, 'leaseValidUntil' | 'fenceAt'>, sentAt: number, leaseMs: number): void {
  r.leaseValidUntil = Math.max(r.leaseValidUntil, sentAt + leaseMs);
  r.fenceAt = Math.max(r.fenceAt, sentAt + leaseMs * (1 - FENCE_SHARE));
}

/** A check that turns true once every one of `rs` is past its local lease: retrying a write for them no longer matters. */
export function leaseGone(w: Held, ...rs: Running[]): () => boolean {
  return () => rs.every((r) => w.timers.now() >= r.leaseValidUntil);
}
