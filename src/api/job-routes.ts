/**
 * Jobs: enqueue (one or a bulk), read one with its events, list, and the
 * operator's guarded actions (cancel, retry, requeue).
 */
import { apiActor } from './audit-actor.ts';
import type { Context } from 'hono';
import { invalid, LeaseholdError } from '../core/errors.ts';
import { MAX_JOB_TIMEOUT_MS } from '../core/config.ts';
import type { NewJob } from '../db/store/enqueue.ts';
import { tickBatches } from '../engine/tick-batches.ts';
import { forceRuleProblem, runOperatorAction, type OperatorAction } from '../engine/operator-actions.ts';
import { iso, toJob, toJobSummary } from '../core/job-record.ts';
import { JOB_STATUSES, UNIQUE_WHILE } from '../core/wire.ts';
import { parseJobId, parseQueue, queueName } from './http.ts';
import { eventsWire, operatorError, requeueWire } from './outcomes.ts';
import { logField } from './request-log.ts';
import type { AppDeps } from './deps.ts';
import type { Routes } from './router.ts';
import { claimWaiters } from '../engine/claim-waiters.ts';
import { jobWatchers } from '../engine/job-watchers.ts';
import { arr, bool, int, json, obj, optional, queryInt, str, word, type Infer } from '../core/validate.ts';
import { activeJobTrace, TRACEPARENT, TRACEPARENT_HELP, TRACESTATE_MAX, tracestateProblem, type JobTrace } from '../core/trace-context.ts';

const MAX_BULK = 10_000;
const YEAR_MS = 365 * 24 * 3600 * 1000;

export const newJob = obj({
  payload: json('the job payload, any JSON'),
  idempotencyKey: optional(str({ min: 1, max: 255, description: 'unique per queue: a duplicate returns the existing job' })),
  uniqueWhile: optional(
    word(
      UNIQUE_WHILE,
      "how long idempotencyKey deduplicates: 'retained' (default) while a job enqueued with it that way is kept; 'active' only while one is pending or running, so a finished one lets the key make a new job",
    ),
  ),
  priority: optional(int({ min: -1000, max: 1000, description: 'higher runs first; default 0' })),
  delayMs: optional(int({ min: 0, max: 10 * YEAR_MS })),
  runAt: optional(str({ min: 1, max: 40, description: 'ISO 8601 time to run at, instead of delayMs' })),
  maxAttempts: optional(int({ min: 1, max: 1000 })),
  timeoutMs: optional(int({ min: 1, max: MAX_JOB_TIMEOUT_MS, description: "hard time limit per attempt, enforced by the reaper even while the job heartbeats (default: the queue's, else the server's)" })),
  traceparent: optional(
    str({
      min: 55,
      max: 55,
      pattern: TRACEPARENT,
      patternHelp: TRACEPARENT_HELP,
      description: "the W3C traceparent of the enqueuing code: every attempt's span joins that trace. Default: the request's own trace context, when the server traces its requests",
    }),
  ),
  tracestate: optional(str({ min: 1, max: TRACESTATE_MAX, description: 'the W3C tracestate that goes with traceparent' })),
});

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
});

/** Most single-job requests in one transaction: below the store's chunk (500), so a batch is one transaction, all or none. */
const SINGLE_BATCH_MAX = 100;

/** The next event-loop turn, after the I/O read in this one (setImmediate where the runtime has it). */
const nextTurn = (run: () => void) => (typeof setImmediate === 'function' ? setImmediate(run) : setTimeout(run, 0));

