/**
 * Response schemas for the OpenAPI document, written against the wire types
 * of src/core/wire.ts (which the worker SDK and the producer client decode):
 * `fields<T>()` only compiles when it lists exactly T's keys, so a field added
 * to or removed from a wire type breaks the build until its schema follows.
 * test/api/openapi-answers.test.ts checks real answers against these schemas.
 *
 * The admin and observability views (queues, workers, schedules, metrics,
 * alerts, tuning, the reaper's report, bulk actions) are in
 * src/api/view-schemas.ts, written the same way against the types their
 * routes answer.
 */
import { DEPENDENCY_STATES, JOB_PREVIEW_CHARS, JOB_STATUSES, ON_LOST_POLICIES, UNIQUE_WHILE, type BatchRefusal, type DependencyLinkWire, type JobDependenciesWire, type ClaimedJobWire, type Enqueued, type ErrorBody, type Job, type JobEvent, type JobSummary, type JobWithEvents, type LeaseState, type CascadeWire } from '../core/wire.ts';
import type { JsonSchema } from '../core/validate.ts';
import type { AuditEntryWire } from './audit-view.ts';
import type { HealthMaintenance, HealthWire } from './health.ts';
import type { requeueWire } from './outcomes.ts';
import { anyJson, array, boolean, constant, fields, integer, nullable, oneOf, string, time } from './schema-parts.ts';
import { VIEW_RESPONSES } from './view-schemas.ts';
import type { StepWire } from '../core/wire.ts';

export { fields } from './schema-parts.ts';

type RequeueWire = ReturnType<typeof requeueWire>;

const AuditEntrySchema = fields<AuditEntryWire>({
  id: string('opaque entry id'),
  at: time,
  actor: string("the operator's name (dashboard), or the request's actor or its token's name (API)"),
  role: string('admin, readonly, worker, or none (a failed login)'),
  credential: nullable(string('the name of the token the request or session used')),
  source: { type: 'string', enum: ['dashboard', 'api'] },
  action: string('login, login_failed, logout, queue.settings, queue.pause, queue.resume, queue.alert_thresholds, queue.indexed_fields, jobs.bulk, jobs.canary, job.retry, job.cancel, job.requeue, job.force_requeue, job.release_held, job.complete_held, job.fail_held'),
  queue: nullable(string()),
  jobId: nullable(string()),
  target: string('what was acted on, for people'),
  before: anyJson('the fields the change set, as they were (null where not recorded)'),
  after: anyJson('the fields the change set, as they became; a bulk run: its filter and how many jobs changed; login_failed: attempts from this client within a minute of the entry, and lastAt'),
  reason: nullable(string()),
  client: nullable(string('the client address, where known')),
});

const jobStatus: JsonSchema = { type: 'string', enum: [...JOB_STATUSES] };

