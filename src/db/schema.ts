/**
 * The leasehold schema: tables, indexes and CHECK constraints. No queries here.
 *
 * Times are integers: milliseconds since the Unix epoch, taken from one clock
 * (see src/core/clock.ts). JSON values (payload, result, checkpoint, progress)
 * are stored as JSON text.
 */
import { sql } from 'drizzle-orm';
import { check, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { DEPENDENCY_POLICIES, DEPENDENCY_STATES, JOB_STATUSES, ON_LOST_POLICIES, SCHEDULE_CATCH_UP, SCHEDULE_OVERLAP, SCHEDULE_SKIP_REASONS, STORED_UNIQUE_WHILE, KEY_MODES, type JobStatus } from '../core/wire.ts';

export { JOB_STATUSES, type JobStatus };

export const jobs = sqliteTable(
  'jobs',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    queueName: text('queue_name').notNull(),
    payload: text('payload').notNull(),
    status: text('status', { enum: JOB_STATUSES }).notNull().default('pending'),
    priority: integer('priority').notNull().default(0),
    // attempt_count counts claims that used up an attempt (a release gives it back);
    // errored and lost attempts are counted apart so a crash loop can be told from a bug.
    attemptCount: integer('attempt_count').notNull().default(0),
    maxAttempts: integer('max_attempts').notNull(),
    erroredAttempts: integer('errored_attempts').notNull().default(0),
    lostAttempts: integer('lost_attempts').notNull().default(0),
    // Fencing token: +1 on every claim, never reset, so downstream systems can
    // reject a write from an older claim of the same job.
    leaseEpoch: integer('lease_epoch').notNull().default(0),
    availableAt: integer('available_at').notNull(),
    startedAt: integer('started_at'),
    completedAt: integer('completed_at'),
    failedAt: integer('failed_at'),
    cancelledAt: integer('cancelled_at'),
    // Set exactly when the job is finished; retention pruning walks this column.
    finishedAt: integer('finished_at'),
    lastHeartbeatAt: integer('last_heartbeat_at'),
    leaseMs: integer('lease_ms'),
    leaseExpiresAt: integer('lease_expires_at'),
    lockedBy: text('locked_by'),
    // The worker process (instance) that made the claim: a restarted worker
    // reusing its id is a new instance, and does not keep this claim alive.
    lockedByInstance: text('locked_by_instance'),
    lockToken: text('lock_token'),
    // The id the claiming request carried (chosen by the worker, drizzle/0017):
    // the same request sent again, because its answer was lost, gets back the
    // jobs still running under it instead of claiming more; a worker that
    // gives up on a claim names it, and its jobs go back to the queue.
    claimId: text('claim_id'),
    // The token of the claim whose owner ended the attempt (complete, fail,
    // release) and what that write was (finishedWrite: which write, by which
    // worker, with the parameters the row does not keep), until the next
    // claim: the same write sent again (its answer was lost) is answered with
    // what is stored instead of being refused as a stale write.
    finishedToken: text('finished_token'),
    finishedWrite: text('finished_write'),
    idempotencyKey: text('idempotency_key'),
    // How long the key deduplicates: 'retained' (while any job enqueued that
    // way is kept) or 'active' (while a job with the key is pending or running).
    uniqueWhile: text('unique_while', { enum: STORED_UNIQUE_WHILE }).notNull().default('retained'),
    // The key modes (drizzle/0036): 'replace' and 'debounce' rewrite the key's
    // job no worker has claimed yet, 'throttle' answers the key's job made
    // within its window. Their jobs keep unique_while 'active' (the finished
    // ones hold nothing); NULL: the key deduplicates as unique_while says.
    keyMode: text('key_mode', { enum: KEY_MODES }),
    dedupCount: integer('dedup_count').notNull().default(0),
    // Times a later enqueue with the key rewrote the job (replace, debounce):
    // a fresh row has 0, so RETURNING tells a rewrite from an insert.
    replacedCount: integer('replaced_count').notNull().default(0),
    lastError: text('last_error'),
    progress: text('progress'),
    checkpoint: text('checkpoint'),
    result: text('result'),
    timeoutMs: integer('timeout_ms'),
    // Set at every claim: now + the job's timeout_ms, else its queue's, else the server's default.
    deadlineAt: integer('deadline_at'),
    // When the owner last changed progress or checkpoint (stall detection); NULL: not since the claim.
    progressedAt: integer('progressed_at'),
    reaperDeferrals: integer('reaper_deferrals').notNull().default(0),
    // Set (by a trigger, drizzle/0006) when a running job was taken from its
    // owner by someone else (reaper, operator): what took it. Its next claim
    // counts as a possible duplicate execution and clears it.
    takenBack: text('taken_back'),
    // Every transition names itself here; a trigger turns that into its audit
    // event, inside the same statement, and only when a row really changed.
    lastEvent: text('last_event').notNull().default('enqueued'),
    lastEventReason: text('last_event_reason'),
    lastEventActor: text('last_event_actor'),
    // Who enqueued the job (the API's actor; NULL: open mode or in-process):
    // the timeline's derived `enqueued` entry (drizzle/0015), which has no event row.
    enqueuedBy: text('enqueued_by'),
    // Set on a schedule's occurrence job only (drizzle/0021): which schedule,
    // and the occurrence it runs. Occurrences are deduplicated here, never by
    // idempotency key: the key space belongs to the clients that enqueue.
    scheduleName: text('schedule_name'),
    occurrenceAt: integer('occurrence_at'),
    // The W3C trace context of the code that enqueued the job (drizzle/0023),
    // handed to every claim of it so each attempt's span joins that trace.
    // Checked on input (src/core/trace-context.ts); NULL: not traced.
    traceParent: text('trace_parent'),
    traceState: text('trace_state'),
    // What to do when an attempt is lost (drizzle/0027): 'retry' (run it
    // again) or 'hold' (wait for a person); NULL: the queue's setting.
    onLost: text('on_lost', { enum: ON_LOST_POLICIES }),
    // Set while the job waits for a person after a lost attempt (onLost
    // 'hold'): status stays 'pending' with available_at at HELD_AVAILABLE_AT,
    // so no claim finds it, and a trigger refuses to make it running.
    heldAt: integer('held_at'),
    // What was known of the lost attempt when it was held (JSON: worker,
    // last heartbeat, lease, attempt, why); kept for the job page.
    heldAttempt: text('held_attempt'),
    // The job's group (a tenant, a customer): the queue's claim takes jobs
    // round-robin across groups and can cap each group's running jobs and
    // starts (drizzle/0030). NULL: no group.
    groupKey: text('group_key'),
    // Dead letters (drizzle/0032): set when the job failed for good in a
    // queue with a deadLetterQueue: the dead-letter queue that lists it and
    // when it got there. The row stays in its own queue (its id, key, history,
    // counts and retention unchanged), so a redrive is a retry. NULL: not dead.
    deadLetterQueue: text('dead_letter_queue'),
    deadLetteredAt: integer('dead_lettered_at'),
    // Times the handler snoozed the job ("not now, try again in N"): each
    // gave its attempt back; the queue's maxSnoozes bounds it.
    snoozes: integer('snoozes').notNull().default(0),
    // Jobs that wait for other jobs (drizzle/0031, docs/flows.md). What the
    // enqueue named (JSON: job ids, and a flow's references to its own jobs),
    // expanded by a trigger into job_dependencies.
    dependsOn: text('depends_on'),
    // What a failed or cancelled dependency does to this job: 'fail' (the
    // default), 'run' (counts as met) or 'hold' (wait for a person).
    dependencyPolicy: text('dependency_policy', { enum: DEPENDENCY_POLICIES }),
    // How many dependencies have not completed (nor failed under 'run'):
    // while above 0 the job stays pending with available_at at
    // HELD_AVAILABLE_AT, so no claim finds it; the transition that completes
    // the last one (a trigger on it) sets available_at to dependencies_run_at.
    dependenciesUnmet: integer('dependencies_unmet').notNull().default(0),
    dependenciesRunAt: integer('dependencies_run_at'),
    // The failed job whose failure failed or held this one: retrying it (back
    // to pending) puts this job back to waiting.
    dependencyFailedBy: integer('dependency_failed_by'),
    // A flow's own name for one of its jobs, for the references between them
    // at enqueue (the flow's nonce and the job's index).
    flowRef: text('flow_ref'),
    // The longest time this claim went without a lease renewal, kept by the
    // renewal itself (drizzle/0029): what-if tuning's evidence. It belongs to
    // the claim only while last_heartbeat_at > started_at (a claim sets both
    // to the same instant, so a new claim's first renewal starts it again).
    longestSilenceMs: integer('longest_silence_ms'),
    // How long the current attempt waited to be claimed since the job was
    // due, set by the claim: the claim's queue-wait histogram reads it back
    // for all the jobs the claim took at once (src/db/store/attempt-stats.ts).
    waitedMs: integer('waited_ms'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [
    check('jobs_status_known', sql`${t.status} IN ('pending', 'running', 'completed', 'failed', 'cancelled')`),
    check('jobs_token_iff_running', sql`(${t.status} = 'running') = (${t.lockToken} IS NOT NULL)`),
    check(
      'jobs_lease_iff_running',
      sql`(${t.status} = 'running') = (${t.leaseExpiresAt} IS NOT NULL AND ${t.lockedBy} IS NOT NULL AND ${t.leaseMs} IS NOT NULL)`,
    ),
    check('jobs_completed_at_iff_completed', sql`(${t.status} = 'completed') = (${t.completedAt} IS NOT NULL)`),
    check('jobs_failed_at_iff_failed', sql`(${t.status} = 'failed') = (${t.failedAt} IS NOT NULL)`),
    check('jobs_cancelled_at_iff_cancelled', sql`(${t.status} = 'cancelled') = (${t.cancelledAt} IS NOT NULL)`),
    check(
      'jobs_finished_at_iff_finished',
      sql`(${t.status} IN ('completed', 'failed', 'cancelled')) = (${t.finishedAt} IS NOT NULL)`,
    ),
    check('jobs_attempts_in_range', sql`${t.attemptCount} >= 0 AND ${t.maxAttempts} >= 1`),
    check('jobs_counts_not_negative', sql`${t.erroredAttempts} >= 0 AND ${t.lostAttempts} >= 0`),
    check('jobs_payload_is_json', sql`json_valid(${t.payload})`),
    check('jobs_unique_while_known', sql`${t.uniqueWhile} IN ('retained', 'active')`),
    check('jobs_key_mode_known', sql`${t.keyMode} IS NULL OR (${t.keyMode} IN ('replace', 'debounce', 'throttle') AND ${t.uniqueWhile} = 'active')`),
    check('jobs_group_key_length', sql`${t.groupKey} IS NULL OR length(${t.groupKey}) BETWEEN 1 AND 128`),
    check('jobs_occurrence_iff_schedule', sql`(${t.scheduleName} IS NULL) = (${t.occurrenceAt} IS NULL)`),
    // The claim: pending jobs of one queue in claim order.
    index('jobs_claim_idx')
      .on(t.queueName, sql`${t.priority} DESC`, t.availableAt, t.id)
      .where(sql`${t.status} = 'pending'`),
    // The reaper: running jobs by lease expiry, and by hard deadline.
    // A group's pending jobs in claim order (the fair claim, claim.ts).
    index('jobs_group_claim_idx')
      .on(t.queueName, t.groupKey, sql`${t.priority} DESC`, t.availableAt, t.id)
      .where(sql`${t.status} = 'pending' AND ${t.groupKey} IS NOT NULL`),
    // A group's earliest pending job: its job_groups.delayed_until (drizzle/0039).
    index('jobs_group_due_idx').on(t.queueName, t.groupKey, t.availableAt).where(sql`${t.status} = 'pending' AND ${t.groupKey} IS NOT NULL`),
    index('jobs_lease_expiry_idx').on(t.leaseExpiresAt).where(sql`${t.status} = 'running'`),
    index('jobs_deadline_idx').on(t.deadlineAt).where(sql`${t.status} = 'running' AND ${t.deadlineAt} IS NOT NULL`),
    // A claim sent again (claim.ts): the jobs still running under its id.
    index('jobs_claim_id_idx').on(t.claimId, t.lockedBy).where(sql`${t.status} = 'running' AND ${t.claimId} IS NOT NULL`),
    // Retention pruning: finished jobs, oldest first.
    index('jobs_finished_idx').on(t.finishedAt).where(sql`${t.finishedAt} IS NOT NULL`),
    // Listing one queue (and status), keyset-paginated by id.
    index('jobs_queue_status_id_idx').on(t.queueName, t.status, t.id),
    index('jobs_status_id_idx').on(t.status, t.id),
    // Held jobs (waiting for a person): the held list, counts, the alert.
    index('jobs_held_idx').on(t.queueName, t.heldAt).where(sql`${t.heldAt} IS NOT NULL`),
    // Dead letters of one queue, oldest first: the redrive and its dry run.
    index('jobs_dead_letters_idx').on(t.deadLetterQueue, t.id).where(sql`${t.deadLetterQueue} IS NOT NULL`),
    // Retrying a failed job finds the jobs its failure failed or held; a flow's references.
    index('jobs_dependency_failed_by_idx').on(t.dependencyFailedBy).where(sql`${t.dependencyFailedBy} IS NOT NULL`),
    index('jobs_flow_ref_idx').on(t.flowRef).where(sql`${t.flowRef} IS NOT NULL`),
    // Pending jobs made pending for later (delayed, retried, released): "ready" is the kept pending count minus their future part.
    index('jobs_due_later_idx').on(t.queueName, t.availableAt).where(sql`${t.status} = 'pending' AND ${t.availableAt} > ${t.createdAt}`),
    // Uniqueness windows (drizzle/0012): a key enqueued as 'retained' is unique
    // among the queue's kept jobs enqueued that way; a pending or running
    // job's key is unique in its queue among the jobs of both windows.
    uniqueIndex('jobs_idempotency_key_idx')
      .on(t.queueName, t.idempotencyKey)
      .where(sql`${t.idempotencyKey} IS NOT NULL AND ${t.uniqueWhile} = 'retained'`),
    uniqueIndex('jobs_active_key_idx')
      .on(t.queueName, t.idempotencyKey)
      .where(sql`${t.idempotencyKey} IS NOT NULL AND ${t.status} IN ('pending', 'running') AND ${t.keyMode} IS NULL`),
    // Replace and debounce (drizzle/0036): one job per key that no worker has
    // claimed yet (lease_epoch 0; a claim raises it for good), so a running
    // job, or one back to pending for a retry with its checkpoint, is never
    // rewritten and never collides with the new job made beside it.
    uniqueIndex('jobs_unclaimed_key_idx')
      .on(t.queueName, t.idempotencyKey)
      .where(sql`${t.idempotencyKey} IS NOT NULL AND ${t.keyMode} IN ('replace', 'debounce') AND ${t.status} = 'pending' AND ${t.leaseEpoch} = 0`),
    // Finding jobs by key, whatever their mode and status.
    index('jobs_key_lookup_idx').on(t.queueName, t.idempotencyKey).where(sql`${t.idempotencyKey} IS NOT NULL`),
    // One job per schedule occurrence, for as long as it is kept (drizzle/0021).
    uniqueIndex('jobs_schedule_occurrence_idx').on(t.scheduleName, t.occurrenceAt).where(sql`${t.scheduleName} IS NOT NULL`),
    // A schedule's occurrences still pending or running: its overlap policy asks at every occurrence (drizzle/0034).
    index('jobs_schedule_active_idx').on(t.scheduleName).where(sql`${t.scheduleName} IS NOT NULL AND ${t.status} IN ('pending', 'running')`),
  ],
);

/**
 * The edges of jobs that wait for other jobs (drizzle/0031): one row per
 * (dependent, dependency), its state kept by the triggers on the
 * dependency's transitions: 'waiting', 'completed', 'failed' (failed or
 * cancelled, the dependent failed or held by its policy) or 'ignored'
 * (failed or cancelled, and the dependent's policy 'run' counted it as met).
 */
export const jobDependencies = sqliteTable(
  'job_dependencies',
  {
    dependentId: integer('dependent_id').notNull(),
    dependencyId: integer('dependency_id').notNull(),
    state: text('state', { enum: DEPENDENCY_STATES }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.dependentId, t.dependencyId] }),
    // A dependency's transition finds its dependents.
    index('job_dependencies_dependency_idx').on(t.dependencyId, t.state),
  ],
);

