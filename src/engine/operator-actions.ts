/**
 * What an operator does to one job (retry, cancel, requeue, force requeue),
 * defined once for the single API routes, the bulk route, the dashboard's
 * forms and the CLI: which statement each action runs, the force/reason rule,
 * and the one text of each refusal (the reaper's decision included: a plain
 * requeue takes only what the reaper would take now, src/db/store/requeue.ts).
 *
 * @example
 *   const problem = forceRuleProblem({ action: 'requeue', force: true, reason: null });
 *   if (problem) throw invalid(problem.field, problem.message);
 *   const outcome = await runOperatorAction(store, { action: 'requeue', force: true, id: 7, actor, reason, now, rules: config });
 */
import type { Now } from '../core/clock.ts';
import type { JobStore, OperatorOutcome, OperatorParams, RequeueRules } from '../db/store/port.ts';
import { requeueDoneOf, takesNow, type ReapDecision } from '../core/reaper.ts';
import { HELD_NEEDS_REASON, ONLY_HELD, type HeldAction } from '../core/held.ts';

export type OperatorAction = 'retry' | 'cancel' | 'requeue';

/** What each action needs of the job, said when the job is in another state. */
export const ACTION_WANTS: Record<OperatorAction, string> = {
  cancel: 'only a pending job can be cancelled',
  retry: 'only a failed or cancelled job can be retried',
  requeue: 'only a running job can be requeued',
};

export const FORCE_ONLY_FOR_REQUEUE = 'force is only for requeue';
export const FORCE_NEEDS_REASON = 'a forced requeue needs a reason: it is kept in the audit trail';
/** What a requeue refused by the reaper's decision leaves the operator: wait, or force it (with a reason). */
export const REAPER_ACTS_ITSELF = 'the reaper acts by itself when it should (force, with a reason, takes it now and may run it twice)';

/** Enough of a RequeueDone (src/core/reaper.ts) to say it, as the store gives it or as the API answers it. */
export interface RequeueDoneText {
  action: 'requeue' | 'fail';
  reason: string;
  why: string;
  forced: boolean;
  held?: boolean | null | undefined;
  overrodeHold?: { why: string } | null | undefined;
  beyondBudget?: string | null | undefined;
}

/**
 * What a requeue does to a job, in the words the API, the dashboard and the
 * CLI share (before the operator confirms, and in the answer after):
 * "requeue it, as the reaper would take it back now: ...", "fail it for
 * good, as the reaper would now (attempts_exhausted): ...", or for force
 * what it goes past.
 */
export function requeueText(d: RequeueDoneText): string {
  if (d.forced) {
    const past = [d.overrodeHold ? `overriding the reaper's hold (${d.overrodeHold.why})` : null, d.beyondBudget ? `past its budget: ${d.beyondBudget}` : null].filter(Boolean);
    const held = d.held ? "and hold it for a person (onLost 'hold': it runs again only when released; " : '(it may run twice; ';
    return `requeue it by force ${held}${d.why})${past.length > 0 ? `, ${past.join(', and ')}` : ''}`;
  }
  if (d.action === 'fail') return `fail it for good, as the reaper would now (${d.reason}): ${d.why}`;
  if (d.held) return `hold it for a person (onLost 'hold'; it runs again only when released), as the reaper would take it back now: ${d.why}`;
  return `requeue it, as the reaper would take it back now: ${d.why}`;
}

/**
 * What a requeue without force would do now, from the reaper's decision (the
 * dashboard's verdict beside its Requeue button): the take in requeueText's
 * words, or "change nothing" and why.
 */
export function requeueVerdict(d: ReapDecision): string {
  return takesNow(d) ? requeueText(requeueDoneOf(d)) : `change nothing: the reaper would not take it back now (${d.why})`;
}

/**
 * The force/reason rule, checked before anything is read or written: force
 * belongs to requeue alone, and a forced requeue (which may run a job twice)
 * is kept in the audit trail with its reason.
 */
export function forceRuleProblem(p: { action: OperatorAction; force: boolean; reason: string | null | undefined }): { field: 'force' | 'reason'; message: string } | undefined {
  if (p.force && p.action !== 'requeue') return { field: 'force', message: FORCE_ONLY_FOR_REQUEUE };
  if (p.force && !p.reason) return { field: 'reason', message: FORCE_NEEDS_REASON };
  return undefined;
}

