/**
 * What a job action's redirect says, by its ?notice= (and ?was=, the status
 * the job had): shown on the job page and the zombies page.
 */
import { FORCE_NEEDS_REASON, REAPER_ACTS_ITSELF } from '../engine/operator-actions.ts';
import { HELD_NEEDS_REASON } from '../core/held.ts';

const NOTICES: Record<string, string> = {
  retried: 'The job was put back to pending with a fresh attempt budget.',
  requeued: 'The job was requeued: its old lease is void, the old worker’s writes are refused.',
  force_requeued: 'The live lease was revoked and the job requeued.',
  // A requeue does what the reaper would do now: for a job whose budgets are spent, that is a final failure.
  failed_as_reaper_would: 'The job was failed for good, as the reaper would have: its attempts (or its lost-attempt budget) were spent. See its last error below.',
  force_requeued_override: 'The job was requeued by force, past what the reaper would do (its hold after a server restart or pause, or the job’s spent budget): the job’s events and the audit trail say what it overrode.',
  cancelled: 'The job was cancelled.',
  held_released: 'The held job was released: it is pending again, due now, and runs at the next claim.',
  held_completed: 'The held job was completed by hand.',
  held_failed: 'The held job was failed for good.',
  held_reason_required: `Nothing changed: ${HELD_NEEDS_REASON}.`,
  result_not_json: 'Nothing changed: the result must be JSON (for example {"sent": true}), or left empty.',
  conflict: 'Nothing changed: the job is not in a state that allows this action (it may have moved on). See its current status below.',
  not_found: 'Nothing changed: there is no such job.',
  confirm_mismatch: 'Nothing changed: to force a requeue, type the job id exactly.',
  // The force/reason rule and the reaper's refusal in the words the API and the CLI use (src/engine/operator-actions.ts).
  reason_required: `Nothing changed: ${FORCE_NEEDS_REASON}.`,
  reaper_would_wait: `Nothing changed: the reaper would not take this job back now (see Reaper below for why); ${REAPER_ACTS_ITSELF}.`,
};

export function Notice(props: { notice: string | undefined; was?: string | undefined }) {
  // Own keys only: ?notice=constructor must not find Object.prototype's.
  const text = props.notice && Object.hasOwn(NOTICES, props.notice) ? NOTICES[props.notice] : undefined;
  if (!text) return null;
  const bad = !['retried', 'requeued', 'force_requeued', 'cancelled', 'held_released', 'held_completed', 'held_failed', 'failed_as_reaper_would', 'force_requeued_override'].includes(props.notice!);
  return (
    <p class={bad ? 'notice error' : 'notice'} role="status" id="notice">
      {text}
      {props.was ? ` (status: ${props.was})` : ''}
    </p>
  );
}