/**
 * Failure cascades still to run (drizzle/0040, src/db/store/dependency-cascades.ts):
 * one row per job whose failure or cancel (action 'fail'), or whose retry
 * ('retry', then 'retry_jobs'), still has dependents to settle. The engine
 * and the maintenance pass settle them in bounded steps; a row is the
 * remaining work, so a crash mid-cascade loses nothing. `cursor`: every
 * failed job of the cascade with a smaller id is settled.
 */
export const dependencyCascades = sqliteTable(
  'dependency_cascades',
  {
    jobId: integer('job_id').primaryKey(),
    action: text('action', { enum: ['fail', 'retry', 'retry_jobs'] }).notNull(),
    cursor: integer('cursor').notNull(),
    // Who retried the job, for the retried jobs' events.
    actor: text('actor'),
    queuedAt: integer('queued_at').notNull(),
    steps: integer('steps').notNull().default(0),
    // Edges and jobs settled so far (the progress the job page and the API show).
    settled: integer('settled').notNull().default(0),
  },
  // The next step goes to the cascade that took fewest so far: a large one does not hold back a small one queued after it.
  (t) => [index('dependency_cascades_steps_idx').on(t.steps, t.jobId)],
);

/**
 * One cascade step's edges, filled and emptied inside the step's own
 * transaction (always empty between transactions): every statement of the
 * step works on the same bounded set.
 */
