/**
 * The store port: everything the engine can do to jobs, queues, workers,
 * effects and counters, as one interface, `JobStore`, composed of the named
 * sections below. Routes, dashboard, CLI and maintenance take a `JobStore`
 * (createStore(db), in create-store.ts) instead of a database handle, so SQL
 * stays under src/db/store and a backend is anything that passes
 * test/store/conformance.
 *
 * Method names say entity, verb and guard (`jobsHeartbeatIfOwned`,
 * `jobCancelIfPending`), each with one params object, as River's driver
 * does. Each method is the store function of the same name in
 * src/db/store/*.ts without its `db` argument: the precondition,
 * postcondition and what "no row" means are documented there, once.
 *
 * The types the methods take and give are defined beside this file, in
 * port-types.ts (one family per section, as here), and re-exported from
 * here: outside src/db/store, this file is the one place to import a store
 * type from (scripts/check-deps.mjs checks it). The one value here is the
 * error a bulk insert throws part-way, which callers recognise.
 *
 * Time is a parameter (`now`: epoch ms, or DB_CLOCK for the database's own
 * clock) wherever it matters, so tests fix it instead of sleeping.
 *
 * This file imports types only, and only from src/core and port-types.ts:
 * the port must not depend on the API, dashboard, worker SDK or a runtime.
 */
import type { Alert, AlertThresholds } from '../../core/alerts.ts';
import type { Now } from '../../core/clock.ts';
import type { QueueDefaults } from '../../core/config.ts';
import type { JobRecord, JobSummaryRecord } from '../../core/job-record.ts';
import type {
  AlertStateChanges,
  AlertStateRow,
  Alongside,
  AuditActor,
  DeadLetterFilter,
  DeadLetterQueueRow,
  DeadLetterRow,
  RedrivenJob,
  RedriveParams,
  SnoozeOutcome,
  SnoozeParams,
  AuditEntry,
  AuditFilter,
  AuditRecord,
  BulkFilter,
  BulkParams,
  BulkPreviewRow,
  CanaryCancelOutcome,
  CanaryEventRecord,
  CanaryHealth,
  CanaryRunRecord,
  CanaryRunStartParams,
  CanaryStepRecord,
  CanaryStepTakeParams,
  CanaryStepTaken,
  CheckpointParams,
  ClaimParams,
  Claimed,
  ClaimedWithRateWait,
  ClaimedNotification,
  CompleteParams,
  DashboardReadDefaults,
  CascadeProgress,
  CascadeStep,
  CascadeStepParams,
  DependencyCandidate,
  FlowInsertParams,
  JobDependencyGraph,
  JobPageView,
  EffectFinishOutcome,
  EffectRow,
  EffectStartOutcome,
  HeldCount,
  StepsOutcome,
  EnqueueParams,
  Enqueued,
  EventRecord,
  FailParams,
  FlaggableJobView,
  HeartbeatParams,
  JobWatchState,
  ListParams,
  MaintenanceWatchRow,
  MetricsSnapshot,
  MinuteRow,
  NextClaimParams,
  NotificationOutcome,
  NotificationRef,
  OperatorOutcome,
  OperatorParams,
  OwnedOutcome,
  QueueBlockers,
  QueueGroupCounts,
  QueueHealth,
  QueueSettingsPatch,
  QueueSuspectThreshold,
  ReapCandidateParams,
  ReapCandidateRow,
  ReapWrite,
  ReaperHoldRecord,
  ReleaseParams,
  RequeueDone,
  RequeueRefusal,
  RequeueRules,
  RunningJobView,
  ScheduleFields,
  ScheduleFired,
  ScheduleRecord,
  ScheduleSkipRecord,
  SkippedOccurrences,
  StalledJob,
  SuspectAware,
  TuningEvidence,
  TuningEvidenceParams,
  WorkerBeat,
  WorkerRecord,
} from './port-types.ts';

export type * from './port-types.ts';