export function jobRoutes(r: Routes, deps: AppDeps) {
  const { store, config, clock } = deps;
  const inserting = (queue: string, jobs: NewJob[]) => ({ queue, jobs, actor: 'api', now: clock.now(), defaults: config, maxQueues: config.maxQueues });
  const insert = (queue: string, jobs: NewJob[]) => store.jobsInsert(inserting(queue, jobs));
  // Independent producers each sending one job (other languages, curl, many
  // processes) share commits: one request alone still writes in the turn it
  // arrived. A failed write (a new queue past maxQueues, a storage fault)
  // fails every request of its batch, as it would have failed each alone.
  const singles = deps.batchEnqueues === false ? undefined : tickBatches({ write: insert, maxBatch: SINGLE_BATCH_MAX, schedule: nextTurn });
  const insertOne = async (queue: string, job: NewJob) => (singles ? [await singles.add(queue, job)] : insert(queue, [job]));
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
        description: 'Enqueued: the job, or (a bulk) one summary per job; a bulk entry whose idempotency key matched says deduplicated: true',
        also: { status: 200, schema: 'deduplicated', description: 'The idempotency key matched an existing job, which is returned; nothing was added' },
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
      // A bulk answer does not echo payloads back: for large batches the copy
      // was most of the response time and of the server's memory.
      const enqueued = body.bulk ? await store.jobsInsertSummaries(inserting(queue, jobs)) : await insertOne(queue, jobs[0]!);
      logField(c, body.bulk ? { jobCount: enqueued.length } : { jobId: String(enqueued[0]!.job.id) });
      // Committed: claims waiting on this queue look now rather than at their next re-poll
      // (the waiters are kept per database handle, shared by every app and transport on it).
      const added = enqueued.filter((e) => !e.deduplicated).length;
      if (added > 0) claimWaiters(deps.db).notify(queue, added);
      if (body.bulk) {
        return c.json(
          {
            jobs: enqueued.map(({ job, deduplicated }) => ({
              id: String(job.id),
              queue: job.queue_name,
              status: job.status,
              priority: job.priority,
              availableAt: iso(job.available_at),
              idempotencyKey: job.idempotency_key,
              deduplicated,
            })),
          },
          201,
        );
      }
      const [only] = enqueued;
      return only!.deduplicated ? c.json({ job: toJob(only!.job), deduplicated: true }, 200) : c.json({ job: toJob(only!.job) }, 201);
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
    return c.json({
      job: toJob(job),
      // The newest 1,000 events (with the enqueue and completion read from the
      // job row); a job with more says how many older ones are left out.
      olderEventsNotShown: olderNotShown,
      events: eventsWire(events),
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
      summary: 'Job summaries by id (newest first), filtered by queue, status or idempotency key, keyset-paginated: pass next as after. Each job comes without its payload, result, progress and checkpoint (their sizes and a short preview instead): GET /jobs/{id} has them whole',
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
      });
      return c.json({ jobs: page.jobs.map(toJobSummary), next: page.next === null ? null : String(page.next) });
    },
  );

  /** Who, why and when for a job action, with its audit entry (written only if the job changed; the store adds the job's queue and new status). */
  const jobAudit = (c: Context, id: number, action: 'job.cancel' | 'job.retry' | 'job.requeue' | 'job.force_requeue', body: { actor?: string | undefined; reason?: string | undefined }) => {
    const by = apiActor(c, config, body.actor);
    const reason = body.reason ?? null;
    const now = clock.now();
    return { actor: by.actor, reason, now, also: { audit: { by, action, jobId: id, target: `job ${id}`, reason, now } } };
  };

  /** One operator action on one job (src/protocol/operator-actions.ts): its rule, its statement, its refusal. */
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
    const outcome = await runOperatorAction(store, { id, ...audit, action, force, rules: config });
    if (!outcome.ok) throw operatorError(outcome, id, action);
    jobWatchers(deps.db).notify([id]);
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
}

export function toNewJob(j: Infer<typeof newJob>, path: string): NewJob {
  const field = (name: string) => (path ? `${path}.${name}` : name);
  if (j.delayMs !== undefined && j.runAt !== undefined) throw invalid(field('runAt'), 'give delayMs or runAt, not both');
  if (j.uniqueWhile !== undefined && j.idempotencyKey === undefined) throw invalid(field('uniqueWhile'), `${field('uniqueWhile')} needs an idempotencyKey`);
  checkTrace(j, field);
  let runAt: number | undefined;
  if (typeof j.runAt === 'string') {
    runAt = Date.parse(j.runAt);
    if (!/^\d{4}-\d{2}-\d{2}T/.test(j.runAt) || Number.isNaN(runAt) || !calendarDateExists(j.runAt)) {
      throw invalid(field('runAt'), `${field('runAt')} must be an ISO 8601 time such as 2030-01-01T00:00:00Z`);
    }
  }
  return {
    payload: j.payload,
    idempotencyKey: j.idempotencyKey,
    uniqueWhile: j.uniqueWhile,
    priority: j.priority,
    delayMs: j.delayMs,
    runAt,
    maxAttempts: j.maxAttempts,
    timeoutMs: j.timeoutMs,
    traceparent: j.traceparent,
    tracestate: j.tracestate,
  };
}

/**
 * A malformed trace context is refused (400 naming the field), not dropped.
 * W3C asks a receiver of a bad traceparent *header* to start a new trace,
 * because a header passes through proxies the sender does not control and
 * the request must still be served. Here it is a field the producer chose
 * to send, stored and handed to every attempt: dropping it would lose the
 * trace for good with no one told, while a 400 points at the bug at once,
 * like every other field. (Our client and the embedded API only send what
 * they formatted themselves.)
 */
function checkTrace(j: { traceparent?: string | undefined; tracestate?: string | undefined }, field: (name: string) => string): void {
  if (j.tracestate === undefined) return;
  if (j.traceparent === undefined) throw invalid(field('tracestate'), `${field('tracestate')} needs a traceparent`);
  const problem = tracestateProblem(j.tracestate);
  if (problem) throw invalid(field('tracestate'), `${field('tracestate')} ${problem}`);
}

/** The job's own trace context, else `fallback` (the request's). */
function withTrace(job: NewJob, fallback: JobTrace): NewJob {
  return job.traceparent !== undefined || fallback.traceparent === undefined ? job : { ...job, ...fallback };
}

/** Date.parse rolls 2030-02-31 over into March; the date must name a real day. */
function calendarDateExists(iso: string): boolean {
  const [y, m, d] = iso.slice(0, 10).split('-').map(Number) as [number, number, number];
  const day = new Date(Date.UTC(y, m - 1, d));
  return day.getUTCFullYear() === y && day.getUTCMonth() === m - 1 && day.getUTCDate() === d;
}