export const dependencyCascadeBatch = sqliteTable(
  'dependency_cascade_batch',
  {
    dependentId: integer('dependent_id').notNull(),
    dependencyId: integer('dependency_id').notNull(),
  },
  (t) => [primaryKey({ columns: [t.dependentId, t.dependencyId] })],
);

/**
 * The audit trail: one row per transition, rejected stale write and reaper
 * decision, except a job's routine enqueue and completion (drizzle/0015:
 * the timeline derives those from the job row).
 */
export const events = sqliteTable(
  'events',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    jobId: integer('job_id').notNull(),
    queueName: text('queue_name').notNull(),
    type: text('type').notNull(),
    fromStatus: text('from_status'),
    toStatus: text('to_status'),
    reason: text('reason'),
    message: text('message'),
    actor: text('actor'),
    workerId: text('worker_id'),
    attempt: integer('attempt'),
    at: integer('at').notNull(),
  },
  (t) => [
    index('events_job_idx').on(t.jobId, t.id),
    // Counters for metrics read the rare event types only; the per-job types
    // (claimed, and enqueued and completed in databases from before
    // drizzle/0015) stay out of this index, so it costs nothing on the hot path.
    index('events_rare_type_at_idx')
      .on(t.type, t.at)
      .where(sql`${t.type} NOT IN ('enqueued', 'claimed', 'completed')`),
  ],
);

