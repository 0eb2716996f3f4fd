/**
 * The types the store port (port.ts) takes and gives: each method's
 * parameters and results, defined once, here, beside the port. The store
 * functions (src/db/store/*.ts) import them from this file; everyone outside
 * src/db/store imports them from port.ts, which re-exports them all.
 *
 * Types only. Where an operator's write carries SQL to run inside its batch
 * (an audit entry's `before`, a queue read in the same statement) the type
 * says `SQL`: Drizzle's, the engine every backend runs on.
 */

import type { AlertTransition } from '../../core/alert-webhook.ts';
import type { Alert } from '../../core/alerts.ts';
import type { AuditAction } from '../../core/audit-actions.ts';
import type { BulkKind } from '../../core/bulk-kind.ts';
import type { CanaryOptions, CanaryState, CanaryStepHealth } from '../../core/canary.ts';
import type { Now } from '../../core/clock.ts';
import type { QueueDefaults } from '../../core/config.ts';
import type { JobRecord } from '../../core/job-record.ts';
import type { WhereClause } from '../../core/job-filter.ts';
import type { ReapCandidate, ReapDecision, ReapRules, RequeueDone } from '../../core/reaper.ts';
import type { DependencyPolicy, DependencyState, LostAttemptAbort, OnLost, ScheduleCatchUp, ScheduleOverlap, ScheduleSkipReason, UniqueWhile } from '../../core/wire.ts';
import type { JobStatus } from '../schema.ts';
import type { SQL } from 'drizzle-orm';

export type { MetricsSnapshot, QueueHealth, QueueMetrics, WindowCount } from '../../core/metrics-snapshot.ts';
export type { RequeueDone } from '../../core/reaper.ts';
export type { QueueSettingsPatch } from '../../core/wire.ts';

// ---------------------------------------------------------------------------
// Enqueue (store/enqueue)
// ---------------------------------------------------------------------------

export interface NewJob {
  payload: unknown;
  idempotencyKey?: string | undefined;
  /** What the key does: 'retained' (default) or 'active' deduplicate; 'replace', 'debounce', 'throttle' are the key modes (store/enqueue-keyed). */
  uniqueWhile?: UniqueWhile | undefined;
  /** The key mode's window: debounce's quiet period, throttle's window (ms). */
  keyWindowMs?: number | undefined;
  /** What a lost attempt leads to (default: the queue's onLost, else 'retry'). */
  onLost?: OnLost | undefined;
  priority?: number | undefined;
  /** Run no earlier than this many ms from now... */
  delayMs?: number | undefined;
  /** ...or no earlier than this epoch ms. */
  runAt?: number | undefined;
  maxAttempts?: number | undefined;
  timeoutMs?: number | undefined;
  /** The W3C trace context of the enqueuing code (checked by the caller), given to every claim. */
  traceparent?: string | undefined;
  tracestate?: string | undefined;
  /** The job's group: the claim is fair across groups and the queue's group limits apply to each. */
  group?: string | undefined;
}

export interface EnqueueParams {
  queue: string;
  jobs: readonly NewJob[];
  actor: string | null;
  now: Now;
  defaults: QueueDefaults;
  /** Columns to return (must include dedup_count and replaced_count); every column by default. */
  columns?: SQL;
  /** Most queues in use there may be (src/db/store/queue-use.ts): a new queue past it is refused (409), nothing stored. */
  maxQueues?: number;
  /**
   * Claims to run after the jobs, in the same transaction (the claims that
   * were waiting on the queue, src/engine/claim-handoff.ts): each gets its
   * answer through `claimed` as soon as the transaction commits, also when
   * the enqueue itself is then refused (a new queue past the cap). A bulk
   * larger than one chunk runs them after its first chunk.
   */
  thenClaim?: ClaimsAfterInsert | undefined;
}

/** Claims that ride on an enqueue's transaction, and where their answers go (in the order of `claims`). */
export interface ClaimsAfterInsert {
  claims: readonly ClaimParams[];
  claimed(answers: ClaimedWithRateWait[]): void;
}

/** A claim's answer: its jobs in claim order, and whether the queue's rate limit is holding claims back. */
export interface ClaimedWithRateWait {
  claimed: Claimed[];
  rateWait: RateWait | null;
}

export interface Enqueued {
  job: JobRecord;
  deduplicated: boolean;
  /** The key's unclaimed job, rewritten by this enqueue (replace, debounce). */
  replaced: boolean;
}

// ---------------------------------------------------------------------------
// Claims (store/claim, read)
// ---------------------------------------------------------------------------