/** What a worker does to the jobs it claims: the worker protocol's statements (store/claim, lease, finish). */
export interface WorkerJobWrites {
  /** — -> pending, many in one batch (all or none); an idempotency key already in the queue dedups. */
  jobsInsert(p: EnqueueParams): Promise<Enqueued[]>;
  /** pending -> running, up to `limit`, in claim order; registers the worker. With `claimId` sent again: the jobs that id already took, and nothing more. */
  jobsClaimPending(p: ClaimParams): Promise<Claimed[]>;
  /** The same claim, and in the same round trip whether the queue's rate limit now holds claims back (what a worker's claim answers). */
  jobsClaimPendingWithRateWait(p: ClaimParams): Promise<ClaimedWithRateWait>;
  /** How many jobs a claim on the queue could take now, at most `cap`: a read with the claim's conditions (what waiting claims look at). */
  queueClaimableCount(p: { queue: string; cap: number; now: Now }): Promise<number>;
  /** running -> running under the owner's guard: renew (heartbeat), or push once (`leaseMs`: extend). */
  jobsHeartbeatIfOwned(p: HeartbeatParams): Promise<OwnedOutcome[]>;
  jobCheckpointIfOwned(p: CheckpointParams): Promise<OwnedOutcome[]>;
  /** running -> completed under the owner's guard; `full` returns whole rows. */
  jobsCompleteIfOwned(p: CompleteParams & { full: true }): Promise<OwnedOutcome<JobRecord>[]>;
  jobsCompleteIfOwned(p: CompleteParams): Promise<OwnedOutcome[]>;
  /** Completions, then a claim of the freed slots, in one transaction. A completion sent again under its token is answered as stored (`repeated`). */
  jobsCompleteThenClaim(
    p: CompleteParams & { claim: NextClaimParams; instanceId?: string | undefined; defaults: QueueDefaults },
  ): Promise<{ outcomes: OwnedOutcome[]; claimed: Claimed[] }>;
  /** running -> pending (retry after backoff) or failed, under the owner's guard. */
  jobFailIfOwned(p: FailParams): Promise<OwnedOutcome<JobRecord>[]>;
  /** running -> pending now, the attempt given back (shutdown), under the owner's guard. */
  jobsReleaseIfOwned(p: ReleaseParams & { full: true }): Promise<OwnedOutcome<JobRecord>[]>;
  jobsReleaseIfOwned(p: ReleaseParams): Promise<OwnedOutcome[]>;
}

/** The effects ledger behind the SDK's `once(key, fn)` (store/effects). */
export interface EffectWrites {
  effectStartIfOwned(p: { jobId: number; key: string; lockToken: string; workerId: string; now: Now }): Promise<EffectStartOutcome>;
  /** `checkpoint`: saved with the result in the same transaction (step()). */
  effectFinishIfOwned(p: { jobId: number; key: string; lockToken: string; workerId: string; result: string; now: Now; checkpoint?: string | undefined }): Promise<EffectFinishOutcome>;
  /** The job's steps (step()), under the owner's guard; each uncertain one recorded as a `step_uncertain` event. */
  stepsListIfOwned(p: { jobId: number; lockToken: string; workerId: string; now: Now }): Promise<StepsOutcome>;
  /** A duplicate the handler found downstream (`ctx.reportDuplicate`): an event and its counter, under the owner's guard (store/duplicates). */
  duplicateReportIfOwned(p: { jobId: number; key: string; lockToken: string; workerId: string; now: Now }): Promise<OwnedOutcome<{ id: number }>>;
}

