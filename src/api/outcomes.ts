/** Turns store outcomes into wire shapes and errors. */
import { LeaseholdError } from '../core/errors.ts';
import { iso } from '../core/job-record.ts';
import type { JobAnswer, Refusal } from '../engine/worker-protocol.ts';
import { heldRefusal, operatorRefusal, type OperatorAction } from '../engine/operator-actions.ts';
import type { EventRecord, OperatorOutcome, RequeueDone } from '../db/store/port.ts';

/** A worker protocol refusal as the API's error (its status, body and field). */
export function refusalError(r: Refusal): LeaseholdError {
  return new LeaseholdError(r.code, r.message, r.field, r.details);
}

/** One entry of a batched answer: ok with data, or the error this job would have got alone. */
export function batchEntry<T>(a: JobAnswer<T>, ok: (job: T) => Record<string, unknown>) {
  if (a.ok) return { id: String(a.id), ok: true, ...ok(a.job) };
  const { code, message, details } = a.refusal;
  return { id: String(a.id), ok: false, error: { code, message, ...(details ?? {}) } };
}

/** An operator action's refusal (src/engine/operator-actions.ts) as the API's error. */
export function operatorError(o: Exclude<OperatorOutcome, { ok: true }>, id: number, action: OperatorAction): LeaseholdError {
  const r = operatorRefusal(o, id, action);
  if (o.reason === 'reaper_would_wait') {
    return new LeaseholdError(r.code, r.message, 'id', { status: o.status, why: o.why, reaperTakesAt: iso(o.takesAt), ...(o.heldUntil !== undefined ? { heldUntil: iso(o.heldUntil) } : {}) });
  }
  return new LeaseholdError(r.code, r.message, 'id', r.details);
}

/** A held action's refusal (src/engine/operator-actions.ts heldRefusal) as the API's error. */
export function heldError(o: Exclude<OperatorOutcome, { ok: true }>, id: number): LeaseholdError {
  const r = heldRefusal(o, id);
  return new LeaseholdError(r.code, r.message, 'id', r.details);
}

/** What a requeue did, on the wire (times as ISO strings). */
export function requeueWire(d: RequeueDone) {
  return {
    action: d.action,
    reason: d.reason,
    why: d.why,
    forced: d.forced,
    held: d.held === true,
    overrodeHold: d.overrodeHold ? { until: iso(d.overrodeHold.until), why: d.overrodeHold.why } : null,
    beyondBudget: d.beyondBudget ?? null,
  };
}

export const leaseFields = (j: { lease_expires_at: number | null; deadline_at: number | null; lease_epoch: number }) => ({
  leaseExpiresAt: iso(j.lease_expires_at),
  deadlineAt: iso(j.deadline_at),
  fencingToken: j.lease_epoch,
});

/** A job's events as GET /jobs/:id answers them (the dashboard's raw download too). */
export function eventsWire(events: readonly EventRecord[]) {
  return events.map((e) => ({
    id: e.id === null ? null : String(e.id),
    derived: e.derived,
    type: e.type,
    at: iso(e.at),
    from: e.from_status,
    to: e.to_status,
    reason: e.reason,
    message: e.message,
    actor: e.actor,
    workerId: e.worker_id,
    attempt: e.attempt,
  }));
}