export interface ClaimParams {
  queue: string;
  workerId: string;
  /** The claiming process (random per worker start), stored with the claim; absent from older SDKs. */
  instanceId?: string | undefined;
  limit: number;
  /**
   * Most bytes of payloads and checkpoints to answer (the server's
   * LEASEHOLD_MAX_CLAIM_BYTES; its default when absent). Always at least one job.
   */
  maxBytes?: number | undefined;
  /** The lease asked for; the queue's or server's default when absent. */
  leaseMs?: number | undefined;
  /**
   * The id the worker chose for this claim request; the same id sent again
   * (its answer was lost) gets back the jobs still running under it instead
   * of claiming more (see claimReplayStatement). Absent from older clients.
   */
  claimId?: string | undefined;
  now: Now;
  defaults: QueueDefaults;
}

/** The claim that rides on a completion: what of ClaimParams its caller chooses (the worker's id for it included). */
export type NextClaimParams = Pick<ClaimParams, 'queue' | 'limit' | 'leaseMs' | 'maxBytes' | 'claimId'>;

/** What a claimer needs of each job. */
export interface Claimed
  extends Pick<
    JobRecord,
    | 'id' | 'queue_name' | 'payload' | 'priority' | 'attempt_count' | 'max_attempts' | 'lease_epoch' | 'lease_ms'
    | 'lease_expires_at' | 'lock_token' | 'idempotency_key' | 'checkpoint' | 'progress' | 'timeout_ms' | 'deadline_at' | 'available_at'
    | 'trace_parent' | 'trace_state' | 'group_key' | 'snoozes'
  > {
  /** How often the claimer should heartbeat: the queue's interval, at most a third of the lease granted. */
  heartbeat_ms: number;
}

/** A queue's rate-limit wait: when its next window opens and how long until then. */
export interface RateWait {
  until: number;
  waitMs: number;
}

// ---------------------------------------------------------------------------
// The owner-guarded writes: heartbeat, checkpoint, complete, fail, release (store/owned, lease, finish)
// ---------------------------------------------------------------------------

/** The columns a batch answer needs (see `returning`); the queue, so a write that makes a job claimable can wake the claims waiting on it. */
export type LeanJob = Pick<JobRecord, 'id' | 'queue_name' | 'status' | 'lease_expires_at' | 'deadline_at' | 'lease_epoch' | 'completed_at'>;

export type OwnedOutcome<T extends { id: number } = LeanJob> =
  /**
   * `repeated`: this write had already been accepted under this token; nothing changed now.
   * `dependents`: other jobs wait for this one, and this write finished it (a completion or a
   * failure that says so: src/db/store/dependencies.ts, hasDependentsSql): some may be claimable now.
   */
  | { id: number; ok: true; job: T; repeated?: true; dependents?: true }
  | { id: number; ok: false; reason: 'lease_lost'; status: JobStatus; cause?: 'deadline_exceeded' }
  | { id: number; ok: false; reason: 'not_found' };

export interface HeartbeatParams {
  workerId: string;
  /** `data` is the progress as JSON text, or null to keep the last one. */
  leases: readonly { id: number; lockToken: string; data?: string | null }[];
  /** Extend: push the expiry to now + leaseMs this once. */
  leaseMs?: number | undefined;
  /**
   * The worker's liveness beat, recorded in the same transaction as the
   * renewals: one tick of a worker is one statement batch. With no leases,
   * the beat alone.
   */
  beat?: WorkerLiveness | undefined;
  now: Now;
}

export interface CheckpointParams {
  workerId: string;
  id: number;
  lockToken: string;
  /** JSON text. */
  checkpoint: string;
  now: Now;
}

export interface CompleteParams {
  workerId: string;
  /** `data` is the result as JSON text (or null). */
  results: readonly { id: number; lockToken: string; data?: string | null }[];
  now: Now;
  /** Return whole rows (a single job's answer) instead of the lean batch columns. */
  full?: boolean;
}

export interface FailParams {
  workerId: string;
  id: number;
  lockToken: string;
  error: string;
  /** False: fail for good now. Default true. */
  retryable: boolean;
  /** Retry after this delay instead of the backoff. */
  retryAfterMs?: number | undefined;
  /** The worker stopped its handler because the attempt lost its lease or ran out of time: a lost attempt, held when its onLost is 'hold'. */
  abortedBy?: LostAttemptAbort | undefined;
  now: Now;
  defaults: QueueDefaults;
}

export interface ReleaseParams {
  workerId: string;
  leases: readonly { id: number; lockToken: string }[];
  reason: string;
  now: Now;
  full?: boolean;
}

// ---------------------------------------------------------------------------
// The effects ledger (store/effects)
// ---------------------------------------------------------------------------