export const JobSchema = fields<Job>(
  {
    id: string('opaque job id'),
    queue: string(),
    status: jobStatus,
    payload: anyJson('the payload, as enqueued'),
    priority: integer('higher runs first'),
    attempt: integer('attempts started so far'),
    maxAttempts: integer(),
    erroredAttempts: integer('attempts that failed or passed their deadline'),
    lostAttempts: integer('attempts whose worker vanished (taken back by the reaper)'),
    fencingToken: integer('grows by one per claim'),
    idempotencyKey: nullable(string()),
    uniqueWhile: {
      type: 'string',
      enum: [...UNIQUE_WHILE],
      description: "what the key does: deduplicate while a job enqueued with it is kept ('retained') or pending or running ('active'); rewrite its unclaimed job ('replace', 'debounce'); answer its job of the last throttleMs ('throttle')",
    },
    replacedCount: integer('times a later enqueue with the key rewrote this job before any worker claimed it (replace, debounce)'),
    schedule: nullable(string('the schedule that enqueued this job; null: a client enqueued it')),
    occurrenceAt: nullable({ ...time, description: "the schedule's occurrence this job runs (one job per occurrence)" }),
    traceparent: nullable(string('the W3C traceparent the job was enqueued with: the trace its attempts join')),
    availableAt: time,
    createdAt: time,
    updatedAt: time,
    startedAt: nullable(time),
    completedAt: nullable(time),
    failedAt: nullable(time),
    cancelledAt: nullable(time),
    lastHeartbeatAt: nullable(time),
    leaseExpiresAt: nullable(time),
    leaseMs: nullable(integer()),
    lockedBy: nullable(string('the worker holding the lease')),
    timeoutMs: nullable(integer()),
    deadlineAt: nullable(time),
    lastError: nullable(string()),
    progress: anyJson('the last progress reported'),
    checkpoint: anyJson('state saved for the next attempt'),
    result: anyJson('what complete() recorded'),
    onLost: nullable({ type: 'string', enum: [...ON_LOST_POLICIES, null], description: "what a lost attempt leads to: 'retry' (run again) or 'hold' (wait for a person); null: the queue's setting (default retry)" }),
    group: nullable(string("the job's group (a tenant, a customer): the queue's claim takes jobs round-robin across groups and can limit each; null: none")),
    heldAt: nullable({ ...time, description: 'set while the job is held for a person after a lost attempt: it runs again only when an operator releases it' }),
    lostAttempt: nullable(
      fields<NonNullable<Job['lostAttempt']>>(
        {
          worker: nullable(string('the worker that held the lost attempt')),
          attempt: integer(),
          fencingToken: integer(),
          startedAt: nullable(time),
          lastHeartbeatAt: nullable(time),
          leaseExpiresAt: nullable(time),
          why: string('why the attempt was taken back'),
        },
        { description: "what is known of the lost attempt that held the job (null when not held); progress and checkpoint are the job's own fields, and its effects are in the effects ledger" },
      ),
    ),
    snoozes: integer('times a handler snoozed the job (each gave its attempt back); its queue\'s maxSnoozes bounds it'),
    deadLetterQueue: nullable(string('set while the job, failed for good, is listed in this dead-letter queue (its own queue sets it): a redrive sends it back')),
    deadLetteredAt: nullable({ ...time, description: 'when it was dead-lettered' }),
  },
  { description: 'A job. The lock token is never part of it: only the claimer gets it.' },
);

const { payload: _payload, result: _result, progress: _progress, checkpoint: _checkpoint, ...jobSummaryProps } = JobSchema.properties as Record<keyof Job, JsonSchema>;

export const JobSummarySchema = fields<JobSummary>(
  {
    ...(jobSummaryProps as { [K in keyof Omit<Job, 'payload' | 'result' | 'progress' | 'checkpoint'>]-?: JsonSchema }),
    payloadBytes: integer('the size of the payload\'s JSON text in bytes'),
    payloadPreview: string(`the payload's JSON text, cut at ${JOB_PREVIEW_CHARS} characters`),
    resultBytes: nullable(integer('the size of the result\'s JSON text in bytes; null: no result')),
    resultPreview: nullable(string(`the result's JSON text, cut at ${JOB_PREVIEW_CHARS} characters`)),
    progressBytes: nullable(integer('the size of the last progress in bytes; null: none')),
    checkpointBytes: nullable(integer('the size of the checkpoint in bytes; null: none')),
  },
  { description: 'A job in a list: without its payload, result, progress and checkpoint (GET /jobs/{id} has them)' },
);

