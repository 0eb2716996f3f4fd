/**
 * The handler's view of its job (ctx): the job, its signal, and the writes it
 * may make under the lease (heartbeat, checkpoint, extendLease, once,
 * reportDuplicate). A write the server refuses aborts the signal and throws
 * its reason, so the handler stops where it stands. Each of these calls gives up when the lease runs
 * out by the worker's clock (a renewal: at the fence), whatever the network does.
 */
import { textProblem } from '../core/text.ts';
import { LAST_TRY_MS, withinLeases } from './call-budget.ts';
import { abortJob, abortRefused, confirmLease, leaseGone, type Held, type Running } from './held.ts';
import type { LeaseKeeper } from './lease-keeper.ts';
import { persist } from './persist.ts';
import type { CallOptions, LeaseAnswer } from './transport.ts';
import type { JobContext } from './types.ts';

export function createJobContext<P>(w: Held, keeper: Pick<LeaseKeeper, 'applyAnswers'>, r: Running): JobContext<P> {
  const { transport, workerId, timers } = w;
  const lease = { id: r.job.id, lockToken: r.job.lockToken };
  const refused = (a: LeaseAnswer) => {
    if (a.ok) return;
    abortRefused(w, r, a);
    throw r.controller.signal.reason;
  };
  const lost = (message: string) => {
    abortJob(w, r, 'lease_lost', message);
    return r.controller.signal.reason as Error;
  };
  // A renewal is worth waiting for until the fence; a write while the lease is ours.
  const renewal = <T>(call: (c: CallOptions) => Promise<T>) => withinLeases(w, r.fenceAt, 'heartbeat', call);
  const owned = <T>(what: string, call: (c: CallOptions) => Promise<T>) => withinLeases(w, r.leaseValidUntil, what, call, LAST_TRY_MS);
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
    },
    signal: r.controller.signal,
    idempotencyKey: r.job.idempotencyKey ?? `${r.job.queue}:${r.job.id}`,
    fencingToken: r.job.fencingToken,
    async heartbeat(progress) {
      if (progress !== undefined) r.progress = progress;
      const sentAt = timers.now();
      const [answer] = await renewal((c) => transport.heartbeat({ workerId, leases: [{ ...lease, progress }] }, c));
      keeper.applyAnswers([answer!], sentAt);
      refused(answer!);
    },
    async checkpoint(data) {
      const sentAt = timers.now();
      const answer = await owned('checkpoint', (c) => transport.checkpoint({ workerId, lease, checkpoint: data }, c));
      keeper.applyAnswers([answer], sentAt);
      refused(answer);
    },
    async extendLease(ms) {
      const sentAt = timers.now();
      const [answer] = await renewal((c) => transport.heartbeat({ workerId, leases: [lease], leaseMs: ms }, c));
      if (answer!.ok) confirmLease(r, sentAt, ms);
      refused(answer!);
    },
    async reportDuplicate(key) {
      const problem = typeof key !== 'string' || key.length === 0 || key.length > 200 ? 'is not 1 to 200 characters' : textProblem(key);
      if (problem) throw new TypeError(`reportDuplicate(): the key ${JSON.stringify(key)} ${problem}`);
      // Not a renewal (the lease stays as it was): only a refusal is applied.
      refused(await owned('reportDuplicate', (c) => transport.reportDuplicate({ workerId, lease, key }, c)));
    },
    async once<T>(key: string, fn: () => T | Promise<T>): Promise<T> {
      const problem = textProblem(key);
      if (problem) throw new TypeError(`once(): the key ${JSON.stringify(key)} ${problem}`);
      const started = await owned('once', (c) => transport.effectStart({ workerId, lease, key }, c));
      if (started.kind === 'done') return started.result as T;
      if (started.kind === 'lease_lost') throw lost(started.message);
      const result = await fn();
      // Recorded only under the lease, like every owned write. If the lease
      // was lost meanwhile, the effect stays `started` and the attempt that
      // now holds the job runs it again: the window that at-least-once leaves.
      const recorded = await persist(w, leaseGone(w, r), 'once', () => owned('once', (c) => transport.effectFinish({ workerId, lease, key, result: result ?? null }, c)));
      if (recorded?.kind === 'lease_lost') throw lost(recorded.message);
      return (recorded === undefined ? result : recorded.result) as T;
    },
  };
}
