/** Turns store outcomes into wire shapes and errors. */
import { LeaseholdError } from '../core/errors.ts';
import type { OwnedOutcome } from '../db/store/owned.ts';
import type { OperatorOutcome } from '../db/store/operator.ts';
import { iso } from '../db/store/record.ts';

export function ownedError(o: Exclude<OwnedOutcome, { ok: true }>): LeaseholdError {
  if (o.reason === 'not_found') return new LeaseholdError('not_found', `no job has id ${o.id}`, 'id');
  if (o.cause === 'deadline_exceeded') {
    // The attempt ran out of time: past its deadline the owner may still
    // complete or fail it, but not keep it (heartbeat, extend, checkpoint, release).
    const why = o.status === 'running' ? 'passed its deadline: it can still be completed or failed, not kept' : `is ${o.status}: the reaper took it back at its deadline`;
    return new LeaseholdError('lease_lost', `job ${o.id} ${why}, and the write changed nothing`, 'lockToken', { status: o.status, cause: 'deadline_exceeded' });
  }
  const why = o.status === 'running' ? 'is running under a newer claim' : `is ${o.status}`;
  return new LeaseholdError('lease_lost', `job ${o.id} ${why}: this worker no longer holds it, and the write changed nothing`, 'lockToken', {
    status: o.status,
  });
}

/** One entry of a batched answer: ok with data, or the error this job would have got alone. */
export function batchEntry(o: OwnedOutcome, ok: (job: Extract<OwnedOutcome, { ok: true }>['job']) => Record<string, unknown>) {
  if (o.ok) return { id: String(o.id), ok: true, ...ok(o.job) };
  const err = ownedError(o);
  return { id: String(o.id), ok: false, error: { code: err.code, message: err.message, ...(err.details ?? {}) } };
}

export function operatorError(o: Exclude<OperatorOutcome, { ok: true }>, id: number, wanted: string): LeaseholdError {
  if (o.reason === 'not_found') return new LeaseholdError('not_found', `no job has id ${id}`, 'id');
  if (o.reason === 'reaper_would_wait') {
    return new LeaseholdError(
      'conflict',
      `job ${id} is running and the reaper would not take it back now: ${o.why}. Nothing changed; the reaper acts by itself when it should (force, with a reason, takes it now and may run it twice)`,
      'id',
      { status: o.status, why: o.why, reaperTakesAt: iso(o.takesAt) },
    );
  }
  if (o.keyHeldBy !== undefined) {
    return new LeaseholdError(
      'conflict',
      `job ${id} shares its idempotency key with job ${o.keyHeldBy}, which is pending or running: two active jobs never share a key. Nothing changed; retry it once job ${o.keyHeldBy} finished`,
      'id',
      { status: o.status, keyHeldBy: String(o.keyHeldBy) },
    );
  }
  return new LeaseholdError('conflict', `job ${id} is ${o.status}; ${wanted}`, 'id', { status: o.status });
}

export const leaseFields = (j: { lease_expires_at: number | null; deadline_at: number | null; lease_epoch: number }) => ({
  leaseExpiresAt: iso(j.lease_expires_at),
  deadlineAt: iso(j.deadline_at),
  fencingToken: j.lease_epoch,
});