/** What an operator does (admin API, dashboard, CLI), single and bulk (store/operator, requeue). */
export interface OperatorActions {
  /** pending -> cancelled. */
  jobCancelIfPending(p: OperatorParams): Promise<OperatorOutcome>;
  /** failed or cancelled -> pending now, with a fresh attempt budget. */
  jobRetryIfFinishedUnsuccessfully(p: OperatorParams): Promise<OperatorOutcome>;
  /** running -> what the reaper would do now (pending, or failed for good), else nothing and why; any running job back to pending with `force`. */
  jobRequeueIfReaperWould(p: { id: number; actor: string; reason: string | null; now: Now; force: boolean; rules: RequeueRules }): Promise<OperatorOutcome | RequeueRefusal>;
  /** What that requeue would do now (its dry run), changing nothing; or the refusal it would answer. */
  jobRequeuePlan(p: { id: number; now: Now; force: boolean; rules: RequeueRules }): Promise<{ ok: true; requeue: RequeueDone } | Exclude<OperatorOutcome, { ok: true }>>;
  /** A held job (onLost 'hold', its lost attempt waiting for a person) -> pending, due now: it runs again (store/held). */
  jobReleaseIfHeld(p: OperatorParams): Promise<OperatorOutcome>;
  /** A held job -> completed by hand, with the operator's result. */
  jobCompleteIfHeld(p: OperatorParams & { result?: unknown }): Promise<OperatorOutcome>;
  /** A held job -> failed for good. */
  jobFailIfHeld(p: OperatorParams): Promise<OperatorOutcome>;
  /** Held jobs, longest held first, of one queue or all. */
  jobsHeldList(p: { queue?: string | undefined; limit: number }): Promise<JobRecord[]>;
  /** Held jobs per queue (queues holding none are left out). */
  jobsHeldCounts(): Promise<HeldCount[]>;
  /** A job's effects ledger (what its attempts started and finished). */
  effectsForJob(p: { jobId: number }): Promise<EffectRow[]>;
  /** How many jobs a bulk action would match, counted up to `max`. */
  jobsBulkMatching(p: BulkFilter & { now: Now; max: number; rules: RequeueRules }): Promise<number>;
  /** What a bulk action would act on now (its dry run), lowest id first. */
  jobsBulkPreview(p: BulkFilter & { now: Now; limit: number; rules: RequeueRules }): Promise<BulkPreviewRow[]>;
  /** Runs a bulk action; the ids it changed, ascending. */
  jobsBulkAct(p: BulkParams): Promise<number[]>;
}

/** Canary requeues: a bulk requeue taken in watched steps (store/canary; its rules in src/core/canary.ts). */
export interface CanaryStore {
  /** The jobs a run would freeze now, lowest id first: with force every running job of the queue, else those the reaper would take now. */
  canaryRunSelect(p: { queue: string; force: boolean; now: Now; rules: RequeueRules; limit: number }): Promise<number[]>;
  /** — -> watching, with its frozen jobs, its `started` event and the audit entry; no step taken yet. */
  canaryRunStart(p: CanaryRunStartParams): Promise<CanaryRunRecord>;
  canaryRunRead(p: { id: number }): Promise<{ run: CanaryRunRecord & { remaining: number }; steps: CanaryStepRecord[]; events: CanaryEventRecord[] } | null>;
  /** The runs still watching, oldest first. */
  canaryRunsActive(p: { limit: number }): Promise<(CanaryRunRecord & { remaining: number })[]>;
  /** The latest runs, newest first. */
  canaryRunsList(p: { limit: number }): Promise<(CanaryRunRecord & { remaining: number })[]>;
  /** The next step, guarded by `fromStep` (taken once however many passes run at once); its jobs under the requeue rule. */
  canaryStepTake(p: CanaryStepTakeParams): Promise<CanaryStepTaken>;
  /** What the watch reads of a step's requeued jobs: their events after `afterEvent`, and their rows now. */
  canaryStepHealth(p: { runId: number; step: number; afterEvent: number; now: Now }): Promise<CanaryHealth>;
  /** watching (at step `step`) -> done or stopped, with the reason as an event and an audit entry; false: it moved on first. */
  canaryRunFinish(p: { runId: number; step: number; state: 'done' | 'stopped'; reason: string; why: string; now: Now }): Promise<boolean>;
  /** watching -> cancelled by an operator. */
  canaryRunCancel(p: { runId: number; by: AuditActor; reason: string; now: Now; also?: Pick<Alongside, 'formNonce'> }): Promise<CanaryCancelOutcome>;
}