export type EffectStartOutcome =
  | { kind: 'run' }
  | { kind: 'done'; result: string | null }
  | { kind: 'lease_lost'; status: string }
  | { kind: 'not_found' };

export interface StepRow {
  name: string;
  state: 'started' | 'done';
  attempt: number;
  result: string | null;
  /** Started by an earlier claim (or another worker) and never recorded done: it may or may not have run. */
  uncertain: boolean;
}

/** One row of a job's effects ledger, as the job page shows it. */
export interface EffectRow {
  key: string;
  state: 'started' | 'done';
  attempt: number;
  workerId: string | null;
  createdAt: number;
  completedAt: number | null;
}

/** How many jobs a queue holds for a person (onLost 'hold'), and since when the oldest. */
export interface HeldCount {
  queue: string;
  held: number;
  oldestHeldAt: number;
}

export type StepsOutcome = { kind: 'ok'; steps: StepRow[] } | { kind: 'lease_lost'; status: string } | { kind: 'not_found' };

export type EffectFinishOutcome =
  | { kind: 'done'; result: string | null }
  | { kind: 'lease_lost'; status: JobStatus }
  | { kind: 'not_found' }
  | { kind: 'not_started' };

// ---------------------------------------------------------------------------
// Workers (store/workers, lost-claims)
// ---------------------------------------------------------------------------

/** What a worker says about itself in a liveness beat (on its own, or carried by its heartbeats). */
export interface WorkerLiveness {
  /** This process of the worker (random per start); absent from older SDKs. */
  instanceId?: string | undefined;
  host?: string | undefined;
  pid?: number | undefined;
  version?: string | undefined;
  queues?: readonly string[] | undefined;
  runningCount?: number | undefined;
  /** The process's own counters since it started (absent from older SDKs). */
  counters?: Partial<WorkerCounters> | undefined;
  /** Claim ids whose answer the worker never received and no longer waits for: their jobs go back to the queue (lost-claims.ts). */
  lostClaims?: readonly string[] | undefined;
}

/** What a worker process reports about itself with its beats, counted since it started. */
export interface WorkerCounters {
  eventLoopBlocks: number;
  longestEventLoopBlockMs: number;
  heartbeatFailures: number;
  leasesLost: number;
}

export interface WorkerBeat extends WorkerLiveness {
  id: string;
  now: Now;
}

export interface WorkerRecord {
  id: string;
  host: string | null;
  pid: number | null;
  version: string | null;
  queues: string | null;
  running_count: number;
  instance_id: string | null;
  restarts: number;
  event_loop_blocks: number | null;
  longest_event_loop_block_ms: number | null;
  heartbeat_failures: number | null;
  leases_lost: number | null;
  started_at: number;
  last_seen_at: number;
}

// ---------------------------------------------------------------------------
// Operator actions, single and bulk (store/operator, operator-outcome, requeue)
// ---------------------------------------------------------------------------

/** A requeue the reaper would not make now: why, and when it would (if nothing changes). */
export interface RequeueRefusal {
  ok: false;
  reason: 'reaper_would_wait';
  status: 'running';
  why: string;
  takesAt: number;
  /** A server's hold (src/db/store/reaper-hold.ts) keeps expired leases until then. */
  heldUntil?: number;
}

export type OperatorOutcome =
  /** requeue: what it did (the other actions leave it out). */
  | { ok: true; job: JobRecord; requeue?: RequeueDone }
  | RequeueRefusal
  /** keyHeldBy: a retry refused because another job with the same idempotency key is pending or running (drizzle/0012). */
  /** heldByDependency: a release refused because the job is held for its failed dependency (that id), not for a lost attempt. */
  | { ok: false; reason: 'conflict'; status: JobStatus; keyHeldBy?: number; heldByDependency?: number }
  | { ok: false; reason: 'not_found' };

export interface OperatorParams {
  id: number;
  actor: string;
  reason: string | null;
  now: Now;
  /** A form token's claim and the operator audit entry, committed with the change (the entry only if it happened). */
  also?: Alongside;
}

/**
 * Bulk actions over a filter (dashboard): the single actions' transitions, for
 * at most `limit` jobs of one queue (or every queue) and status, lowest id
 * first, each as ONE guarded statement. Every row gets last_event, its reason
 * and actor, so the audit trigger records each job with who and why.
 * - retry: status failed or cancelled;
 * - cancel: status pending;
 * - requeue: status running, only the jobs the reaper itself would take now,
 *   each doing what the reaper would (requeue, or fail for good where the
 *   job's budgets are spent: src/db/store/requeue.ts), each guarded by
 *   "unchanged since read"; with `force` (admin API only, with a reason) any
 *   running job, back to pending.
 */
