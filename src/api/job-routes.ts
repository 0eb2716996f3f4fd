/**
 * Jobs: enqueue (one or a bulk), read one with its events, list, and the
 * operator's guarded actions (cancel, retry, requeue).
 */
import { apiActor } from './audit-actor.ts';
import type { Context } from 'hono';
import { invalid, LeaseholdError } from '../core/errors.ts';
import { newJob, toNewJob, withTrace } from '../engine/enqueue-input.ts';
import { forceRuleProblem, heldReasonProblem, type OperatorAction } from '../engine/operator-actions.ts';
import { HELD_ACTIONS, type HeldAction } from '../core/held.ts';
import { iso, toJob, toJobSummary } from '../core/job-record.ts';
import { JOB_STATUSES } from '../core/wire.ts';
import { parseJobId, parseQueue, queueName } from './http.ts';
import { eventsWire, heldError, operatorError, requeueWire } from './outcomes.ts';
import { logField } from './request-log.ts';
import type { AppDeps } from './deps.ts';
import type { Routes } from './router.ts';
import { arr, bool, json, obj, optional, queryInt, str, word, type Infer } from '../core/validate.ts';
import type { EffectRow } from '../db/store/port.ts';
import { activeJobTrace } from '../core/trace-context.ts';
import { WHERE_SCAN_WINDOW, WHERE_SYNTAX, whereQuery } from '../core/job-filter.ts';

const MAX_BULK = 10_000;

const bulkBody = obj({ jobs: arr(newJob, { min: 1, max: MAX_BULK }) });

const actionShape = {
  reason: optional(str({ min: 1, max: 1000, description: 'why: kept in the audit trail' })),
  actor: optional(str({ min: 1, max: 200, description: 'who: kept in the audit trail; default "admin"' })),
};
const actionBody = obj(actionShape);

/** One job, or {jobs: [...]}: the schema of each branch is the validator that parses it. */
const enqueueBody = {
  optional: false,
  schema: { oneOf: [newJob.schema, bulkBody.schema] },
  parse(value: unknown, path: string) {
    if (typeof value === 'object' && value !== null && !Array.isArray(value) && 'jobs' in value) {
      return { bulk: true as const, jobs: bulkBody.parse(value, path).jobs };
    }
    return { bulk: false as const, jobs: [newJob.parse(value, path)] };
  },
};

/** GET /jobs's query string: checked here, typed as it is in the OpenAPI document. */
const listQuery = obj({
  queue: optional(queueName),
  status: optional(word(JOB_STATUSES)),
  idempotencyKey: optional(str({ min: 1, max: 255 })),
  after: optional(str({ min: 1, max: 15, pattern: /^[0-9]{1,15}$/, patternHelp: 'must be a job id (the next value of the previous page)' })),
  limit: optional(queryInt({ min: 1, max: 500, description: 'jobs per page; default 50' })),
  order: optional(word(['asc', 'desc'], 'by id; default desc (newest first)')),
  where: whereQuery,
});

const heldQuery = obj({
  queue: optional(queueName),
  limit: optional(queryInt({ min: 1, max: 500, description: 'jobs; default 100' })),
});

/** A job's effects ledger on the wire (times as ISO strings). */
export const effectsWire = (rows: readonly EffectRow[]) =>
  rows.map((e) => ({ key: e.key, state: e.state, attempt: e.attempt, workerId: e.workerId, startedAt: iso(e.createdAt)!, doneAt: iso(e.completedAt) }));