/** The reaper's reads and writes, and retention (store/reaper, activity). */
export interface MaintenanceStore {
  /** Running jobs past lease + grace or past their deadline: those to take, those to defer, and (with `inGrace`) expired leases still inside their grace, for the owner check. */
  jobsGetReapCandidates(p: ReapCandidateParams): Promise<{ take: ReapCandidateRow[]; defer: ReapCandidateRow[]; inGrace?: ReapCandidateRow[] }>;
  /** The decisions, each guarded by the token and expiry read; which ids were taken back. */
  jobsReapIfUnchanged(p: { now: number; writes: readonly ReapWrite[]; defaults: QueueDefaults }): Promise<Set<number>>;
  /** A `reap_held` event per candidate (during a hold after a server's gap); nothing else changes. */
  jobsRecordHeld(p: { now: number; candidates: readonly ReapCandidateRow[]; why: string }): Promise<void>;
  /** Counts the owner check's answers the pass refused, by reason (store/owner-check-counts: leasehold_owner_check_refused_total). */
  ownerCheckRefusalsAdd(p: { byReason: Readonly<Record<string, number>> }): Promise<void>;
  /** Begins (or extends: the later end wins) the reaper's hold after a server's gap; the hold in force afterwards. */
  reaperHoldBegin(p: { now: Now; holdMs: number; gapMs: number | null; cause: string }): Promise<ReaperHoldRecord>;
  /** The reaper's hold in force at `now`, or null. */
  reaperHoldRead(p: { now: Now }): Promise<(ReaperHoldRecord & { now: number }) | null>;
  /** The latest time the database recorded of itself (sightings, passes, the hold's start): later than now after the clock stepped back (store/clock-step). */
  clockLatestRecorded(p: { now: Now }): Promise<{ latest: number | null; now: number }>;
  /** Up to `limit` running jobs renewed later than `now` moved onto the clock as it is now (their lease counted from now); how many moved. */
  jobsRebaseAfterStepBack(p: { now: number; limit: number }): Promise<number>;
  /** Once every job is rebased: sightings, pass times and the hold moved back to `now`. */
  clockStepBackSettle(p: { now: number }): Promise<void>;
}

/** Queues and workers (store/read, group-counts, queue-settings, queue-delete, lost-claims, workers, worker-jobs). */
export interface QueueAndWorkerStore {
  queuesHealth(p: { now: Now; defaults: QueueDefaults; queue?: string }): Promise<QueueHealth[]>;
  /** Each queue with groups (or just `queue`): its groups with work, the `limit` busiest by pending + running (ties by key) and the rest summed; queues without groups left out. */
  queuesGroupCounts(p: { limit: number; queue?: string | undefined }): Promise<QueueGroupCounts[]>;
  /** Creates the queue if needed and sets the given overrides (null: back to the default). */
  queueUpsertSettings(p: { queue: string; patch: QueueSettingsPatch; now: Now; also?: Alongside }): Promise<void>;
  queueAlertThresholds(p: { queue: string }): Promise<{ name: string; alertOverrides: Partial<AlertThresholds> } | undefined>;
  queueSetAlertThresholds(p: { queue: string; thresholds: Partial<AlertThresholds>; now: Now; also?: Alongside }): Promise<void>;
  /** The payload or result paths the queue keeps an index for (store/indexed-fields), oldest first. */
  queueIndexedFields(p: { queue: string }): Promise<string[]>;
  /** Replaces them, making the queue if needed: indexes for new fields made, for fields `was` listed and `fields` does not dropped, audited, one batch. */
  queueSetIndexedFields(p: { queue: string; fields: readonly string[]; was: readonly string[]; now: Now; also?: Alongside }): Promise<void>;
  /** What keeps a queue from being deleted: its jobs by status, the schedules that enqueue to it. */
  queueBlockers(p: { queue: string }): Promise<QueueBlockers>;
  /** Deletes up to `limit` of the queue's finished jobs (with their events and effects); how many went. */
  queueFinishedJobsPurge(p: { queue: string; limit: number }): Promise<number>;
  /** Deletes the queue's row and bookkeeping if it holds no job and no schedule enqueues to it; false: it was not deleted. */
  queueDeleteIfUnused(p: { queue: string; also?: Alongside }): Promise<boolean>;
  /** A worker's own liveness beat; the jobs of the claims it says it lost go back to the queue in the same batch. */
  workerBeat(p: WorkerBeat): Promise<void>;
  /** Workers seen since `sinceMs`, most recent first. */
  workersList(p: { sinceMs: number; limit: number }): Promise<WorkerRecord[]>;
  /** Running jobs per worker id, and how many of them have an expired lease. */
  workersHeldJobs(p: { workerIds: readonly string[]; now: Now }): Promise<Map<string, { held: number; expired: number }>>;
}

