/**
 * The in-process transport: the worker calls the store directly on a database
 * handle, with the same guarded statements the HTTP API runs.
 */
import { claimOrWait, claimWaiters, MAX_CLAIM_WAIT_MS } from '../api/claim-waiters.ts';
import { databaseClock, type Clock } from '../core/clock.ts';
import type { Config } from '../core/config.ts';
import type { Db } from '../db/db.ts';
import { jobsClaimPending } from '../db/store/claim.ts';
import { effectFinishIfOwned, effectStartIfOwned } from '../db/store/effects.ts';
import { jobFailIfOwned, jobsCompleteIfOwned, jobsCompleteThenClaim, jobsReleaseIfOwned } from '../db/store/finish.ts';
import { jobCheckpointIfOwned, jobsHeartbeatIfOwned } from '../db/store/lease.ts';
import type { OwnedOutcome } from '../db/store/owned.ts';
import { workerBeat } from '../db/store/workers.ts';
import { jsonOrNull } from '../db/sql.ts';
import { parsed, toClaimedJob } from '../db/store/record.ts';
import type { LeaseAnswer, Transport, WorkerLiveness } from '../worker/transport.ts';


function answer(o: OwnedOutcome): LeaseAnswer {
  if (o.ok) return { id: String(o.id), ok: true };
  return o.reason === 'not_found'
    ? { id: String(o.id), ok: false, code: 'not_found', message: `no job has id ${o.id}` }
    : o.cause === 'deadline_exceeded'
      ? { id: String(o.id), ok: false, code: 'lease_lost', message: `job ${o.id} passed its deadline (it is ${o.status})`, cause: 'deadline_exceeded' }
      : { id: String(o.id), ok: false, code: 'lease_lost', message: `job ${o.id} is ${o.status} and no longer held by this claim` };
}

/** A beat as the store takes it: the counters grouped. */
function liveness(p: WorkerLiveness) {
  const counters = { eventLoopBlocks: p.eventLoopBlocks, longestEventLoopBlockMs: p.longestEventLoopBlockMs, heartbeatFailures: p.heartbeatFailures, leasesLost: p.leasesLost };
  return { instanceId: p.instanceId, host: p.host, pid: p.pid, version: p.version, queues: p.queues, runningCount: p.runningCount, counters };
}

export function dbTransport(deps: { db: Db; config: Config; clock?: Clock }): Transport {
  const { db, config } = deps;
  const clock = deps.clock ?? databaseClock;
  return {
    async claim(p) {
      const { waitMs, signal, ...params } = p;
      const rows = await claimOrWait({
        waiters: claimWaiters(db),
        queue: params.queue,
        waitMs: Math.min(waitMs ?? 0, MAX_CLAIM_WAIT_MS),
        signal,
        claim: () => jobsClaimPending(db, { ...params, now: clock.now(), defaults: config }),
      });
      return rows.map(toClaimedJob);
    },
    async heartbeat(p) {
      const outcomes = await jobsHeartbeatIfOwned(db, {
        workerId: p.workerId,
        leases: p.leases.map((l) => ({ id: Number(l.id), lockToken: l.lockToken, data: jsonOrNull(l.progress) })),
        leaseMs: p.leaseMs,
        beat: p.beat && liveness(p.beat),
        now: clock.now(),
      });
      return outcomes.map(answer);
    },
    async checkpoint(p) {
      const [o] = await jobCheckpointIfOwned(db, { workerId: p.workerId, id: Number(p.lease.id), lockToken: p.lease.lockToken, checkpoint: JSON.stringify(p.checkpoint ?? null), now: clock.now() });
      return answer(o!);
    },
    async complete(p) {
      const params = {
        workerId: p.workerId,
        results: p.results.map((x) => ({ id: Number(x.id), lockToken: x.lockToken, data: jsonOrNull(x.result) })),
        now: clock.now(),
      };
      if (!p.claim) return { answers: (await jobsCompleteIfOwned(db, params)).map(answer), claimed: [] };
      const { outcomes, claimed } = await jobsCompleteThenClaim(db, { ...params, claim: p.claim, instanceId: p.instanceId, defaults: config });
      return { answers: outcomes.map(answer), claimed: claimed.map(toClaimedJob) };
    },
    async fail(p) {
      const [o] = await jobFailIfOwned(db, {
        workerId: p.workerId,
        id: Number(p.lease.id),
        lockToken: p.lease.lockToken,
        error: p.error,
        retryable: p.retryable,
        retryAfterMs: p.retryAfterMs,
        now: clock.now(),
        defaults: config,
      });
      return answer(o!);
    },
    async release(p) {
      const outcomes = await jobsReleaseIfOwned(db, {
        workerId: p.workerId,
        leases: p.leases.map((l) => ({ id: Number(l.id), lockToken: l.lockToken })),
        reason: p.reason,
        now: clock.now(),
      });
      return outcomes.map(answer);
    },
    async beat(p) {
      await workerBeat(db, { ...liveness(p), id: p.workerId, now: clock.now() });
    },
    async effectStart(p) {
      const o = await effectStartIfOwned(db, { jobId: Number(p.lease.id), key: p.key, lockToken: p.lease.lockToken, workerId: p.workerId, now: clock.now() });
      if (o.kind === 'done') return { kind: 'done', result: parsed(o.result) };
      if (o.kind === 'run') return o;
      return { kind: 'lease_lost', message: o.kind === 'not_found' ? `no job has id ${p.lease.id}` : `job ${p.lease.id} is ${o.status} and no longer held by this claim` };
    },
    async effectFinish(p) {
      const o = await effectFinishIfOwned(db, { jobId: Number(p.lease.id), key: p.key, lockToken: p.lease.lockToken, workerId: p.workerId, result: JSON.stringify(p.result ?? null), now: clock.now() });
      if (o.kind === 'done') return { kind: 'done', result: parsed(o.result) };
      if (o.kind === 'lease_lost') return { kind: 'lease_lost', message: `job ${p.lease.id} is ${o.status} and no longer held by this claim` };
      return { kind: 'lease_lost', message: o.kind === 'not_found' ? `no job has id ${p.lease.id}` : `this claim of job ${p.lease.id} started no effect named ${JSON.stringify(p.key)}` };
    },
  };
}