/** Worker registry: lets the reaper tell "worker dead" from "job slow". */
export const workers = sqliteTable(
  'workers',
  {
    id: text('id').primaryKey(),
    host: text('host'),
    pid: integer('pid'),
    version: text('version'),
    queues: text('queues'),
    runningCount: integer('running_count').notNull().default(0),
    // The process now using this id (random per start), and how many times a
    // new one took over the id: a crash-looping worker shows here.
    instanceId: text('instance_id'),
    restarts: integer('restarts').notNull().default(0),
    // What the worker process reported with its latest beat, counted since it
    // started (NULL: an SDK that does not report them). Event-loop blocks mean
    // a hung process, not a dead one.
    eventLoopBlocks: integer('event_loop_blocks'),
    longestEventLoopBlockMs: integer('longest_event_loop_block_ms'),
    heartbeatFailures: integer('heartbeat_failures'),
    leasesLost: integer('leases_lost'),
    startedAt: integer('started_at').notNull(),
    lastSeenAt: integer('last_seen_at').notNull(),
  },
  (t) => [index('workers_last_seen_idx').on(t.lastSeenAt)],
);

/**
 * The idempotency ledger for side effects (the worker's `once(key, fn)`): one
 * row per (job, key). `started` is written under the lease before the effect
 * runs, so only the current owner can start it; `done` holds its result for
 * every later attempt.
 */
export const effects = sqliteTable(
  'effects',
  {
    jobId: integer('job_id').notNull(),
    key: text('key').notNull(),
    state: text('state', { enum: ['started', 'done'] }).notNull().default('started'),
    result: text('result'),
    attempt: integer('attempt').notNull(),
    workerId: text('worker_id'),
    createdAt: integer('created_at').notNull(),
    completedAt: integer('completed_at'),
  },
  (t) => [
    primaryKey({ columns: [t.jobId, t.key] }),
    check('effects_state_known', sql`${t.state} IN ('started', 'done')`),
    check('effects_completed_at_iff_done', sql`(${t.state} = 'done') = (${t.completedAt} IS NOT NULL)`),
  ],
);

/**
 * Per-queue settings. A NULL column means "use the server's configured default";
 * the queue row itself is created on first enqueue.
 */
