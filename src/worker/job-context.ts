/**
 * The handler's view of its job (ctx): the job, its signal, the writes it
 * may make under the lease (heartbeat, checkpoint, extendLease, once, step,
 * reportDuplicate), and what it reads (steps, dependencies). A write the server refuses aborts the signal and throws
 * its reason, so the handler stops where it stands. Each of these calls gives
 * up when the lease runs out by the worker's clock (a renewal: at the fence),
 * whatever the network does.
 */
import { textProblem } from '../core/text.ts';
import { LAST_TRY_MS, withinLeases } from './call-budget.ts';
import { abortJob, abortRefused, confirmLease, leaseGone, signalOf, type Held, type Running } from './held.ts';
import type { LeaseKeeper } from './lease-keeper.ts';
import { persist } from './persist.ts';
import type { CallOptions, LeaseAnswer, LeaseRef } from './transport.ts';
import { StepUncertainError } from './errors.ts';
import type { JobContext, JobDependency, StepOptions, StepState } from './types.ts';

/** A step named n is the ledger key `step:n`, which the server caps at 200 characters. */
const STEP_PREFIX = 'step:';
const MAX_STEP_NAME = 200 - STEP_PREFIX.length;

/*
 * The helpers below take the job (`r`) as an argument rather than closing
 * over it: a context is made for every job, most handlers call none of its
 * methods, and each closure made per job costs (more so under a loader that
 * keeps function names, as tsx does).
 */

const leaseOf = (r: Running): LeaseRef => ({ id: r.job.id, lockToken: r.job.lockToken });

/** A refused write stops the handler where it stands: its signal is aborted and the reason thrown. */
function refused(w: Held, r: Running, a: LeaseAnswer): void {
  if (a.ok) return;
  abortRefused(w, r, a);
  throw r.abortedBy;
}

function lost(w: Held, r: Running, message: string): Error {
  abortJob(w, r, 'lease_lost', message);
  return r.abortedBy!;
}

// A renewal is worth waiting for until the fence; a write while the lease is ours.
const renewal = <T>(w: Held, r: Running, call: (c: CallOptions) => Promise<T>) => withinLeases(w, r.fenceAt, 'heartbeat', call);
const owned = <T>(w: Held, r: Running, what: string, call: (c: CallOptions) => Promise<T>) => withinLeases(w, r.leaseValidUntil, what, call, LAST_TRY_MS);

/**
 * once() and step(): start under the lease, run, record the result (with
 * step()'s checkpoint) in one owned write.
 */
async function runOnce<T>(w: Held, r: Running, key: string, fn: () => T | Promise<T>, what: string, checkpointOf?: (result: T) => unknown): Promise<T> {
  const { transport, workerId } = w;
  const lease = leaseOf(r);
  const started = await owned(w, r, what, (c) => transport.effectStart({ workerId, lease, key }, c));
  if (started.kind === 'done') return started.result as T;
  if (started.kind === 'lease_lost') throw lost(w, r, started.message);
  const result = await fn();
  const checkpoint = checkpointOf?.(result);
  // Recorded only under the lease, like every owned write. If the lease
  // was lost meanwhile, the effect stays `started` and the attempt that
  // now holds the job finds it so (once(): runs it again; step(): uncertain).
  const recorded = await persist(w, leaseGone(w, r), what, () =>
    owned(w, r, what, (c) => transport.effectFinish({ workerId, lease, key, result: result ?? null, ...(checkpoint === undefined ? {} : { checkpoint }) }, c)),
  );
  if (recorded?.kind === 'lease_lost') throw lost(w, r, recorded.message);
  return (recorded === undefined ? result : recorded.result) as T;
}