export const ClaimedJobSchema = fields<ClaimedJobWire>(
  {
    id: string(),
    queue: string(),
    payload: anyJson('the payload'),
    attempt: integer(),
    maxAttempts: integer(),
    priority: integer(),
    lockToken: string('send it with every write to this job; a stale one gets 409 lease_lost'),
    fencingToken: integer(),
    leaseMs: integer(),
    leaseExpiresAt: time,
    deadlineAt: nullable(time),
    heartbeatIntervalMs: integer('heartbeat at least this often'),
    idempotencyKey: nullable(string()),
    checkpoint: anyJson('what an earlier attempt saved'),
    progress: anyJson('the last progress reported'),
    timeoutMs: nullable(integer()),
    traceparent: nullable(string('the W3C traceparent the job was enqueued with: parent (or link) this attempt\'s span to it')),
    tracestate: nullable(string('the W3C tracestate that came with it')),
    group: nullable(string('the job\'s group (a tenant, a customer); null: none')),
    snoozes: integer('how many times the job was snoozed so far (a snooze spends no attempt; the queue\'s maxSnoozes bounds them)'),
  },
  { description: 'A claimed job, as the claimer sees it' },
);

export const EnqueuedSchema = fields<Enqueued>({
  id: string(),
  queue: string(),
  status: jobStatus,
  priority: integer(),
  availableAt: time,
  idempotencyKey: nullable(string()),
  deduplicated: boolean,
  replaced: { ...boolean, description: "true: the key's unclaimed job was rewritten by this entry (replace, debounce), and is the one named" },
});

const JobEventSchema = fields<JobEvent>({
  id: nullable(string('null for a derived entry')),
  derived: { ...boolean, description: "true: read from the job row, not a stored event (a job's enqueued and completed have no event row); false: a stored event" },
  type: string('enqueued, claimed, completed, reaped, ...'),
  at: time,
  from: nullable(string()),
  to: nullable(string()),
  reason: nullable(string()),
  message: nullable(string()),
  actor: nullable(string()),
  workerId: nullable(string()),
  attempt: nullable(integer()),
});

const leaseProps: { [K in keyof LeaseState]-?: JsonSchema } = { id: string(), leaseExpiresAt: nullable(time), deadlineAt: nullable(time), fencingToken: integer() };
const LeaseStateSchema = fields<LeaseState>(leaseProps);

const BatchRefusalSchema = fields<BatchRefusal>({
  id: string(),
  ok: constant(false),
  error: fields<BatchRefusal['error']>({ code: string('lease_lost or not_found'), message: string(), status: string('the job\'s status now') }, { optional: ['status'] }),
});

export const ErrorSchema = fields<ErrorBody>({
  error: fields<ErrorBody['error']>(
    { code: string('stable: invalid_request, unauthorized, forbidden, not_found, lease_lost, conflict, payload_too_large, unsupported_media_type, misdirected_request, unavailable, internal'), message: string('for people'), field: string('the field at fault') },
    // Some errors carry more (a lease_lost its job's status).
    { optional: ['field'], open: true },
  ),
});

/** Wraps one job: {job}. */
const jobAnswer = fields<{ job: Job }>({ job: JobSchema });

const RequeueDoneSchema = fields<RequeueWire>({
  action: { type: 'string', enum: ['requeue', 'fail'], description: 'requeue: back to pending now; fail: failed for good, as the reaper would (its attempts or lost-attempt budget are spent)' },
  reason: string("the reaper's reason (reaped_due_to_expired_lease, owner_gone, deadline_exceeded, attempts_exhausted, lost_too_many_times), or forced"),
  why: string('in words'),
  forced: boolean,
  held: { type: 'boolean', description: "the job's onLost is 'hold': it was held for a person (it runs again only when released) instead of going back to the queue" },
  overrodeHold: nullable(fields<NonNullable<RequeueWire['overrodeHold']>>({ until: time, why: string() }, { description: "forced during the reaper's hold after a server's restart or pause: the hold it overrode" })),
  beyondBudget: nullable(string("forced past the job's attempt or lost-attempt budget: what that grants")),
});