/** Runs one action on one job through the store: one guarded statement, with its audit entry alongside. */
export function runOperatorAction(
  store: Pick<JobStore, 'jobCancelIfPending' | 'jobRetryIfFinishedUnsuccessfully' | 'jobRequeueIfReaperWould'>,
  p: OperatorParams & { action: OperatorAction; force: boolean; rules: RequeueRules; now: Now },
): Promise<OperatorOutcome> {
  const { action, force, rules, ...params } = p;
  if (action === 'retry') return store.jobRetryIfFinishedUnsuccessfully(params);
  if (action === 'cancel') return store.jobCancelIfPending(params);
  return store.jobRequeueIfReaperWould({ ...params, force, rules });
}

/** The one text of an action's refusal, with the details the API answers beside it. */
export function operatorRefusal(
  o: Exclude<OperatorOutcome, { ok: true }>,
  id: number,
  action: OperatorAction,
): { code: 'not_found' | 'conflict'; message: string; details?: Record<string, unknown> } {
  if (o.reason === 'not_found') return { code: 'not_found', message: `no job has id ${id}` };
  if (o.reason === 'reaper_would_wait') {
    return {
      code: 'conflict',
      message: `job ${id} is running and the reaper would not take it back now: ${o.why}. Nothing changed; ${REAPER_ACTS_ITSELF}`,
      details: { status: o.status, why: o.why, takesAt: o.takesAt, ...(o.heldUntil !== undefined ? { heldUntil: o.heldUntil } : {}) },
    };
  }
  if (o.keyHeldBy !== undefined) {
    return {
      code: 'conflict',
      message: `job ${id} shares its idempotency key with job ${o.keyHeldBy}, which is pending or running: two active jobs never share a key. Nothing changed; retry it once job ${o.keyHeldBy} finished`,
      details: { status: o.status, keyHeldBy: String(o.keyHeldBy) },
    };
  }
  return { code: 'conflict', message: `job ${id} is ${o.status}; ${ACTION_WANTS[action]}`, details: { status: o.status } };
}

/**
 * Acting on a held job (src/core/held.ts): release (runs again), complete by
 * hand with a result, or fail. A reason is required: the person decides what
 * the lost attempt did, and the audit trail keeps why.
 */
export function heldReasonProblem(reason: string | null | undefined): { field: 'reason'; message: string } | undefined {
  return reason ? undefined : { field: 'reason', message: HELD_NEEDS_REASON };
}

/** Runs one action on one held job through the store: one guarded statement, with its audit entry alongside. */
export function runHeldAction(
  store: Pick<JobStore, 'jobReleaseIfHeld' | 'jobCompleteIfHeld' | 'jobFailIfHeld'>,
  p: OperatorParams & { action: HeldAction; result?: unknown },
): Promise<OperatorOutcome> {
  const { action, result, ...params } = p;
  if (action === 'release') return store.jobReleaseIfHeld(params);
  if (action === 'complete') return store.jobCompleteIfHeld({ ...params, result });
  return store.jobFailIfHeld(params);
}

/** The one text of a held action's refusal: not found, or the job's status (a pending job that is not held says so). */
export function heldRefusal(o: Exclude<OperatorOutcome, { ok: true }>, id: number): { code: 'not_found' | 'conflict'; message: string; details?: Record<string, unknown> } {
  if (o.reason === 'not_found') return { code: 'not_found', message: `no job has id ${id}` };
  if (o.reason === 'conflict' && o.heldByDependency !== undefined) {
    const dep = o.heldByDependency;
    return {
      code: 'conflict',
      message: `job ${id} is held because its dependency ${dep} failed (policy 'hold'), not after a lost attempt: released, it would still wait for job ${dep}. Retry job ${dep} (POST /api/v1/jobs/${dep}/retry) to let the flow go on, or complete, fail or cancel job ${id}. Nothing changed`,
      details: { status: o.status, held: true, heldByDependency: String(dep) },
    };
  }
  const status = o.status;
  const what = status === 'pending' ? 'pending but not held' : status;
  return { code: 'conflict', message: `job ${id} is ${what}; ${ONLY_HELD}. Nothing changed`, details: { status, held: false } };
}