export const queues = sqliteTable(
  'queues',
  {
    name: text('name').primaryKey(),
    leaseMs: integer('lease_ms'),
    heartbeatMs: integer('heartbeat_ms'),
    graceMs: integer('grace_ms'),
    maxAttempts: integer('max_attempts'),
    maxLostAttempts: integer('max_lost_attempts'),
    backoffBaseMs: integer('backoff_base_ms'),
    backoffMaxMs: integer('backoff_max_ms'),
    retentionMs: integer('retention_ms'),
    // Hard time limit per attempt (a job's own timeout_ms wins).
    timeoutMs: integer('timeout_ms'),
    // A running job whose progress and checkpoint have not changed for this long is shown as stalled; NULL: off.
    stallMs: integer('stall_ms'),
    paused: integer('paused', { mode: 'boolean' }).notNull().default(false),
    // Queue-wide concurrency: the claim never lets more than this many of the
    // queue's jobs run at once, across all workers and servers; NULL: no limit.
    maxRunning: integer('max_running'),
    // Rate limit: at most rateMax claims per fixed window of rateWindowMs
    // (NULL: none). rateWindowStart and rateClaims are the current window's
    // count, kept by a trigger on each claim (drizzle/0012).
    rateMax: integer('rate_max'),
    rateWindowMs: integer('rate_window_ms'),
    rateWindowStart: integer('rate_window_start'),
    rateClaims: integer('rate_claims').notNull().default(0),
    // Alert thresholds for this queue only (a JSON object of AlertThresholds
    // fields, checked by the API); absent fields use the server's thresholds.
    alertThresholds: text('alert_thresholds'),
    // What happens to a job whose attempt was lost (a job's own onLost
    // wins): 'retry' (NULL, the default) or 'hold' for a person.
    onLost: text('on_lost', { enum: ON_LOST_POLICIES }),
    // How the rate limit counts: 'sliding' (NULL, the default: at most
    // rateMax starts in any rateWindowMs) or 'fixed' (per aligned window).
    rateMode: text('rate_mode', { enum: ['sliding', 'fixed'] }),
    // Per group of the queue's jobs: at most groupMaxRunning running, at
    // most groupRateMax starts in any groupRateWindowMs; NULL: no limit.
    groupMaxRunning: integer('group_max_running'),
    groupRateMax: integer('group_rate_max'),
    groupRateWindowMs: integer('group_rate_window_ms'),
    // Kept by triggers (drizzle/0030): the queue's pending jobs that carry a
    // group, and a sequence stepped once per grouped job claimed.
    groupedPending: integer('grouped_pending').notNull().default(0),
    groupServes: integer('group_serves').notNull().default(0),
    // Where a job that fails for good goes (drizzle/0032): it is listed in
    // this dead-letter queue, still failed, its history kept; NULL: nowhere.
    deadLetterQueue: text('dead_letter_queue'),
    // How many times one job may snooze before a snooze is refused; NULL: DEFAULT_MAX_SNOOZES.
    maxSnoozes: integer('max_snoozes'),
    // The payload or result paths the jobs list's `where` finds through an
    // index of their own (drizzle/0035), as a JSON array of path texts; NULL: none.
    indexedFields: text('indexed_fields'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [
    check('queues_rate_mode_known', sql`${t.rateMode} IS NULL OR ${t.rateMode} IN ('sliding', 'fixed')`),
    check('queues_positive_durations', sql`coalesce(${t.leaseMs}, 1) > 0 AND coalesce(${t.heartbeatMs}, 1) > 0 AND coalesce(${t.graceMs}, 0) >= 0`),
  ],
);

/**
 * Finished jobs (completed, failed, cancelled) per queue and status, kept
 * exact by triggers on jobs (drizzle/0004), so the overview and /metrics read
 * a few rows instead of counting a million retained jobs. Pending and running
 * are kept in liveCounts.
 */
export const finishedCounts = sqliteTable(
  'finished_counts',
  {
    queueName: text('queue_name').notNull(),
    status: text('status', { enum: ['completed', 'failed', 'cancelled'] }).notNull(),
    jobs: integer('jobs').notNull(),
  },
  (t) => [primaryKey({ columns: [t.queueName, t.status] })],
);

/**
 * Pending and running jobs per queue, kept exact by triggers on jobs
 * (drizzle/0014) as finishedCounts keeps the finished ones, so GET /queues,
 * the overview and /metrics read a few rows at any backlog. A claim costs one
 * trigger (a decrement and an upsert).
 */
export const liveCounts = sqliteTable(
  'live_counts',
  {
    queueName: text('queue_name').notNull(),
    status: text('status', { enum: ['pending', 'running'] }).notNull(),
    jobs: integer('jobs').notNull(),
  },
  (t) => [primaryKey({ columns: [t.queueName, t.status] })],
);

/**
 * The jobs of jobs_due_later_idx (pending, made pending for later) per queue
 * and minute of their available_at, kept exact by triggers (drizzle/0016):
 * "ready" subtracts the minutes after the current one from here and counts
 * only the current minute in the index, so it does not grow with how many
 * jobs wait for later. WITHOUT ROWID (in the migration).
 */
export const dueLaterCounts = sqliteTable(
  'due_later_counts',
  {
    queueName: text('queue_name').notNull(),
    /** available_at rounded down to its minute. */
    minuteAt: integer('minute_at').notNull(),
    jobs: integer('jobs').notNull(),
  },
  (t) => [primaryKey({ columns: [t.queueName, t.minuteAt] })],
);

/**
 * Per-queue activity per minute, for the last-hour charts: completed, failed
 * and reaped counted by triggers as they happen (never decremented), and the
 * worst heartbeat lag of running jobs sampled by each reaper pass. Pruned by
 * the reaper after a day.
 */
export const queueMinutes = sqliteTable(
  'queue_minutes',
  {
    queueName: text('queue_name').notNull(),
    // Start of the minute, epoch ms (a multiple of 60 000).
    minuteAt: integer('minute_at').notNull(),
    completed: integer('completed').notNull().default(0),
    failed: integer('failed').notNull().default(0),
    reaped: integer('reaped').notNull().default(0),
    maxHeartbeatLagMs: integer('max_heartbeat_lag_ms'),
  },
  (t) => [primaryKey({ columns: [t.queueName, t.minuteAt] }), index('queue_minutes_minute_idx').on(t.minuteAt)],
);

/**
 * Durable counters per queue (what /metrics reports as `_total`): counted by a
 * trigger on events as each is written, inside the statement that made the
 * transition (drizzle/0006), never decremented, never pruned. `label` is the
 * reason of a reap, forced/expired of an operator requeue, '' otherwise.
 */
export const counters = sqliteTable(
  'counters',
  {
    queueName: text('queue_name').notNull(),
    name: text('name').notNull(),
    label: text('label').notNull().default(''),
    value: integer('value').notNull(),
  },
  (t) => [primaryKey({ columns: [t.queueName, t.name, t.label] })],
);

/**
 * Durable histograms per queue (drizzle/0022; names and bounds in
 * src/core/histograms.ts): run time at each completion, queue wait at each
 * claim, the interval between lease renewals at each renewal, each counted
 * by a trigger inside that statement, never pruned. A row is one bucket: the
 * observations that fell in it (not cumulative) and their sum; `le_ms` is
 * its upper bound (OVERFLOW_LE_MS for +Inf). WITHOUT ROWID (in the migration).
 */
export const histogramBuckets = sqliteTable(
  'histogram_buckets',
  {
    queueName: text('queue_name').notNull(),
    name: text('name', { enum: ['runtime', 'queue_wait', 'heartbeat_interval'] }).notNull(),
    leMs: integer('le_ms').notNull(),
    count: integer('count').notNull(),
    sumMs: integer('sum_ms').notNull(),
  },
  (t) => [primaryKey({ columns: [t.queueName, t.name, t.leMs] })],
);

/**
 * What each alert was at the last evaluation, and what the webhook was last
 * told. `notified_state <> state` is an undelivered notification; the pass
 * that wants to send it first takes `notify_until` (a short lease), so two
 * reapers never both send it.
 */
export const alertStates = sqliteTable(
  'alert_states',
  {
    queueName: text('queue_name').notNull(),
    name: text('name').notNull(),
    state: text('state', { enum: ['firing', 'ok'] }).notNull(),
    since: integer('since').notNull(),
    value: integer('value'),
    message: text('message').notNull(),
    notifiedState: text('notified_state', { enum: ['firing', 'ok'] }).notNull().default('ok'),
    notifyUntil: integer('notify_until'),
    notifyAttempts: integer('notify_attempts').notNull().default(0),
    lastNotifyError: text('last_notify_error'),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.queueName, t.name] }),
    check('alert_states_state_known', sql`${t.state} IN ('firing', 'ok') AND ${t.notifiedState} IN ('firing', 'ok')`),
  ],
);