export interface BulkFilter {
  kind: BulkKind;
  queue: string | undefined;
  /** retry: 'failed' or 'cancelled'; cancel: 'pending'; requeue: 'running'. */
  status: JobStatus;
  /**
   * requeue only: also take live leases (the admin API's `force`, which needs
   * a reason). The dashboard never sets it. Their workers' writes are refused
   * from then on, and the jobs may run twice.
   */
  force?: boolean;
}

export interface BulkParams extends BulkFilter {
  actor: string;
  reason: string | null;
  now: Now;
  /** The hard cap: at most this many jobs change. */
  limit: number;
  /** The reaper's rules (requeue follows them). */
  rules: RequeueRules;
  /** A form token's claim and the audit entry of the run (its `after` gets the count changed), in the same batch. */
  also?: Alongside;
}

/** What a bulk action would act on now, lowest id first, at most `limit` (the admin API's dry run). */
export interface BulkPreviewRow {
  id: number;
  queue_name: string;
  status: JobStatus;
  attempt_count: number;
  max_attempts: number;
  locked_by: string | null;
  lease_expires_at: number | null;
  updated_at: number;
  last_error: string | null;
  /** A requeue without force: what the reaper's take would do to this job (requeue, or fail for good). */
  requeue?: RequeueDone;
}

export type RequeueRules = QueueDefaults & ReapRules;

// ---------------------------------------------------------------------------
// The reaper and its hold (store/reaper, reaper-hold, maintenance-state)
// ---------------------------------------------------------------------------

export interface ReapCandidateParams {
  now: number;
  limit: number;
  defaults: QueueDefaults;
  rules: ReapRules;
  /**
   * Also read (at most `limit`) running jobs whose lease expired but are
   * still inside their grace: with an owner check, a gone owner's job is
   * taken without waiting out the grace.
   */
  inGrace?: boolean;
}

export interface ReapCandidateRow extends ReapCandidate {
  queueName: string;
  /** The attempt's last heartbeat (a hold's message names it). */
  lastHeartbeatAt: number | null;
  lockToken: string;
  lockedBy: string;
  /** The process that holds the lease, as far as the database knows it: what the owner check asks about. */
  lockedByInstance: string | null;
  ownerHost: string | null;
  ownerPid: number | null;
}

export interface ReapWrite {
  candidate: ReapCandidateRow;
  /** A hold is no write: jobsReapIfUnchanged leaves it out (reapLostLeases records it with jobsRecordHeld). */
  decision: Exclude<ReapDecision, { action: 'none' }>;
}

export interface ReaperHoldRecord {
  holdUntil: number;
  beganAt: number;
  /** How long the server's reaper did not tick, or how far the lease clock stepped forward; null: it just started. */
  gapMs: number | null;
  cause: string;
}

/** The last pass as stored (null fields: none recorded). */
export interface MaintenancePassRow {
  lastStartedAt: number | null;
  lastCompletedAt: number | null;
  passes: number;
}

/** What a watcher reads: the time, the last pass, and the jobs that would wait for a missing reaper. */
export interface MaintenanceWatchRow extends MaintenancePassRow {
  /** The time the figures were read at (the database's, or the fixed one). */
  now: number;
  /** The database's own clock, whatever `now` was. */
  databaseNow: number;
  runningJobs: number;
  /** Running jobs whose lease + grace (the queue's grace, else the default) has passed. */
  expiredLeases: number;
}

// ---------------------------------------------------------------------------
// Reads: jobs, events, queues, groups, stalls, activity, watches (store/read, queue-delete, group-counts, stalls, activity, watch)
// ---------------------------------------------------------------------------

/** An events row as stored. */
export interface StoredEventRecord {
  id: number;
  job_id: number;
  queue_name: string;
  type: string;
  from_status: string | null;
  to_status: string | null;
  reason: string | null;
  message: string | null;
  actor: string | null;
  worker_id: string | null;
  attempt: number | null;
  at: number;
}

/**
 * One entry of a job's timeline: a stored event, or one derived from the job
 * row (`derived`, no id): a job's `enqueued` and `completed` have no
 * event row since drizzle/0015.
 */
export interface EventRecord extends Omit<StoredEventRecord, 'id'> {
  id: number | null;
  derived: boolean;
}

