/**
 * A job's operator actions: the forms the job page shows for its status
 * (retry, cancel, requeue an expired lease as the reaper would, force
 * requeue), and the POST route they (and the zombies page's requeue) send
 * to, /dashboard/jobs/:id/:action. Every action is CSRF-checked by the
 * session guard, decided by the rules the API and the CLI keep
 * (src/engine/operator-actions.ts), recorded with who and why, and answered
 * with a redirect whose ?notice= says what happened (action-notice.tsx).
 */
import type { Child } from 'hono/jsx';
import type { Hono } from 'hono';
import type { AppDeps } from '../api/deps.ts';
import type { Config } from '../core/config.ts';
import { storableText } from '../core/text.ts';
import { forceRuleProblem, heldReasonProblem, requeueText, requeueVerdict, type OperatorAction } from '../engine/operator-actions.ts';
import type { HeldAction } from '../core/held.ts';
import { HeldActions } from './held-view.tsx';
import { alongside, once } from './acting.ts';
import { FormToken } from './form-token.tsx';
import { alreadySubmitted, type DashboardEnv } from './page.tsx';
import { forceView, reaperView } from './reaper-view.ts';
import type { OperatorOutcome, RunningJobView } from '../db/store/port.ts';

export function registerJobActions(app: Hono<DashboardEnv>, deps: AppDeps) {
  const { store, config, clock } = deps;
  // A held job (onLost 'hold', held-view.tsx): release, complete by hand, fail; a reason is required.
  app.post('/dashboard/jobs/:id{[0-9]{1,15}}/held/:action{release|complete|fail}', async (c) => {
    const id = Number(c.req.param('id'));
    const action = c.req.param('action') as HeldAction;
    const form = await c.req.parseBody();
    const reasonText = typeof form.reason === 'string' ? storableText(form.reason.trim(), 500) : '';
    const jobPage = `/dashboard/jobs/${id}`;
    const go = (notice: string, was?: string) => c.redirect(`${jobPage}?notice=${notice}${was ? `&was=${was}` : ''}`, 303);
    if (heldReasonProblem(reasonText)) return go('held_reason_required');
    let result: unknown;
    if (action === 'complete' && typeof form.result === 'string' && form.result.trim() !== '') {
      try {
        result = JSON.parse(form.result);
      } catch {
        return go('result_not_json');
      }
    }
    const also = alongside(c, { action: `job.${action}_held`, jobId: id, target: `job ${id}`, reason: reasonText, now: clock.now() }, config);
    const p = { id, actor: c.get('session').name, reason: reasonText, now: clock.now(), also, action, ...(result === undefined ? {} : { result }) };
    const ran = await once<OperatorOutcome>(store, () => deps.engine.heldAction(p));
    if (!ran) return alreadySubmitted(c);
    const outcome = ran.value;
    if (outcome.ok) return go({ release: 'held_released', complete: 'held_completed', fail: 'held_failed' }[action]);
    return outcome.reason === 'not_found' ? go('not_found') : go('conflict', outcome.status);
  });
  app.post('/dashboard/jobs/:id{[0-9]{1,15}}/:action{retry|requeue|force-requeue|cancel}', async (c) => {
    const id = Number(c.req.param('id'));
    const action = c.req.param('action');
    const session = c.get('session');
    const form = await c.req.parseBody();
    // The operator's own name, as typed at login: the job's events and the audit say who.
    const actor = session.name;
    const reasonText = typeof form.reason === 'string' ? storableText(form.reason.trim(), 500) : '';
    const reason = reasonText === '' ? null : reasonText;
    const jobPage = `/dashboard/jobs/${id}`;
    const back = form.return_to === '/dashboard/zombies' ? '/dashboard/zombies' : jobPage;
    const go = (notice: string, was?: string) => {
      const target = ['conflict', 'not_found', 'confirm_mismatch', 'reason_required', 'reaper_would_wait'].includes(notice) ? jobPage : back;
      return c.redirect(`${target}?notice=${notice}${was ? `&was=${was}` : ''}`, 303);
    };
    const force = action === 'force-requeue';
    const operatorAction: OperatorAction = force ? 'requeue' : (action as OperatorAction);
    const auditAction = force ? 'job.force_requeue' : (`job.${operatorAction}` as const);
    // The store names the job's queue and its status after the action in the entry (read in the same batch).
    const also = alongside(c, { action: auditAction, jobId: id, target: `job ${id}`, reason, now: clock.now() }, config);
    const p = { id, actor, reason, now: clock.now(), also };
    if (force && (typeof form.confirm !== 'string' || form.confirm.trim() !== String(id))) return go('confirm_mismatch');
    // The rule the API and the CLI keep too: a forced requeue needs a reason.
    if (forceRuleProblem({ action: 'requeue', force, reason })) return go('reason_required');
    const done = { retry: 'retried', cancel: 'cancelled', requeue: 'requeued', 'force-requeue': 'force_requeued' }[action as 'retry' | 'cancel' | 'requeue' | 'force-requeue'];
    const ran = await once<OperatorOutcome>(store, () => deps.engine.operatorAction({ ...p, action: operatorAction, force, rules: config }));
    if (!ran) return alreadySubmitted(c);
    const outcome = ran.value;
    if (outcome.ok && outcome.requeue?.action === 'fail') return go('failed_as_reaper_would');
    if (outcome.ok && outcome.requeue?.forced && (outcome.requeue.overrodeHold || outcome.requeue.beyondBudget)) return go('force_requeued_override');
    if (outcome.ok) return go(done);
    if (outcome.reason === 'reaper_would_wait') return go('reaper_would_wait');
    return outcome.reason === 'not_found' ? go('not_found') : go('conflict', outcome.status);
  });
}