/**
 * Dashboard sessions ended by a logout before their cookie expires. Sessions
 * are signed cookies (no server state); this list is what makes a logout
 * final on every server sharing the database. A row can go once its session
 * would have expired anyway.
 */
export const revokedSessions = sqliteTable(
  'revoked_sessions',
  {
    sid: text('sid').primaryKey(),
    expiresAt: integer('expires_at').notNull(),
  },
  (t) => [index('revoked_sessions_expires_idx').on(t.expiresAt)],
);

/**
 * Who changed what (drizzle/0009): every operator change that is not a job
 * transition by itself (queue settings, pause and resume, alert thresholds,
 * bulk actions, logins and logouts), and the single-job actions by reference
 * (their events hold the detail). `before` and `after` are JSON of the fields
 * the change set. Pruned past LEASEHOLD_AUDIT_RETENTION_MS.
 */
export const operatorAudit = sqliteTable(
  'operator_audit',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    at: integer('at').notNull(),
    /** The operator's name (dashboard), or the token's name or the request's `actor` (API). */
    actor: text('actor').notNull(),
    /** admin, readonly, worker, or none (a failed login). */
    role: text('role').notNull(),
    /** The name of the token the request or session authenticated with (null: open mode or a failed login). */
    credential: text('credential'),
    source: text('source', { enum: ['dashboard', 'api'] }).notNull(),
    action: text('action').notNull(),
    queueName: text('queue_name'),
    jobId: integer('job_id'),
    target: text('target').notNull(),
    before: text('before'),
    after: text('after'),
    reason: text('reason'),
    client: text('client'),
  },
  (t) => [
    index('operator_audit_at_idx').on(t.at),
    index('operator_audit_actor_idx').on(t.actor, t.id),
    index('operator_audit_action_idx').on(t.action, t.id),
    index('operator_audit_queue_idx').on(t.queueName, t.id),
    check('operator_audit_source_known', sql`${t.source} IN ('dashboard', 'api')`),
  ],
);

/**
 * One-time dashboard form tokens already used (drizzle/0009): a form
 * re-sent within its session is refused. A row can go once the form's
 * session would have expired anyway.
 */
export const usedFormNonces = sqliteTable(
  'used_form_nonces',
  {
    nonce: text('nonce').primaryKey(),
    expiresAt: integer('expires_at').notNull(),
  },
  (t) => [index('used_form_nonces_expires_idx').on(t.expiresAt)],
);

/**
 * Recurring jobs: a cron expression (in a time zone) or a fixed interval, a
 * payload and job options. The maintenance pass enqueues each due occurrence
 * once (src/maintenance/schedules.ts); next_run_at is the next occurrence not
 * yet enqueued.
 */
export const schedules = sqliteTable(
  'schedules',
  {
    name: text('name').primaryKey(),
    queueName: text('queue_name').notNull(),
    cron: text('cron'),
    timeZone: text('time_zone'),
    intervalMs: integer('interval_ms'),
    payload: text('payload').notNull().default('null'),
    // JSON: priority, maxAttempts, timeoutMs for each job it enqueues.
    jobOptions: text('job_options').notNull().default('{}'),
    paused: integer('paused', { mode: 'boolean' }).notNull().default(false),
    nextRunAt: integer('next_run_at').notNull(),
    lastRunAt: integer('last_run_at'),
    lastJobId: integer('last_job_id'),
    // Policies (drizzle/0034, src/maintenance/schedules.ts): what a pass does
    // with occurrences it finds missed ('latest' runs the latest, 'all' each
    // one within catch_up_window_ms, 'none' only one still on time), and with
    // an occurrence due while the previous one's job is pending or running
    // ('allow' runs it, 'skip' skips it). Checked by the API, not by a CHECK:
    // one would rebuild the table.
    catchUp: text('catch_up', { enum: SCHEDULE_CATCH_UP }).notNull().default('latest'),
    catchUpWindowMs: integer('catch_up_window_ms'),
    overlap: text('overlap', { enum: SCHEDULE_OVERLAP }).notNull().default('allow'),
    // Occurrences skipped so far, by why (each skip is also a schedule_skips row).
    skippedMissed: integer('skipped_missed').notNull().default(0),
    skippedOverlap: integer('skipped_overlap').notNull().default(0),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [
    check('schedules_cron_xor_interval', sql`(${t.cron} IS NULL) <> (${t.intervalMs} IS NULL)`),
    check('schedules_json', sql`json_valid(${t.payload}) AND json_valid(${t.jobOptions})`),
    index('schedules_due_idx').on(t.nextRunAt).where(sql`${t.paused} = 0`),
    // A schedule keeps its queue in use (the queue cap, a queue's delete): asked per queue (drizzle/0025).
    index('schedules_queue_idx').on(t.queueName),
  ],
);

/**
 * Each skip of a schedule's occurrences (drizzle/0034): one row per decision
 * of a pass (a run of missed occurrences is one row with its count, first
 * and last), so a per-second schedule left for an hour writes one row, not
 * 3600. Written in the same batch as the schedule's move, guarded alike.
 */
export const scheduleSkips = sqliteTable(
  'schedule_skips',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    scheduleName: text('schedule_name').notNull(),
    at: integer('at').notNull(),
    reason: text('reason', { enum: SCHEDULE_SKIP_REASONS }).notNull(),
    count: integer('count').notNull(),
    // True: count is a lower bound (counting stopped at the pass's bound).
    countCapped: integer('count_capped', { mode: 'boolean' }).notNull().default(false),
    firstOccurrenceAt: integer('first_occurrence_at').notNull(),
    lastOccurrenceAt: integer('last_occurrence_at').notNull(),
  },
  (t) => [
    check('schedule_skips_reason_known', sql`${t.reason} IN ('missed', 'overlap')`),
    index('schedule_skips_schedule_idx').on(t.scheduleName, t.id),
  ],
);