export interface ListParams {
  queue?: string | undefined;
  status?: JobStatus | undefined;
  /** Exactly this job (still subject to the other filters). */
  id?: number | undefined;
  /** Jobs enqueued with this idempotency key (one per queue at most). */
  idempotencyKey?: string | undefined;
  /** Keyset cursor: the last id of the previous page. */
  after?: number | undefined;
  limit: number;
  order: 'asc' | 'desc';
  /** Clauses on payload or result, ANDed (src/core/job-filter.ts); a page then examines at most `scan` jobs and may come back short with `next` set. */
  where?: readonly WhereClause[] | undefined;
  /** With `where`: the most jobs one page examines (default WHERE_SCAN_WINDOW, src/core/job-filter.ts). */
  scan?: number | undefined;
}

/** What keeps a queue from being deleted (all zero and empty: nothing). */
export interface QueueBlockers {
  exists: boolean;
  pending: number;
  running: number;
  /** Completed, failed and cancelled jobs still kept (a purge deletes them). */
  finished: number;
  /** Schedules that enqueue to the queue, by name (at most 20). */
  schedules: string[];
}

export interface StalledJob {
  id: number;
  queueName: string;
  lockedBy: string | null;
  /** How long without progress. */
  stalledMs: number;
  stallMs: number;
}

export interface MinuteRow {
  queue: string;
  minuteAt: number;
  completed: number;
  failed: number;
  reaped: number;
  maxHeartbeatLagMs: number | null;
}

/** One group of a queue's jobs (its `group`) and its jobs now. */
export interface GroupCount {
  group: string;
  pending: number;
  running: number;
}

/** A queue's groups with pending or running jobs (store/group-counts): the busiest named, the rest summed. */
export interface QueueGroupCounts {
  queue: string;
  /** Groups with pending or running jobs. */
  groups: number;
  /** The busiest groups by pending + running, busiest first (ties by group key), at most the read's limit. */
  top: GroupCount[];
  /** Every other group with work: how many, and their pending and running jobs summed. */
  other: { groups: number; pending: number; running: number };
}

/** What a watcher needs to know of a job: its status, and its version when asked for. */
export interface JobWatchState {
  id: number;
  status: JobStatus;
  /** Only for the ids in `versionsOf`: the rest are judged by status alone. */
  version?: string;
}

// ---------------------------------------------------------------------------
// Schedules (store/schedules)
// ---------------------------------------------------------------------------

export interface ScheduleRecord {
  name: string;
  queue_name: string;
  cron: string | null;
  time_zone: string | null;
  interval_ms: number | null;
  payload: string;
  job_options: string;
  paused: boolean;
  next_run_at: number;
  last_run_at: number | null;
  last_job_id: number | null;
  catch_up: ScheduleCatchUp;
  catch_up_window_ms: number | null;
  overlap: ScheduleOverlap;
  skipped_missed: number;
  skipped_overlap: number;
  created_at: number;
  updated_at: number;
}

/** One skip decision of a pass (schedule_skips): a run of occurrences not run, and why. */
export interface ScheduleSkipRecord {
  id: number;
  schedule_name: string;
  at: number;
  reason: ScheduleSkipReason;
  count: number;
  /** True: count is a lower bound. */
  count_capped: boolean;
  first_occurrence_at: number;
  last_occurrence_at: number;
}

/** Occurrences a fire or a skip leaves behind: how many, the first and last, and whether the count is a lower bound. */
export interface SkippedOccurrences {
  reason: ScheduleSkipReason;
  count: number;
  capped: boolean;
  first: number;
  last: number;
}

/**
 * What firing an occurrence did: 'enqueued' (its job, new or made by an
 * earlier try of the same occurrence, and the schedule moved on), 'moved'
 * (another pass moved the schedule first: nothing written), or 'overlap'
 * (overlap 'skip' and an earlier occurrence's job is pending or running:
 * nothing written; the caller skips it).
 */
export type ScheduleFired = { outcome: 'enqueued'; job: JobRecord; deduplicated: boolean } | { outcome: 'moved' } | { outcome: 'overlap' };

/** Each job a schedule enqueues gets these. */
export interface ScheduleJobOptions {
  priority?: number;
  maxAttempts?: number;
  timeoutMs?: number;
}

export interface ScheduleFields {
  queue: string;
  cron: string | null;
  timeZone: string | null;
  intervalMs: number | null;
  payload: unknown;
  jobOptions: ScheduleJobOptions;
  paused: boolean;
  nextRunAt: number;
  /** Default 'latest'. */
  catchUp?: ScheduleCatchUp;
  /** catchUp 'all': how far back; null: the default window. */
  catchUpWindowMs?: number | null;
  /** Default 'allow'. */
  overlap?: ScheduleOverlap;
}

// ---------------------------------------------------------------------------
// Alert states and their notifications (store/alert-states)
// ---------------------------------------------------------------------------

