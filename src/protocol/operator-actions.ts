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
import type { OperatorOutcome, OperatorParams } from '../db/store/operator.ts';
import type { JobStore } from '../db/store/port.ts';
import type { RequeueRules } from '../db/store/requeue.ts';

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
      details: { status: o.status, why: o.why, takesAt: o.takesAt },
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