/**
 * What the maintenance pass last did (drizzle/0019): one row, name 'pass',
 * written by each pass that completed (src/maintenance/pass.ts), so every
 * server, Workers isolate and scraper sharing the database can tell whether
 * any reaper still runs (src/core/maintenance-watch.ts). A failed pass writes
 * nothing: the row ages, and that is what is watched.
 */
export const maintenanceState = sqliteTable(
  'maintenance_state',
  {
    name: text('name').primaryKey(),
    // When the pass started and completed (the database's clock on servers; the pass's fixed time in tests).
    lastStartedAt: integer('last_started_at').notNull(),
    lastCompletedAt: integer('last_completed_at').notNull(),
    // Completed passes since the row was made (never decreases): leasehold_maintenance_passes_total.
    passes: integer('passes').notNull(),
  },
  (t) => [check('maintenance_state_times', sql`${t.lastCompletedAt} >= ${t.lastStartedAt} AND ${t.passes} >= 1`)],
);

/**
 * The reaper's hold (drizzle/0018): after a server starts, or notices that its
 * own reaper stopped ticking (the process was paused, a VM suspended, the
 * event loop stalled), workers could not renew their leases through it, so
 * until `hold_until` nothing takes a job for an expired lease: not the
 * reaper (any server's, `leasehold reap`, the Workers cron), not an
 * operator's requeue without force. Deadlines still apply. One row for the
 * whole database: which workers talk to which server is not known here, so
 * one server's gap holds every reaper. Written by whoever notices the gap,
 * on the database clock; a later end wins (src/db/store/reaper-hold.ts).
 */
export const reaperHold = sqliteTable(
  'reaper_hold',
  {
    id: integer('id').primaryKey(),
    /** Epoch ms, database clock: expired leases wait for their owners until then. */
    holdUntil: integer('hold_until').notNull(),
    beganAt: integer('began_at').notNull(),
    /** How long the server's reaper did not tick, or how far the lease clock stepped forward; null: the server just started. */
    gapMs: integer('gap_ms'),
    /** Why, in words: "the server just started", "the reaper did not run for 6.2 s (...)". */
    cause: text('cause').notNull(),
  },
  (t) => [check('reaper_hold_one_row', sql`${t.id} = 1`)],
);

/**
 * A canary requeue (drizzle/0028): a bulk requeue of one queue's running
 * jobs taken in steps (the first `first_step` jobs, each later step
 * `growth` times the one before), each step watched for `window_ms` before
 * the next, stopped by itself when the step's new attempts fail, are
 * refused as stale writes, run twice or stop beating. Advanced by the
 * maintenance pass (src/maintenance/canary.ts); every step is one batch
 * guarded by the run's step number and a claim token, so two passes at once
 * take a step once and a restart in the middle finds the run where the last
 * committed batch left it.
 *
 * state: watching (a step was taken, its window runs), done (every job
 * taken and the last step judged healthy), stopped (by itself: stop_reason,
 * stop_why), cancelled (by an operator).
 */
export const canaryRuns = sqliteTable(
  'canary_runs',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    queueName: text('queue_name').notNull(),
    state: text('state', { enum: ['watching', 'done', 'stopped', 'cancelled'] }).notNull(),
    force: integer('force', { mode: 'boolean' }).notNull(),
    firstStep: integer('first_step').notNull(),
    growth: integer('growth').notNull(),
    windowMs: integer('window_ms').notNull(),
    maxFailures: integer('max_failures').notNull(),
    maxStaleWrites: integer('max_stale_writes').notNull(),
    maxDuplicates: integer('max_duplicates').notNull(),
    maxHeartbeatLagMs: integer('max_heartbeat_lag_ms').notNull(),
    /** How many jobs the run froze at its start (canary_jobs rows). */
    selected: integer('selected').notNull(),
    /** The last step taken (1 is the first); its jobs are the ones watched. */
    step: integer('step').notNull().default(0),
    /** Who took the last step: the batch's guard, so only that batch's job updates apply. */
    stepClaim: text('step_claim'),
    stepStartedAt: integer('step_started_at'),
    /** The last event id when the step was taken: the watch reads the step's jobs' events after it (ids, not times: two writes can share a millisecond). */
    stepAfterEvent: integer('step_after_event'),
    /** Jobs the run took so far (requeued, or failed for good as the reaper would), and those the requeue rule refused. */
    requeued: integer('requeued').notNull().default(0),
    failedForGood: integer('failed_for_good').notNull().default(0),
    skipped: integer('skipped').notNull().default(0),
    stopReason: text('stop_reason'),
    stopWhy: text('stop_why'),
    /** The operator who started it: the audit entries of its steps name them. */
    actor: text('actor').notNull(),
    startedBy: text('started_by').notNull(),
    reason: text('reason').notNull(),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
    finishedAt: integer('finished_at'),
  },
  (t) => [
    check('canary_runs_state', sql`${t.state} IN ('watching', 'done', 'stopped', 'cancelled')`),
    check('canary_runs_steps', sql`${t.firstStep} >= 1 AND ${t.growth} >= 1 AND ${t.windowMs} >= 0 AND ${t.step} >= 0`),
    check('canary_runs_finished', sql`(${t.finishedAt} IS NULL) = (${t.state} = 'watching')`),
    index('canary_runs_active_idx').on(t.id).where(sql`${t.state} = 'watching'`),
  ],
);