/** Reads the API and dashboard need (store/read, stalls, activity, metrics). */
export interface StoreReads {
  /** The database's clock, in epoch ms. */
  readNow(): Promise<number>;
  jobGet(p: { id: number }): Promise<JobRecord | undefined>;
  jobsList(p: ListParams): Promise<{ jobs: JobRecord[]; next: number | null }>;
  eventsForJob(p: { jobId: number; limit: number }): Promise<{ events: EventRecord[]; olderNotShown: number }>;
  jobsListStalled(p: { now: number; limit: number }): Promise<StalledJob[]>;
  queueMinutesSince(p: { sinceMinuteAt: number }): Promise<MinuteRow[]>;
  metricsSnapshot(p: { now: Now; config: QueueDefaults & { workerAliveMs: number } }): Promise<MetricsSnapshot>;
  /** For waiting clients (store/watch): each named job's status from an index, and its version where asked. */
  jobsWatchStates(p: { ids: readonly number[]; versionsOf?: readonly number[] }): Promise<JobWatchState[]>;
  /** The named jobs, whole and in order, as many as fit in maxBytes (always the first). */
  jobsGetWithinBytes(p: { ids: readonly number[]; maxBytes: number }): Promise<(JobRecord & { version: string })[]>;
  /** What-if tuning's evidence for a window: silences of attempts owners ended, reaped attempts with what their owners did since, workers' blocks. */
  tuningEvidenceRead(p: TuningEvidenceParams): Promise<TuningEvidence>;
}

/** Alert states and their webhook notifications (store/alert-states). */
export interface AlertStore {
  alertEvaluationClaimIfDue(p: { now: number; everyMs: number }): Promise<boolean>;
  alertStatesRecord(p: { now: number; alerts: readonly Alert[] }): Promise<AlertStateChanges>;
  alertStatesList(): Promise<AlertStateRow[]>;
  alertNotificationsClaimDue(p: { now: number; leaseMs: number; limit: number }): Promise<ClaimedNotification[]>;
  /** True when this caller still held the notification. */
  alertNotificationMarkDeliveredIfHeld(p: NotificationRef & { sent: Alert['state'] }): Promise<boolean>;
  alertNotificationMarkFailedIfHeld(p: NotificationRef & { error: string; retryAt: number }): Promise<boolean>;
}

/** Dashboard logouts (store/sessions). */
export interface SessionStore {
  /** Also: the logout's form token and audit entry, in the same batch. */
  sessionRevoke(p: { sid: string; expiresAt: number; now: number; also?: Alongside }): Promise<void>;
  sessionIsRevoked(p: { sid: string }): Promise<boolean>;
}

/** The operator audit, read (store/audit). Entries are written with the change they describe: a write's `also.audit`. */
export interface AuditReads {
  /** Newest first, at most `limit`, filtered; `next` is the `before` of the next page (null on the last). */
  auditList(p: AuditFilter): Promise<{ entries: AuditRecord[]; next: number | null }>;
}

/** Jobs as the API's list and bulk enqueue answer them: without the JSON they carry (store/read, enqueue). */
export interface JobSummaries {
  /** jobsList's page, each job with sizes and previews instead of payload, result, progress and checkpoint. */
  jobSummariesList(p: ListParams): Promise<{ jobs: JobSummaryRecord[]; next: number | null }>;
  /** jobsInsert, each job read back with a bulk answer's columns only (no payload echoed). */
  jobsInsertSummaries(p: Omit<EnqueueParams, 'columns'>): Promise<Enqueued[]>;
}