export function jobRoutes(r: Routes, deps: AppDeps) {
  const { store, config, clock, engine } = deps;
  r.add(
    {
      method: 'post',
      path: '/queues/:queue/jobs',
      role: 'worker',
      operationId: 'enqueueJobs',
      tag: 'jobs',
      summary: 'Enqueue a job, or {jobs: [...]} in one batch',
      body: enqueueBody,
      answers: {
        status: 201,
        schema: 'enqueued',
        description: 'Enqueued: the job, or (a bulk) one summary per job; a bulk entry whose idempotency key matched says deduplicated: true, one that rewrote the key\'s unclaimed job replaced: true',
        also: { status: 200, schema: 'existingJob', description: "The idempotency key matched an existing job, which is returned: unchanged (deduplicated), or rewritten by this enqueue (replaced: replace, debounce); nothing was added" },
      },
      // A new queue past LEASEHOLD_MAX_QUEUES.
      errors: ['conflict'],
    },
    async (c, body) => {
      const queue = parseQueue(c.req.param('queue'));
      // A job sent without a trace context of its own joins the request's
      // trace (its incoming traceparent header, through the server's span).
      const requestTrace = activeJobTrace();
      const jobs = body.jobs.map((j, i) => withTrace(toNewJob(j, body.bulk ? `jobs[${i}]` : ''), requestTrace));
      // Independent producers each sending one job share commits (the engine
      // gathers the requests of one turn); a bulk answers summaries, without payloads.
      const enqueued = body.bulk ? await engine.enqueueMany(queue, jobs, 'api', { summaries: true }) : [await engine.enqueue(queue, jobs[0]!, 'api')];
      logField(c, body.bulk ? { jobCount: enqueued.length } : { jobId: String(enqueued[0]!.job.id) });
      if (body.bulk) {
        return c.json(
          {
            jobs: enqueued.map(({ job, deduplicated, replaced }) => ({
              id: String(job.id),
              queue: job.queue_name,
              status: job.status,
              priority: job.priority,
              availableAt: iso(job.available_at),
              idempotencyKey: job.idempotency_key,
              deduplicated,
              replaced,
            })),
          },
          201,
        );
      }
      const [only] = enqueued;
      if (only!.deduplicated) return c.json({ job: toJob(only!.job), deduplicated: true }, 200);
      return only!.replaced ? c.json({ job: toJob(only!.job), replaced: true }, 200) : c.json({ job: toJob(only!.job) }, 201);
    },
  );

  // The worker token may read a job too: producers (leasehold/client) read back
  // what they enqueued without holding the admin token.
  r.add(
    {
      method: 'get',
      path: '/jobs/:id',
      role: 'worker',
      operationId: 'getJob',
      tag: 'jobs',
      summary: 'One job and its event history (the newest 1,000 events; olderEventsNotShown counts the rest); the worker token may read it',
      answers: { schema: 'jobWithEvents' },
      errors: ['not_found'],
    },
    async (c) => {
    const id = parseJobId(c.req.param('id')!);
    const job = await store.jobGet({ id });
    if (!job) throw new LeaseholdError('not_found', `no job has id ${id}`, 'id');
    const { events, olderNotShown } = await store.eventsForJob({ jobId: id, limit: 1000 });
    const cascade = await store.dependencyCascadeOf({ jobId: id });
    return c.json({
      job: toJob(job),
      // The newest 1,000 events (with the enqueue and completion read from the
      // job row); a job with more says how many older ones are left out.
      olderEventsNotShown: olderNotShown,
      events: eventsWire(events),
      cascade: cascade ? { action: cascade.action, steps: cascade.steps, settled: cascade.settled, queuedAt: iso(cascade.queuedAt)! } : null,
    });
  },
  );

  r.add<undefined, Infer<typeof listQuery>>(
    {
      method: 'get',
      path: '/jobs',
      role: 'admin',
      operationId: 'listJobs',
      tag: 'jobs',
      answers: { schema: 'jobPage' },
      summary: `Job summaries by id (newest first), filtered by queue, status, idempotency key or what the payload and result hold (where, ANDed: ${WHERE_SYNTAX}), keyset-paginated: pass next as after. With where, a page examines at most ${WHERE_SCAN_WINDOW.toLocaleString('en-US')} jobs (an = on one of the queue's indexed fields reads only matches), so it may come back short, even empty, with next set: follow next until it is null. ` +
        'Each job comes without its payload, result, progress and checkpoint (their sizes and a short preview instead): GET /jobs/{id} has them whole',
      query: listQuery,
    },
    async (c, _body, q) => {
      const page = await store.jobSummariesList({
        queue: q.queue,
        status: q.status,
        idempotencyKey: q.idempotencyKey,
        after: q.after === undefined ? undefined : Number(q.after),
        limit: q.limit ?? 50,
        order: q.order ?? 'desc',
        where: q.where,
      });
      return c.json({ jobs: page.jobs.map(toJobSummary), next: page.next === null ? null : String(page.next) });
    },
  );

  /** Who, why and when for a job action, with its audit entry (written only if the job changed; the store adds the job's queue and new status). */
  const jobAudit = (c: Context, id: number, action: 'job.cancel' | 'job.retry' | 'job.requeue' | 'job.force_requeue' | `job.${HeldAction}_held`, body: { actor?: string | undefined; reason?: string | undefined }) => {
    const by = apiActor(c, config, body.actor);
    const reason = body.reason ?? null;
    const now = clock.now();
    return { actor: by.actor, reason, now, also: { audit: { by, action, jobId: id, target: `job ${id}`, reason, now } } };
  };

  /** One operator action on one job (src/engine/operator-actions.ts): its rule, its statement, its refusal. */
  const act = async (c: Context, action: OperatorAction, body: { actor?: string | undefined; reason?: string | undefined; force?: boolean | undefined; dryRun?: boolean | undefined }) => {
    const id = parseJobId(c.req.param('id')!);
    const force = body.force ?? false;
    const problem = forceRuleProblem({ action, force, reason: body.reason });
    // A dry run changes nothing, so it needs no reason to say what force would do.
    if (problem && !(body.dryRun && problem.field === 'reason')) throw invalid(problem.field, problem.message);
    if (body.dryRun) {
      const plan = await store.jobRequeuePlan({ id, now: clock.now(), force, rules: config });
      if (!plan.ok) throw operatorError(plan, id, action);
      return c.json({ dryRun: true, requeue: requeueWire(plan.requeue) });
    }
    const audit = jobAudit(c, id, force ? 'job.force_requeue' : (`job.${action}` as const), body);
    const outcome = await engine.operatorAction({ id, ...audit, action, force, rules: config });
    if (!outcome.ok) throw operatorError(outcome, id, action);
    return c.json({ job: toJob(outcome.job), ...(outcome.requeue ? { requeue: requeueWire(outcome.requeue) } : {}) });
  };

  r.add({ method: 'post', path: '/jobs/:id/cancel', role: 'admin', operationId: 'cancelJob', tag: 'jobs', summary: 'Cancel a pending job', body: actionBody, answers: { schema: 'job' }, errors: ['not_found', 'conflict'] }, (c, body) =>
    act(c, 'cancel', body),
  );

  r.add({ method: 'post', path: '/jobs/:id/retry', role: 'admin', operationId: 'retryJob', tag: 'jobs', summary: 'Run a failed or cancelled job again, with a fresh attempt budget', body: actionBody, answers: { schema: 'job' }, errors: ['not_found', 'conflict'] }, (c, body) =>
    act(c, 'retry', body),
  );

  r.add(
    {
      method: 'post',
      path: '/jobs/:id/requeue',
      role: 'admin',
      operationId: 'requeueJob',
      tag: 'jobs',
      answers: { schema: 'requeued' },
      errors: ['not_found', 'conflict'],
      summary:
        "Do to a running job what the reaper itself would do now: put it back in the queue, or fail it for good when its attempts or lost-attempt budget are spent (the answer's requeue.action says which); when the reaper would wait (inside the grace, a live owner, or the hold after a server's restart or pause, until heldUntil), 409 conflict saying why and nothing changes. force: true (with a reason) puts any running job back (its worker's writes are refused from then on, and it may run twice), even during the hold or past its attempt budget, and the answer, its event and the audit say what it overrode. dryRun: true says what it would do and changes nothing",
      body: obj({
        ...actionShape,
        force: optional(bool('take a live lease too, even during the reaper\'s hold or past the attempt budget; needs a reason')),
        dryRun: optional(bool('say what the requeue would do now (requeue.action), or answer the 409 it would get; change nothing')),
      }),
    },
    (c, body) => act(c, 'requeue', body),
  );

  // A held job (onLost 'hold', src/core/held.ts): its lost attempt waits for
  // a person, who releases it (it runs again), completes it by hand or fails
  // it. Not the worker's /complete, /fail and /release: no lock token here.
  const heldShape = {
    // Required, and so in the OpenAPI document's `required` (generated clients send it).
    reason: str({ min: 1, max: 1000, description: "why: required, kept in the audit trail and on the job's event" }),
    actor: optional(str({ min: 1, max: 200, description: 'who: kept in the audit trail; default "admin"' })),
  };
  const heldBody = obj(heldShape);
  const completeHeldBody = obj({ ...heldShape, result: optional(json('the result to record, any JSON')) });
  const HELD_SUMMARIES: Record<HeldAction, string> = {
    release: 'Release a held job (onLost \'hold\', its lost attempt waiting for a person): it goes back to pending, due now, and runs again. Needs a reason; 409 when the job is not held, saying its status',
    complete: 'Complete a held job by hand, with a result (the person found the lost attempt did the work). Needs a reason; 409 when the job is not held, saying its status',
    fail: 'Fail a held job for good. Needs a reason (it becomes the job\'s error); 409 when the job is not held, saying its status',
  };
  for (const action of HELD_ACTIONS) {
    const body = action === 'complete' ? completeHeldBody : heldBody;
    r.add(
      {
        method: 'post',
        path: `/jobs/:id/held/${action}`,
        role: 'admin',
        operationId: `${action}HeldJob`,
        tag: 'jobs',
        summary: HELD_SUMMARIES[action],
        body,
        answers: { schema: 'job' },
        errors: ['not_found', 'conflict'],
      },
      async (c, b: { reason?: string; actor?: string | undefined; result?: unknown }) => {
        const id = parseJobId(c.req.param('id')!);
        const problem = heldReasonProblem(b.reason);
        if (problem) throw invalid(problem.field, problem.message);
        const audit = jobAudit(c, id, `job.${action}_held`, b);
        const outcome = await engine.heldAction({ id, ...audit, action, ...('result' in b ? { result: b.result } : {}) });
        if (!outcome.ok) throw heldError(outcome, id);
        return c.json({ job: toJob(outcome.job) });
      },
    );
  }

  r.add<undefined, Infer<typeof heldQuery>>(
    {
      method: 'get',
      path: '/held-jobs',
      role: 'admin',
      operationId: 'listHeldJobs',
      tag: 'jobs',
      summary: "Jobs held for a person after a lost attempt (onLost 'hold'), longest held first, each with what is known of that attempt (lostAttempt, progress, checkpoint) and its effects ledger",
      query: heldQuery,
      answers: { schema: 'heldJobs' },
    },
    async (c, _body, q) => {
      const jobs = await store.jobsHeldList({ queue: q.queue, limit: q.limit ?? 100 });
      const withEffects = await Promise.all(jobs.map(async (j) => ({ ...toJob(j), effects: effectsWire(await store.effectsForJob({ jobId: j.id })) })));
      return c.json({ jobs: withEffects });
    },
  );
}
