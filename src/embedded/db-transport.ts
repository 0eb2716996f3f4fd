/**
 * The in-process transport: the engine (src/engine/engine.ts) adapted to the
 * SDK's Transport. The HTTP API runs the same engine, so both answer alike,
 * refusals word for word, and a worker on either is woken by the same
 * transitions.
 */
import type { Engine } from '../engine/engine.ts';
import type { JobAnswer, Refusal } from '../engine/worker-protocol.ts';
import type { LeaseAnswer, LeaseRef, Transport } from '../worker/transport.ts';

function leaseAnswer(a: JobAnswer<unknown>): LeaseAnswer {
  if (a.ok) return { id: String(a.id), ok: true };
  const { code, message, details } = a.refusal;
  if (details?.cause === 'snooze_limit') return { id: String(a.id), ok: false, code: 'snooze_limit', message };
  const wire = code === 'conflict' ? 'lease_lost' : code;
  return details?.cause ? { id: String(a.id), ok: false, code: wire, message, cause: details.cause } : { id: String(a.id), ok: false, code: wire, message };
}

/**
 * The engine's lease fields with the call's own. Built with Object.assign on
 * a literal, never as `{ ...lease, more }`: V8 (Node 20) takes a slow path for
 * each property written after a spread of a fresh object, about a
 * microsecond each, and these run per job.
 */
const lease = (l: LeaseRef) => ({ id: Number(l.id), lockToken: l.lockToken });
const owned = <T extends object>(l: LeaseRef, rest: T) => Object.assign(lease(l), rest);
const lost = (r: Refusal) => ({ kind: 'lease_lost' as const, message: r.message });

export function dbTransport(engine: Engine): Transport {
  const protocol = engine;
  return {
    async claim(p) {
      // In-process callers are the application itself: no owner, not bounded.
      const { jobs, retryAfterMs } = await engine.claim(p);
      return retryAfterMs === undefined ? { jobs } : { jobs, retryAfterMs };
    },
    async heartbeat(p) {
      const answers = await protocol.heartbeat({ workerId: p.workerId, leases: p.leases.map((l) => owned(l, { progress: l.progress })), leaseMs: p.leaseMs, beat: p.beat });
      return answers.map(leaseAnswer);
    },
    async checkpoint(p) {
      return leaseAnswer(await protocol.checkpoint(owned(p.lease, { workerId: p.workerId, checkpoint: p.checkpoint })));
    },
    async complete(p) {
      const results = p.results.map((x) => owned(x, { result: x.result }));
      if (!p.claim) return { answers: (await protocol.complete({ workerId: p.workerId, results })).map(leaseAnswer), claimed: [] };
      const { answers, claimed } = await protocol.completeThenClaim({ workerId: p.workerId, instanceId: p.instanceId, results, claim: p.claim });
      return { answers: answers.map(leaseAnswer), claimed };
    },
    async fail(p) {
      return leaseAnswer(await protocol.fail(owned(p.lease, { workerId: p.workerId, error: p.error, retryable: p.retryable, retryAfterMs: p.retryAfterMs, abortedBy: p.abortedBy })));
    },
    async snooze(p) {
      return leaseAnswer(await protocol.snooze(owned(p.lease, { workerId: p.workerId, delayMs: p.delayMs })));
    },
    async release(p) {
      return (await protocol.release({ workerId: p.workerId, leases: p.leases.map(lease), reason: p.reason })).map(leaseAnswer);
    },
    async effectStart(p) {
      const a = await protocol.effectStart(owned(p.lease, { workerId: p.workerId, key: p.key }));
      return a.kind === 'refused' ? lost(a.refusal) : a;
    },
    async effectFinish(p) {
      const a = await protocol.effectFinish(owned(p.lease, { workerId: p.workerId, key: p.key, result: p.result, checkpoint: p.checkpoint }));
      return a.kind === 'refused' ? lost(a.refusal) : a;
    },
    async steps(p) {
      const a = await protocol.steps(owned(p.lease, { workerId: p.workerId }));
      return a.ok ? { kind: 'ok', steps: a.steps } : lost(a.refusal);
    },
    async dependencies(p) {
      const graph = await engine.jobDependencies(Number(p.id));
      if (!graph) throw new Error(`no job has id ${p.id}`);
      return graph.dependencies;
    },
    async reportDuplicate(p) {
      const a = await protocol.reportDuplicate(owned(p.lease, { workerId: p.workerId, key: p.key }));
      return a.ok ? { id: p.lease.id, ok: true } : leaseAnswer({ id: Number(p.lease.id), ok: false, refusal: a.refusal });
    },
  };
}