/** Recurring jobs: the /schedules API, and the two steps of firing an occurrence (store/schedules). */
export interface ScheduleStore {
  /** Every schedule, by name. */
  schedulesList(): Promise<ScheduleRecord[]>;
  scheduleGet(p: { name: string }): Promise<ScheduleRecord | undefined>;
  /** A new schedule, or undefined when one has that name already (nothing changed). */
  scheduleCreate(p: ScheduleFields & { name: string; now: Now }): Promise<ScheduleRecord | undefined>;
  /** Replaces a schedule's fields (the caller merged the patch); undefined: no such schedule. */
  scheduleReplace(p: ScheduleFields & { name: string; now: Now }): Promise<ScheduleRecord | undefined>;
  /** False: no such schedule. */
  scheduleDelete(p: { name: string }): Promise<boolean>;
  /** Unpaused schedules whose next occurrence is due, oldest first, at most `limit`. */
  schedulesDue(p: { now: number; limit: number }): Promise<ScheduleRecord[]>;
  /** Step 1: the occurrence's job, under its occurrence key (or the job an earlier pass made for it). */
  scheduleEnqueueOccurrence(p: { schedule: ScheduleRecord; occurrence: number; now: Now; defaults: QueueDefaults; maxQueues?: number }): Promise<Enqueued>;
  /** Step 2: next_run_at moves on only if it is still what the pass read; false: another pass moved it. */
  scheduleAdvanceIfUnchanged(p: { name: string; readNextRunAt: number; occurrence: number; nextRunAt: number; jobId: number; now: Now }): Promise<boolean>;
  /** An occurrence's job, the skip of the missed ones before it, and the move, in one batch guarded by next_run_at (and the overlap policy). */
  scheduleFireIfUnchanged(p: { schedule: ScheduleRecord; occurrence: number; nextRunAt: number; skipped?: SkippedOccurrences; now: Now; defaults: QueueDefaults; maxQueues?: number }): Promise<ScheduleFired>;
  /** Occurrences skipped (their row, the counter, the move), guarded by next_run_at; false: another pass moved it. */
  scheduleSkipIfUnchanged(p: { name: string; readNextRunAt: number; nextRunAt: number; skipped: readonly SkippedOccurrences[]; now: Now }): Promise<boolean>;
  /** Skips, newest first: one schedule's, or every schedule's. */
  scheduleSkipsList(p: { name?: string; limit: number }): Promise<ScheduleSkipRecord[]>;
  /** The earliest next run of an unpaused schedule (the schedule timer's wake-up); null: none. */
  schedulesNextDueAt(): Promise<number | null>;
}

/** The maintenance pass's other services: activity sampling, retention, webhook outcomes (store/activity, retention, alert-states). */
export interface MaintenanceServices {
  /** Each queue's worst heartbeat lag folded into this minute's sample; the queues sampled. */
  queueMinutesSampleHeartbeatLag(p: { now: number }): Promise<{ queue_name: string }[]>;
  /** Retention in one batch: finished jobs, stale workers, old activity, old audit entries and form tokens; the job ids deleted. */
  retentionPrune(p: { now: number; limit: number; defaults: QueueDefaults; forgetWorkersAfterMs: number; auditRetentionMs: number }): Promise<number[]>;
  /** Every webhook outcome of a pass in one batch, each under its own hold; per outcome, whether it was still held. */
  alertNotificationsMarkIfHeld(p: { outcomes: readonly NotificationOutcome[] }): Promise<boolean[]>;
}

/**
 * Audit entries of their own (a login, a failed one) and one-time form tokens
 * (store/audit, form-nonces). An action's own entry and its form token commit
 * in the action's batch instead: its `also: { audit, formNonce }`.
 */
export interface AuditAndFormWrites {
  auditInsert(p: AuditEntry): Promise<void>;
  /** A failed login: one entry per client per `windowMs`, counting its attempts (store/audit, auditLoginFailed). */
  auditLoginFailed(p: { by: AuditActor; reason: string; windowMs: number; now: Now }): Promise<void>;
  /** Whether a form token was used already (one primary-key lookup), to refuse a re-sent form before any work. */
  formNonceUsed(p: { nonce: string }): Promise<boolean>;
  /** Whether an error a write threw is a form token's second use (its claim's primary key), as this backend words it. */
  isFormNonceReplay(p: { error: unknown }): boolean;
}

/** Running jobs with what the reaper's decision needs, and the suspect thresholds (store/dashboard-reads, suspects). */
export interface DashboardReads {
  /** The zombies page: expired lease, heartbeat over two intervals late, stalled, or suspect; oldest expiry first. */
  jobsListZombieCandidates(p: SuspectAware & { limit: number }): Promise<RunningJobView[]>;
  /** The running jobs among `ids` (a page of the jobs list), each with whether the zombies page lists it. */
  jobsRunningFlagged(p: SuspectAware & { ids: readonly number[] }): Promise<FlaggableJobView[]>;
  /** One job, in any status, with its queue's settings (its snooze limit too), its owner's liveness and whether a job waits for it (the job page); with `now`, its suspect threshold. */
  jobGetWithSettings(p: { id: number; defaults: DashboardReadDefaults; now?: number; suspects?: readonly QueueSuspectThreshold[] }): Promise<JobPageView | undefined>;
  /**
   * The suspect thresholds of the queues that may have suspect jobs now (a
   * live job past its lease): what the three reads above take as `suspects`
   * (store/suspects), so polls can share one read of the runtime sample.
   */
  suspectThresholds(p: { now: number; defaults: DashboardReadDefaults }): Promise<QueueSuspectThreshold[]>;
}