export function createJobContext<P>(w: Held, keeper: Pick<LeaseKeeper, 'applyAnswers'>, r: Running): JobContext<P> {
  const { transport, workerId, timers } = w;
  // The steps as this claim found them, fetched once; this attempt's own steps update it.
  let found: Map<string, StepState> | undefined;
  let fetching: Promise<void> | undefined;
  async function steps(): Promise<StepState[]> {
    // A job's first claim has no steps: no request.
    if (!found && r.job.fencingToken <= 1) found = new Map();
    fetching ??= found
      ? Promise.resolve()
      : owned(w, r, 'steps', (c) => transport.steps({ workerId, lease: leaseOf(r) }, c)).then((a) => {
          if (a.kind === 'lease_lost') throw lost(w, r, a.message);
          found = new Map(a.steps.map((s) => [s.name, s]));
        });
    try {
      await fetching;
    } catch (err) {
      fetching = undefined;
      throw err;
    }
    return [...found!.values()].map((s) => ({ ...s }));
  }
  return {
    job: {
      id: r.job.id,
      queue: r.job.queue,
      payload: r.job.payload as P,
      attempt: r.job.attempt,
      maxAttempts: r.job.maxAttempts,
      priority: r.job.priority,
      checkpoint: r.job.checkpoint,
      progress: r.job.progress,
      group: r.job.group ?? null,
      snoozes: r.job.snoozes ?? 0,
    },
    signal: signalOf(r),
    idempotencyKey: r.job.idempotencyKey ?? `${r.job.queue}:${r.job.id}`,
    fencingToken: r.job.fencingToken,
    async heartbeat(progress) {
      if (progress !== undefined) r.progress = progress;
      const sentAt = timers.now();
      const [answer] = await renewal(w, r, (c) => transport.heartbeat({ workerId, leases: [{ id: r.job.id, lockToken: r.job.lockToken, progress }] }, c));
      keeper.applyAnswers([answer!], sentAt);
      refused(w, r, answer!);
    },
    async checkpoint(data) {
      const sentAt = timers.now();
      const answer = await owned(w, r, 'checkpoint', (c) => transport.checkpoint({ workerId, lease: leaseOf(r), checkpoint: data }, c));
      keeper.applyAnswers([answer], sentAt);
      refused(w, r, answer);
    },
    async extendLease(ms) {
      const sentAt = timers.now();
      const [answer] = await renewal(w, r, (c) => transport.heartbeat({ workerId, leases: [leaseOf(r)], leaseMs: ms }, c));
      if (answer!.ok) confirmLease(r, sentAt, ms);
      refused(w, r, answer!);
    },
    async reportDuplicate(key) {
      const problem = typeof key !== 'string' || key.length === 0 || key.length > 200 ? 'is not 1 to 200 characters' : textProblem(key);
      if (problem) throw new TypeError(`reportDuplicate(): the key ${JSON.stringify(key)} ${problem}`);
      // Not a renewal (the lease stays as it was): only a refusal is applied.
      refused(w, r, await owned(w, r, 'reportDuplicate', (c) => transport.reportDuplicate({ workerId, lease: leaseOf(r), key }, c)));
    },
    async once<T>(key: string, fn: () => T | Promise<T>): Promise<T> {
      const problem = textProblem(key);
      if (problem) throw new TypeError(`once(): the key ${JSON.stringify(key)} ${problem}`);
      return runOnce(w, r, key, fn, 'once');
    },
    steps,
    async dependencies<R>(): Promise<JobDependency<R>[]> {
      const read = transport.dependencies;
      if (!read) throw new TypeError('dependencies(): this transport has no dependencies() call');
      return (await owned(w, r, 'dependencies', (c) => read.call(transport, { id: r.job.id }, c))) as JobDependency<R>[];
    },
    async step<T>(name: string, fn: () => T | Promise<T>, options: StepOptions<T> = {}): Promise<T> {
      const problem = typeof name !== 'string' || name.length === 0 || name.length > MAX_STEP_NAME ? `is not 1 to ${MAX_STEP_NAME} characters` : textProblem(name);
      if (problem) throw new TypeError(`step(): the name ${JSON.stringify(name)} ${problem}`);
      const choice = options.ifUncertain ?? 'throw';
      if (!['run', 'skip', 'throw'].includes(choice)) throw new TypeError(`step(): ifUncertain is ${JSON.stringify(choice)}: 'run', 'skip' or 'throw'`);
      const known = (await steps()).find((s) => s.name === name);
      if (known?.state === 'uncertain') {
        // The server recorded what it found (step_uncertain); the handler's choice stands on it.
        if (choice === 'throw') throw new StepUncertainError(name, known.attempt);
        if (choice === 'skip') return undefined as T;
      }
      const checkpoint = options.checkpoint;
      const result = await runOnce(w, r, STEP_PREFIX + name, fn, 'step', checkpoint === undefined ? undefined : (v) => (typeof checkpoint === 'function' ? checkpoint(v) : checkpoint));
      found!.set(name, { name, state: 'done', attempt: r.job.attempt, result: result ?? null });
      return result;
    },
  };
}