export interface AlertStateChanges {
  /** Alerts that flipped to (or appeared as) firing. */
  started: AlertTransition[];
  /** Alerts that flipped to ok, or that were firing and are no longer evaluated. */
  cleared: AlertTransition[];
}

export interface AlertStateRow extends AlertTransition {
  notifiedState: Alert['state'];
  notifyUntil: number | null;
  notifyAttempts: number;
  lastNotifyError: string | null;
  updatedAt: number;
}

/** A notification this caller now holds: send it, then mark it delivered or failed with `leaseUntil`. */
export interface ClaimedNotification extends AlertTransition {
  /** The lease the claim set (notify_until): the guard of the mark that follows. */
  leaseUntil: number;
  /** Failed attempts so far for this row. */
  attempts: number;
}

export interface NotificationRef {
  queue: string;
  name: string;
  leaseUntil: number;
}

/** What one claimed notification's POST came to: delivered (with the state sent) or failed (with why and when to retry). */
export type NotificationOutcome = NotificationRef & ({ sent: Alert['state'] } | { error: string; retryAt: number });

// ---------------------------------------------------------------------------
// The operator audit and form tokens (store/audit, form-nonces)
// ---------------------------------------------------------------------------

/** Who acted: the same for every entry of one request. */
export interface AuditActor {
  /** The operator's name (dashboard), or the token's name or the request's `actor` (API). */
  actor: string;
  role: 'admin' | 'readonly' | 'worker' | 'none';
  /** The name of the token behind the request or session; null when the API is open. */
  credential: string | null;
  source: 'dashboard' | 'api';
  /** The client's address, as the throttle sees it (X-Forwarded-For only behind a trusted proxy). */
  client: string | null;
}

export interface AuditEntry {
  by: AuditActor;
  action: AuditAction;
  /** The queue acted on; SQL to read it in the batch (a job's queue). */
  queue?: string | SQL | null;
  jobId?: number | null;
  /** What was acted on, for people: "queue emails", "job 42", "dashboard". */
  target: string;
  /** JSON text, or SQL that yields it inside the batch. */
  before?: string | SQL | null;
  after?: string | SQL | null;
  reason?: string | null;
  now: Now;
}

export interface AuditRecord {
  id: number;
  at: number;
  actor: string;
  role: string;
  credential: string | null;
  source: 'dashboard' | 'api';
  action: AuditAction;
  queue_name: string | null;
  job_id: number | null;
  target: string;
  before: string | null;
  after: string | null;
  reason: string | null;
  client: string | null;
}

export interface AuditFilter {
  actor?: string;
  action?: AuditAction;
  queue?: string;
  /** Entries with a smaller id only (the next page of a newest-first list). */
  before?: number;
  limit: number;
}

/**
 * What commits with an operator's change: `formNonce` (the form token, whose
 * claim leads the batch: its refusal undoes everything), then the change,
 * then `audit`.
 */
export interface Alongside {
  formNonce?: FormNonce;
  audit?: AuditEntry;
}

export interface FormNonce {
  nonce: string;
  expiresAt: number;
}

// ---------------------------------------------------------------------------
// The dashboard's reads (store/dashboard-reads, suspects)
// ---------------------------------------------------------------------------

/** The queue defaults these reads fill in where a queue has no override. */
export type DashboardReadDefaults = Pick<QueueDefaults, 'leaseMs' | 'heartbeatMs' | 'graceMs' | 'maxLostAttempts'>;

export interface RunningJobView extends JobRecord {
  progressed_at: number | null;
  q_heartbeat_ms: number;
  /**
   * The interval this job's worker was told at its claim: the queue's, at
   * most a third of the job's own lease (lease_ms). Null when not running.
   */
  job_heartbeat_ms: number | null;
  q_grace_ms: number;
  q_max_lost_attempts: number;
  /** The queue's stall setting (null: not watched). */
  q_stall_ms: number | null;
  owner_last_seen_at: number | null;
  /** 1: the owner's id was taken over by a new process (a restart) since this claim. */
  owner_replaced: number | null;
  /**
   * The queue's suspect threshold (src/core/suspect.ts) and how it was made,
   * when the queue may have suspect jobs now (a live job past its lease);
   * null otherwise, or when the read was not given a time.
   */
  suspect_after_ms: number | null;
  suspect_basis: string | null;
  /** The reaper's hold (src/db/store/reaper-hold.ts), in force or not: decideReap judges it. */
  hold_until: number | null;
  hold_cause: string | null;
}

