/**
 * The handler's view of its job (ctx): the job, its signal, and the writes it
 * may make under the lease (heartbeat, checkpoint, extendLease, once). A write
 * the server refuses aborts the signal and throws its reason, so the handler
 * stops where it stands.
 */
import { textProblem } from '../core/text.ts';
import { abortJob, abortRefused, leaseGone, type Held, type Running } from './held.ts';
import type { LeaseKeeper } from './lease-keeper.ts';
import { persist } from './persist.ts';
import type { LeaseAnswer } from './transport.ts';
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
      const [answer] = await transport.heartbeat({ workerId, leases: [{ ...lease, progress }] });
      keeper.applyAnswers([answer!], sentAt);
      refused(answer!);
    },
    async checkpoint(data) {
      const sentAt = timers.now();
      const answer = await transport.checkpoint({ workerId, lease, checkpoint: data });
      keeper.applyAnswers([answer], sentAt);
      refused(answer);
    },
    async extendLease(ms) {
      const sentAt = timers.now();
      const [answer] = await transport.heartbeat({ workerId, leases: [lease], leaseMs: ms });
      if (answer!.ok) r.leaseValidUntil = Math.max(r.leaseValidUntil, sentAt + ms);
      refused(answer!);
    },
    async once<T>(key: string, fn: () => T | Promise<T>): Promise<T> {
      const problem = textProblem(key);
      if (problem) throw new TypeError(`once(): the key ${JSON.stringify(key)} ${problem}`);
      const started = await transport.effectStart({ workerId, lease, key });
      if (started.kind === 'done') return started.result as T;
      if (started.kind === 'lease_lost') throw lost(started.message);
      const result = await fn();
      // Recorded only under the lease, like every owned write. If the lease
      // was lost meanwhile, the effect stays `started` and the attempt that
      // now holds the job runs it again: the window that at-least-once leaves.
      const recorded = await persist(w, leaseGone(w, r), 'once', () => transport.effectFinish({ workerId, lease, key, result: result ?? null }));
      if (recorded?.kind === 'lease_lost') throw lost(recorded.message);
      return (recorded === undefined ? result : recorded.result) as T;
    },
  };
}