const EffectSchema = fields<{ key: string; state: string; attempt: number; workerId: string | null; startedAt: string; doneAt: string | null }>(
  {
    key: string('the once() or step() key'),
    state: { type: 'string', enum: ['started', 'done'], description: 'started and never done: it may or may not have happened' },
    attempt: integer('the attempt that started it'),
    workerId: nullable(string()),
    startedAt: time,
    doneAt: nullable(time),
  },
  { description: "one entry of the job's effects ledger" },
);

/** One edge of a job's graph, seen from the job (GET /jobs/:id/dependencies). */
const DependencyLinkSchema = fields<DependencyLinkWire>(
  {
    id: string(),
    queue: string(),
    status: jobStatus,
    state: { type: 'string', enum: [...DEPENDENCY_STATES], description: "'ignored': it failed or was cancelled, and the dependent's policy 'run' counted it as met" },
    result: anyJson("a completed dependency's result (null otherwise, and for dependents)"),
    lastError: nullable(string()),
    updatedAt: time,
  },
  { description: 'the other job of one edge, and where the edge stands' },
);

export const RESPONSES = {
  flow: fields<{ jobs: Job[] }>({ jobs: array(JobSchema) }, { description: "the flow's jobs, in the order sent, each waiting for its dependencies (dependenciesUnmet)" }),
  jobDependencies: fields<JobDependenciesWire>(
    { dependencies: array(DependencyLinkSchema), dependents: array(DependencyLinkSchema) },
    { description: 'what the job waits for (with each completed one\'s result) and the jobs that wait for it, by id' },
  ),
  heldJobs: fields<{ jobs: unknown[] }>(
    { jobs: array({ ...JobSchema, properties: { ...(JobSchema.properties as Record<string, JsonSchema>), effects: array(EffectSchema) }, required: [...((JobSchema.required as string[]) ?? []), 'effects'] }) },
    { description: 'held jobs, longest held first, each with its effects ledger' },
  ),
  enqueued: oneOf(fields<{ job: Job }>({ job: JobSchema }, { description: 'one job' }), fields<{ jobs: Enqueued[] }>({ jobs: array(EnqueuedSchema) }, { description: 'a bulk: one summary per job, in order' })),
  existingJob: oneOf(
    fields<{ job: Job; deduplicated: true }>({ job: JobSchema, deduplicated: constant(true) }, { description: 'the idempotency key matched: the existing job, unchanged' }),
    fields<{ job: Job; replaced: true }>({ job: JobSchema, replaced: constant(true) }, { description: "replace or debounce: the key's unclaimed job, rewritten by this enqueue" }),
  ),
  job: jobAnswer,
  requeued: oneOf(
    fields<{ job: Job; requeue: RequeueWire }>({ job: JobSchema, requeue: RequeueDoneSchema }, { description: 'what the requeue did, and the job now' }),
    fields<{ dryRun: true; requeue: RequeueWire }>({ dryRun: constant(true), requeue: RequeueDoneSchema }, { description: 'dryRun: what it would do; nothing changed' }),
  ),
  jobWithEvents: fields<JobWithEvents>({
    job: JobSchema,
    olderEventsNotShown: integer(),
    events: array(JobEventSchema),
    cascade: nullable(fields<CascadeWire>(
      { action: { type: 'string', enum: ['fail', 'retry', 'retry_jobs'] }, steps: integer(), settled: integer('edges and jobs settled so far'), queuedAt: time },
      { description: "the job's failure, or its retry, still settling the jobs that wait for it, in bounded steps" },
    )),
  }),
  jobPage: fields<{ jobs: JobSummary[]; next: string | null }>({ jobs: array(JobSummarySchema), next: nullable(string('pass as `after` for the next page')) }),
  claimed: fields<{ jobs: ClaimedJobWire[]; rateLimitedUntil: string; retryAfterMs: number }>(
    {
      jobs: array(ClaimedJobSchema),
      rateLimitedUntil: { ...time, description: "present when the queue's rate limit held claims back: when its next window opens" },
      retryAfterMs: integer('present with rateLimitedUntil: how long until then, by the database clock'),
    },
    { optional: ['rateLimitedUntil', 'retryAfterMs'] },
  ),
  lease: LeaseStateSchema,
  heartbeats: fields<{ results: unknown[] }>({ results: array(oneOf(fields<LeaseState & { ok: true }>({ ...leaseProps, ok: constant(true) }), BatchRefusalSchema)) }),
  completions: fields<{ results: unknown[]; jobs: ClaimedJobWire[] }>(
    {
      results: array(oneOf(fields<{ id: string; ok: true; status: string; completedAt: string | null }>({ id: string(), ok: constant(true), status: jobStatus, completedAt: nullable(time) }), BatchRefusalSchema)),
      jobs: array(ClaimedJobSchema),
    },
    { optional: ['jobs'] },
  ),
  releases: fields<{ results: unknown[] }>({ results: array(oneOf(fields<{ id: string; ok: true; status: string }>({ id: string(), ok: constant(true), status: jobStatus }), BatchRefusalSchema)) }),
  beat: fields<{ ok: true }>({ ok: constant(true) }),
  effectStart: oneOf(fields<{ state: 'run' }>({ state: constant('run') }), fields<{ state: 'done'; result: unknown }>({ state: constant('done'), result: anyJson('the result an earlier attempt recorded') })),
  effectFinish: fields<{ result: unknown }>({ result: anyJson('the result on record (the first one wins)') }),
  steps: fields<{ steps: StepWire[] }>({
    steps: array(
      fields<StepWire>({
        name: string(),
        state: { type: 'string', enum: ['done', 'uncertain', 'running'], description: 'done: its result is on record; uncertain: an earlier claim started it and never recorded it done; running: this claim started it' },
        attempt: integer('the attempt that started it (done: that recorded it)'),
        result: anyJson('the recorded result (done), else null'),
      }),
    ),
  }),
  paused: fields<{ queue: string; paused: boolean }>({ queue: string(), paused: boolean }),
  health: fields<HealthWire>({
    ok: constant(true),
    databaseTime: time,
    maintenance: fields<HealthMaintenance>(
      {
        lastPassAt: nullable(time),
        lastPassAgeMs: nullable(integer('since the last completed maintenance pass, on the database clock')),
        late: { type: 'boolean', description: 'jobs run and no pass completed for 3 reaper intervals (or none ever, while leases are past grace); /healthz still answers 200' },
        lateAfterMs: integer('3 x LEASEHOLD_REAPER_INTERVAL_MS'),
        runningJobs: integer(),
        expiredLeases: integer('running jobs whose lease + grace has passed, read now'),
        message: string(),
      },
      { description: 'whether a reaper still runs, from the last pass any reaper recorded in the database' },
    ),
  }),
  scheduleDeleted: fields<{ deleted: string }>({ deleted: string('the name of the schedule deleted') }),
  queueDeleted: fields<{ deleted: string; purgedFinishedJobs: number }>({
    deleted: string('the name of the queue deleted'),
    purgedFinishedJobs: integer('finished jobs deleted with it (purge=true), else 0'),
  }),
  waited: fields<{ jobs: { version: string; job: Job }[]; missing: string[]; more: boolean }>({
    jobs: array(fields<{ version: string; job: Job }>({ version: string('opaque: send it back as seen to wait for the next change'), job: JobSchema })),
    missing: array(string('an id named that no job has (never enqueued, or pruned after its retention)')),
    more: { ...boolean, description: 'true: more jobs counted than fit in the answer; ask again and they answer at once' },
  }),
  auditPage: fields<{ entries: AuditEntryWire[]; next: string | null }>({ entries: array(AuditEntrySchema), next: nullable(string('pass as `before` for the next (older) page')) }),
  ...VIEW_RESPONSES,
} satisfies Record<string, JsonSchema>;

export type ResponseName = keyof typeof RESPONSES;