/** One job as its dashboard page reads it: with its queue's snooze limit, and whether any job waits for it. */
export interface JobPageView extends RunningJobView {
  /** The queue's maxSnoozes, or the default (DEFAULT_MAX_SNOOZES, src/core/snooze.ts). */
  q_max_snoozes: number;
  /** 1: some job waits for this one (an edge in job_dependencies names it); so its page reads the graph. */
  has_dependents: number;
}

/** A running job as the zombies page sees it, with whether it is on that page. */
export interface FlaggableJobView extends RunningJobView {
  /** 1: the zombies page lists it (expired lease, heartbeat over two intervals late, stalled, or suspect). */
  zombie_candidate: number;
}

/**
 * The time a read is made at, and the suspect thresholds to judge by: given
 * (a caller that shares one read of them across polls, suspectThresholds in
 * suspects.ts), or read first, a second statement.
 */
export interface SuspectAware {
  now: number;
  defaults: DashboardReadDefaults;
  suspects?: readonly QueueSuspectThreshold[] | undefined;
}

/** One queue's threshold, as the suspect statements (store/suspects) take it. */
export interface QueueSuspectThreshold {
  queue: string;
  afterMs: number;
  basis: string;
}

// ---------------------------------------------------------------------------
// Canary requeues (canary.ts)

/** A canary run as stored. */
export interface CanaryRunRecord extends CanaryOptions {
  id: number;
  queue: string;
  state: CanaryState;
  force: boolean;
  /** How many jobs it froze at its start. */
  selected: number;
  /** The last step taken (0: none yet). */
  step: number;
  stepStartedAt: number | null;
  /** The last event id when the step was taken (the watch reads events after it). */
  stepAfterEvent: number | null;
  requeued: number;
  failedForGood: number;
  skipped: number;
  stopReason: string | null;
  stopWhy: string | null;
  actor: string;
  /** Who started it, as the audit names them (the entries of its steps and its stop name them too). */
  startedBy: AuditActor;
  reason: string;
  createdAt: number;
  updatedAt: number;
  finishedAt: number | null;
}

/** One step of a run: how many jobs it took, and what the requeue did to them. */
export interface CanaryStepRecord {
  step: number;
  jobIds: number[];
  requeued: number;
  failed: number;
  /** The jobs the requeue rule refused, each with why. */
  skipped: { id: number; why: string }[];
}

/** A decision of a run, with its reason (canary_events). */
export interface CanaryEventRecord {
  at: number;
  type: 'started' | 'step' | 'stopped' | 'done' | 'cancelled';
  step: number;
  reason: string | null;
  message: string | null;
}

export interface CanaryRunStartParams extends CanaryOptions {
  queue: string;
  force: boolean;
  /** The jobs, in the order the run takes them (frozen: a restart neither loses nor doubles any). */
  jobIds: number[];
  by: AuditActor;
  reason: string;
  now: Now;
  /** A dashboard form's one-time token, claimed first in the same batch. */
  also?: Pick<Alongside, 'formNonce'>;
}

export interface CanaryStepTakeParams {
  runId: number;
  /** The step the caller saw last: the take is guarded by it, so two passes at once take the next step once. */
  fromStep: number;
  size: number;
  rules: RequeueRules;
  now: Now;
}

/** What a step's take did; taken false: another pass took it (or the run ended) first, and nothing changed. */
export interface CanaryStepTaken {
  taken: boolean;
  step: number;
  requeued: number[];
  failed: number[];
  skipped: { id: number; why: string }[];
}

export type CanaryHealth = CanaryStepHealth;

export type CanaryCancelOutcome = { ok: true; run: CanaryRunRecord } | { ok: false; reason: 'not_found' } | { ok: false; reason: 'conflict'; state: CanaryState };

/** A dead-letter queue's jobs (dead-letters.ts): all of them, or those from one queue, or these ids. */
export interface DeadLetterFilter {
  deadLetterQueue: string;
  fromQueue?: string | undefined;
  ids?: readonly number[] | undefined;
}

/** A dead letter as the redrive's dry run lists it. */
export interface DeadLetterRow {
  id: number;
  queue_name: string;
  dead_letter_queue: string;
  attempt_count: number;
  max_attempts: number;
  errored_attempts: number;
  lost_attempts: number;
  /** The failure that made it dead, and its reason (attempts_exhausted, non_retryable, ...). */
  last_event: string;
  last_event_reason: string | null;
  last_error: string | null;
  failed_at: number;
  dead_lettered_at: number;
}

/** A job a redrive sent back, and the queue it went back to (its own). */
export interface RedrivenJob {
  id: number;
  queue: string;
}

