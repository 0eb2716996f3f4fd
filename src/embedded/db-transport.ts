/**
 * The in-process transport: the worker protocol (src/protocol/worker-protocol.ts)
 * over a store on a database handle, adapted to the SDK's Transport. The HTTP
 * API runs the same protocol, so both answer alike, refusals word for word.
 */
import { claimOrWait, claimWaiters, MAX_CLAIM_WAIT_MS } from '../engine/claim-waiters.ts';
import { jobWatchers } from '../engine/job-watchers.ts';
import { databaseClock, type Clock } from '../core/clock.ts';
import type { Config } from '../core/config.ts';
import type { Db } from '../db/db.ts';
import { createStore, type JobStore } from '../db/store/create-store.ts';
import { createWorkerProtocol, rateLimitedWait, type JobAnswer, type Refusal } from '../engine/worker-protocol.ts';
import type { LeaseAnswer, LeaseRef, Transport } from '../worker/transport.ts';

function leaseAnswer(a: JobAnswer<unknown>): LeaseAnswer {
  if (a.ok) return { id: String(a.id), ok: true };
  const { code, message, details } = a.refusal;
  return details?.cause ? { id: String(a.id), ok: false, code, message, cause: details.cause } : { id: String(a.id), ok: false, code, message };
}

const lease = (l: LeaseRef) => ({ id: Number(l.id), lockToken: l.lockToken });
const lost = (r: Refusal) => ({ kind: 'lease_lost' as const, message: r.message });

export function dbTransport(deps: { db: Db; config: Config; clock?: Clock; store?: JobStore }): Transport {
  // Clients waiting on these jobs over HTTP, on the same database handle, hear of its writes too.
  const watchers = jobWatchers(deps.db);
  const protocol = createWorkerProtocol({ store: deps.store ?? createStore(deps.db), config: deps.config, clock: deps.clock ?? databaseClock, changed: (ids) => watchers.notify(ids) });
  return {
    async claim(p) {
      const { waitMs, signal, ...params } = p;
      const claimed = await claimOrWait({
        waiters: claimWaiters(deps.db),
        queue: params.queue,
        waitMs: Math.min(waitMs ?? 0, MAX_CLAIM_WAIT_MS),
        signal,
        claim: () => protocol.claim(params),
        // In-process callers are the application itself: not bounded.
        ready: (cap) => protocol.claimableCount({ queue: params.queue, cap }),
      });
      // As the HTTP route does, so the worker sleeps until the next window
      // instead of polling into the closed one.
      const wait = rateLimitedWait(claimed, params.limit);
      const jobs = [...claimed];
      return wait ? Object.assign(jobs, { retryAfterMs: wait.waitMs }) : jobs;
    },
    async heartbeat(p) {
      const answers = await protocol.heartbeat({ ...p, leases: p.leases.map((l) => ({ ...lease(l), progress: l.progress })) });
      return answers.map(leaseAnswer);
    },
    async checkpoint(p) {
      return leaseAnswer(await protocol.checkpoint({ ...lease(p.lease), workerId: p.workerId, checkpoint: p.checkpoint }));
    },
    async complete(p) {
      const results = p.results.map((x) => ({ ...lease(x), result: x.result }));
      if (!p.claim) return { answers: (await protocol.complete({ workerId: p.workerId, results })).map(leaseAnswer), claimed: [] };
      const { answers, claimed } = await protocol.completeThenClaim({ workerId: p.workerId, instanceId: p.instanceId, results, claim: p.claim });
      return { answers: answers.map(leaseAnswer), claimed };
    },
    async fail(p) {
      return leaseAnswer(await protocol.fail({ ...lease(p.lease), workerId: p.workerId, error: p.error, retryable: p.retryable, retryAfterMs: p.retryAfterMs }));
    },
    async release(p) {
      return (await protocol.release({ workerId: p.workerId, leases: p.leases.map(lease), reason: p.reason })).map(leaseAnswer);
    },
    beat: (p) => protocol.beat(p),
    async effectStart(p) {
      const a = await protocol.effectStart({ ...lease(p.lease), workerId: p.workerId, key: p.key });
      return a.kind === 'refused' ? lost(a.refusal) : a;
    },
    async effectFinish(p) {
      const a = await protocol.effectFinish({ ...lease(p.lease), workerId: p.workerId, key: p.key, result: p.result });
      return a.kind === 'refused' ? lost(a.refusal) : a;
    },
  };
}