/** The actions that fit the job's status when the page was loaded (the server re-checks each one). */
export function JobActions(props: { job: RunningJobView; now: number; csrf: string; config: Config }) {
  const { job: j } = props;
  const base = `/dashboard/jobs/${j.id}`;
  const reason = (required: boolean) => (
    <label>
      Reason{required ? '' : ' (optional)'} <input type="text" name="reason" maxlength={500} required={required} />
    </label>
  );
  const forms: Child[] = [];
  if (j.status === 'failed' || j.status === 'cancelled') {
    forms.push(
      <form method="post" action={`${base}/retry`} class="action">
        <FormToken csrf={props.csrf} />
        {reason(false)}
        <button type="submit">Retry</button>
      </form>,
    );
  }
  if (j.status === 'pending' && j.held_at !== null) forms.push(<HeldActions job={j} csrf={props.csrf} />);
  if (j.status === 'pending') {
    forms.push(
      <form method="post" action={`${base}/cancel`} class="action">
        <FormToken csrf={props.csrf} />
        {reason(false)}
        <button type="submit">Cancel</button>
      </form>,
    );
  }
  if (j.status === 'running') {
    const reap = reaperView(j, props.now, props.config);
    if (reap !== null && j.lease_expires_at !== null && j.lease_expires_at < props.now) {
      // The server decides as the reaper would, and does what it would: the
      // verdict says which before the operator confirms (as of this page's
      // load; the server decides again on submit, and refuses with why).
      forms.push(
        <form method="post" action={`${base}/requeue`} class="action">
          <FormToken csrf={props.csrf} />
          <p id="requeue-verdict" class="hint">
            Requeue now: {requeueVerdict(reap)}.
          </p>
          {reason(false)}
          <button type="submit">{reap.action === 'fail' ? 'Fail for good (as the reaper would)' : 'Requeue (lease expired)'}</button>
        </form>,
      );
    }
    const force = forceView(j, props.now, props.config);
    forms.push(
      <form method="post" action={`${base}/force-requeue`} class="action danger">
        <FormToken csrf={props.csrf} />
        <p>
          Force requeue revokes a lease that may still be live: the job can run twice (the old worker’s writes are refused).
        </p>
        {force && (force.overrodeHold || force.beyondBudget) ? (
          <p id="force-verdict" class="notice error">
            Force requeue now: {requeueText(force)}.
          </p>
        ) : null}
        <label>
          Type the job id ({String(j.id)}) to confirm <input type="text" name="confirm" required autocomplete="off" />
        </label>
        {reason(true)}
        <button type="submit">Force requeue</button>
      </form>,
    );
  }
  if (forms.length === 0) return <p class="empty">No actions for a {j.status} job.</p>;
  return <div class="actions">{forms}</div>;
}