/**
 * The jobs a canary run froze at its start, in the order it takes them:
 * `step` says which step took each (null: not yet), and `outcome` what the
 * requeue did (requeued, failed: for good as the reaper would, skipped:
 * refused, with `skip_why`).
 */
export const canaryJobs = sqliteTable(
  'canary_jobs',
  {
    runId: integer('run_id').notNull(),
    position: integer('position').notNull(),
    jobId: integer('job_id').notNull(),
    step: integer('step'),
    outcome: text('outcome', { enum: ['requeued', 'failed', 'skipped'] }),
    skipWhy: text('skip_why'),
  },
  (t) => [
    primaryKey({ columns: [t.runId, t.position] }),
    index('canary_jobs_step_idx').on(t.runId, t.step),
    check('canary_jobs_outcome', sql`${t.outcome} IS NULL OR ${t.outcome} IN ('requeued', 'failed', 'skipped')`),
  ],
);

/** Every decision of a canary run, with its reason: started, step taken, stopped, done, cancelled. */
export const canaryEvents = sqliteTable(
  'canary_events',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    runId: integer('run_id').notNull(),
    at: integer('at').notNull(),
    type: text('type').notNull(),
    step: integer('step').notNull(),
    reason: text('reason'),
    message: text('message'),
  },
  (t) => [index('canary_events_run_idx').on(t.runId, t.id)],
);

/**
 * Each group with pending or running jobs, per queue, kept exact by triggers
 * on jobs (drizzle/0030, 0039): the fair claim's round walks
 * job_groups_ready_idx, least recently served group first, and looks up the
 * groups whose delay ran out since in job_groups_delayed_idx; `served` is the
 * queue's groupServes at the group's last claim (NULL: never served), and
 * `delayed_until` is when the group's earliest pending job comes due if none
 * was due at the last change of its jobs (NULL: one was, or none is pending).
 */
export const jobGroups = sqliteTable(
  'job_groups',
  {
    queueName: text('queue_name').notNull(),
    groupKey: text('group_key').notNull(),
    pending: integer('pending').notNull().default(0),
    running: integer('running').notNull().default(0),
    served: integer('served'),
    delayedUntil: integer('delayed_until'),
  },
  (t) => [
    primaryKey({ columns: [t.queueName, t.groupKey] }),
    index('job_groups_ready_idx').on(t.queueName, t.served).where(sql`${t.pending} > 0 AND ${t.delayedUntil} IS NULL`),
    index('job_groups_delayed_idx').on(t.queueName, t.delayedUntil).where(sql`${t.delayedUntil} IS NOT NULL`),
  ],
);

/**
 * Recent starts for sliding-window rate limits (drizzle/0030): per queue
 * (groupKey '') and per group, the jobs started at each instant within the
 * window; older rows are deleted as new starts are counted.
 */
export const rateStarts = sqliteTable(
  'rate_starts',
  {
    queueName: text('queue_name').notNull(),
    groupKey: text('group_key').notNull(),
    at: integer('at').notNull(),
    jobs: integer('jobs').notNull(),
  },
  (t) => [primaryKey({ columns: [t.queueName, t.groupKey, t.at] })],
);

/**
 * What-if tuning's evidence (drizzle/0029; replayed by src/core/what-if.ts),
 * kept a day (retention). Attempts their owners ended (completed, failed,
 * released) are counted per queue and minute by their longest silence: the
 * longest time the claim went without a lease renewal, the final stretch to
 * the owner's last write included, rounded up (250 ms steps to 60 s, 5 s
 * steps to 10 min, then one bucket). Counted by a trigger inside the
 * statement that ended the attempt.
 */
export const attemptSilences = sqliteTable(
  'attempt_silences',
  {
    queueName: text('queue_name').notNull(),
    minuteAt: integer('minute_at').notNull(),
    /** The bucket's upper bound, ms (9007199254740991: past 10 min). */
    silenceMs: integer('silence_ms').notNull(),
    attempts: integer('attempts').notNull(),
  },
  (t) => [primaryKey({ columns: [t.queueName, t.minuteAt, t.silenceMs] }), index('attempt_silences_minute_idx').on(t.minuteAt)],
);

/**
 * Every attempt the reaper took from its owner (drizzle/0029), one row each,
 * written by a trigger inside the reap's statement: when its owner last
 * renewed, under which lease, and why it was taken. Whether the owner was
 * alive after all (a false reap) is read later, from its refused writes and
 * its liveness row. Kept a day (retention).
 */
export const takenAttempts = sqliteTable(
  'taken_attempts',
  {
    jobId: integer('job_id').notNull(),
    /** The claim's fencing token (lease_epoch): one per attempt. */
    attempt: integer('attempt').notNull(),
    queueName: text('queue_name').notNull(),
    workerId: text('worker_id'),
    instanceId: text('instance_id'),
    startedAt: integer('started_at'),
    lastHeartbeatAt: integer('last_heartbeat_at'),
    leaseMs: integer('lease_ms'),
    longestSilenceMs: integer('longest_silence_ms'),
    takenAt: integer('taken_at').notNull(),
    reason: text('reason'),
  },
  (t) => [primaryKey({ columns: [t.jobId, t.attempt] }), index('taken_attempts_queue_idx').on(t.queueName, t.takenAt), index('taken_attempts_at_idx').on(t.takenAt)],
);

/**
 * Event-loop blocks workers reported (drizzle/0029): a row each time a
 * process's longest block grows (the beat carries only the longest since
 * the process started), with the queues the worker serves. Kept a day.
 */
export const workerBlocks = sqliteTable(
  'worker_blocks',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    workerId: text('worker_id').notNull(),
    instanceId: text('instance_id'),
    queues: text('queues'),
    reportedAt: integer('reported_at').notNull(),
    blockMs: integer('block_ms').notNull(),
  },
  (t) => [index('worker_blocks_at_idx').on(t.reportedAt)],
);