/** Whether a reaper still runs: the last completed maintenance pass, and what waits for it (store/maintenance-state). */
export interface MaintenanceStateStore {
  /** Written by each pass that completed, as its last step. */
  maintenancePassRecord(p: { startedAt: number; now: Now }): Promise<void>;
  /** The last pass, running jobs and those past lease + grace, read at `now` (one batch). */
  maintenanceWatch(p: { now: Now; defaults: Pick<QueueDefaults, 'graceMs'> }): Promise<MaintenanceWatchRow>;
}

/** Jobs that wait for other jobs (store/dependencies, store/dependency-cascades). */
export interface DependencyStore {
  /** — -> pending, each waiting for its dependencies: a flow (or one job), all or none, in input order. */
  jobsInsertFlow(p: FlowInsertParams): Promise<JobRecord[]>;
  /** The ids among `ids` that exist, with their status and how many jobs wait for each. */
  jobsDependencyCandidates(p: { ids: readonly number[] }): Promise<DependencyCandidate[]>;
  /** A job's dependencies (a completed one's result) and the jobs waiting for it. */
  jobDependencyGraph(p: { id: number; limit: number }): Promise<JobDependencyGraph>;
  /** One bounded step of a failure cascade still owed (a failed, cancelled or retried job's dependents); undefined when none is. */
  dependencyCascadeStep(p: CascadeStepParams): Promise<CascadeStep | undefined>;
  /** The cascade still owed for this job's failure or retry, if any. */
  dependencyCascadeOf(p: { jobId: number }): Promise<CascadeProgress | undefined>;
  /** How many cascades are owed. */
  dependencyCascadesOwed(): Promise<number>;
}

/** The whole store: one backend (libSQL, D1, Turso) behind one contract, section by section. */
/** Dead letters (store/dead-letters) and snooze (store/snooze). */
export interface DeadLetterAndSnoozeStore {
  /** A dead-letter queue's jobs, lowest id first (the redrive's dry run); `matching` counted up to `max`. */
  jobsDeadLetterList(p: DeadLetterFilter & { limit: number; max: number }): Promise<{ matching: number; jobs: DeadLetterRow[] }>;
  /** Each dead-letter queue and the queues that feed it (named by their setting, or still listed), with how many it lists; at most `limit` pairs. */
  deadLetterQueuesList(p: { limit: number }): Promise<DeadLetterQueueRow[]>;
  /** failed and dead-lettered -> pending in their own queue, fresh attempts; the jobs moved (id, queue), ascending. */
  jobsRedrive(p: RedriveParams): Promise<RedrivenJob[]>;
  /** running -> pending after delayMs, the attempt given back, snoozes + 1; refused at the queue's maxSnoozes. */
  jobSnoozeIfOwned(p: SnoozeParams): Promise<SnoozeOutcome>;
}

export interface JobStore
  extends WorkerJobWrites,
    DeadLetterAndSnoozeStore,
    EffectWrites,
    OperatorActions,
    CanaryStore,
    MaintenanceStore,
    MaintenanceStateStore,
    MaintenanceServices,
    QueueAndWorkerStore,
    StoreReads,
    JobSummaries,
    ScheduleStore,
    AlertStore,
    SessionStore,
    AuditReads,
    AuditAndFormWrites,
    DashboardReads,
    DependencyStore {}

/**
 * Thrown by jobsInsert (and jobsInsertSummaries) when storage failed after
 * some chunks of a bulk were stored: the fault is the cause (still a 503
 * naming it), `note` says how far the bulk got. Part of the contract: every
 * backend throws this, and the API recognises it.
 */
export class EnqueuePartlyStored extends Error {
  override readonly name = 'EnqueuePartlyStored';
  constructor(
    readonly stored: number,
    readonly total: number,
    cause: unknown,
  ) {
    super(`the first ${stored} of ${total} jobs were stored before the failure`, { cause });
  }
  /** For the client: what is stored, and how to finish safely. */
  get note(): string {
    return `${this.message} (jobs[0] to jobs[${this.stored - 1}]); send the bulk again with the same idempotency keys to store only the rest`;
  }
}