/** A dead-letter queue and one queue that feeds it (dead-letters.ts, deadLetterQueuesList). */
export interface DeadLetterQueueRow {
  deadLetterQueue: string;
  fromQueue: string;
  /** How many of that queue's jobs it lists now. */
  jobs: number;
  /** Whether that queue's setting names it today (false: it still lists jobs from before a change). */
  named: boolean;
}

export interface RedriveParams extends DeadLetterFilter {
  actor: string;
  reason: string | null;
  now: Now;
  /** The hard cap: at most this many jobs go back. */
  limit: number;
  /** A form token's claim and the audit entry of the run (its `after` gets the count changed), in the same batch. */
  also?: Alongside;
}

export interface SnoozeParams {
  workerId: string;
  id: number;
  lockToken: string;
  /** Due again this long from now. */
  delayMs: number;
  /** The limit when the queue sets none (DEFAULT_MAX_SNOOZES). */
  defaultMaxSnoozes: number;
  now: Now;
}

/** A snooze's answer: an owned write's, or refused at the queue's limit (nothing changed, the job is still the worker's). */
export type SnoozeOutcome = OwnedOutcome<JobRecord> | { id: number; ok: false; reason: 'snooze_limit'; snoozes: number; maxSnoozes: number };
// ---------------------------------------------------------------------------
// Jobs that wait for other jobs (store/dependencies)
// ---------------------------------------------------------------------------

/** One job of a flow (or a lone job with dependencies): its queue, what it waits for, and what a failed dependency does to it. */
export interface FlowJob extends NewJob {
  queue: string;
  /** Existing job ids, and `{ ref: i }` for the flow's own job i (which must come before this one). */
  dependsOn: readonly (number | { ref: number })[];
  dependencyPolicy?: DependencyPolicy | undefined;
}

export interface FlowInsertParams {
  jobs: readonly FlowJob[];
  actor: string | null;
  now: Now;
  defaults: QueueDefaults;
  maxQueues?: number;
  /** Unique per flow (random): names its jobs for the references between them (flow_ref). */
  nonce: string;
}

/** An existing job as a dependency: whether it is there, its status, and how many jobs wait for it already. */
export interface DependencyCandidate {
  id: number;
  status: JobStatus;
  dependents: number;
}

/** One edge of a job's graph, seen from the job: the other job, and where the edge stands. */
export interface DependencyLink {
  id: number;
  queue: string;
  status: JobStatus;
  state: DependencyState;
  /** The dependency's result (JSON text) when it completed; only in `dependencies`. */
  result: string | null;
  lastError: string | null;
  updatedAt: number;
  /** The other job's own policy for its dependencies ('fail' when it named none); null when it waits for nothing. */
  dependencyPolicy: DependencyPolicy | null;
  /** How many of the other job's own dependencies are still unmet: above 0, it waits (out of every claim's reach). */
  dependenciesUnmet: number;
  /** Set while the other job is held for a person (a dependency failed under 'hold', or a lost attempt under onLost 'hold'). */
  heldAt: number | null;
}

/** A job's dependencies and the jobs waiting for it, each list by id, at most `limit` each. */
export interface JobDependencyGraph {
  dependencies: DependencyLink[];
  dependents: DependencyLink[];
}

/** One step of a failure cascade (store/dependency-cascades): at most `rows` edges and `rows` jobs per statement. */
export interface CascadeStepParams {
  rows: number;
  now: Now;
  /** That job's cascade; absent: the one owed with fewest steps so far. */
  jobId?: number | undefined;
}

/** What one step did. */
export interface CascadeStep {
  /** The job whose failure (or retry) the cascade is. */
  jobId: number;
  action: 'fail' | 'retry' | 'retry_jobs';
  /** Edges the step settled (or set waiting again). */
  edges: number;
  /** Jobs it failed, held, counted a met dependency for, or put back to waiting. */
  changed: number[];
  /** Jobs it made claimable ('run' released them, or a retry did), by queue. */
  released: { id: number; queue: string }[];
  /** Nothing is left of this cascade. */
  done: boolean;
}

/** A cascade still owed, as the job page and GET /jobs/:id show it. */
export interface CascadeProgress {
  jobId: number;
  action: 'fail' | 'retry' | 'retry_jobs';
  steps: number;
  /** Edges and jobs settled so far. */
  settled: number;
  queuedAt: number;
}

// What-if tuning's evidence (store/tuning-evidence; replayed by src/core/what-if.ts).

export type { TuningEvidence, SilenceCount, TakenAttempt, WorkerBlock } from '../../core/what-if.ts';

/** One window of evidence, [sinceMs, untilMs): one queue's, or every queue's. */
export interface TuningEvidenceParams {
  queue?: string | undefined;
  sinceMs: number;
  untilMs: number;
}
