/**
 * Response schemas of the admin and observability views: queues, workers,
 * schedules, metrics, alerts, tuning, the reaper's report and bulk actions.
 * Written like src/api/schemas.ts: `fields<T>()` against the type the route
 * answers (its view function's return type, or a wire type below that the
 * route's answer `satisfies`), so a field added to a view breaks the build
 * until its schema follows, and every object has its properties: a generated
 * client gets typed models, not dictionaries.
 * test/api/openapi-answers.test.ts checks real answers against them.
 */
import type { Alert, AlertName, AlertThresholds } from '../core/alerts.ts';
import { ALERT_THRESHOLD_LIMITS } from '../core/alert-thresholds.ts';
import type { QueueDefaults } from '../core/config.ts';
import type { MaintenanceVerdict } from '../core/maintenance-watch.ts';
import type { MetricsSnapshot, QueueMetrics, RateLimit, WindowCount } from '../core/metrics-snapshot.ts';
import { HISTOGRAM_NAMES, type Histogram } from '../core/histograms.ts';
import { REAP_REASONS } from '../core/reaper.ts';
import type { QueueTuning, TuningFlag } from '../core/tuning.ts';
import type { LeaseSettings, Spread, WhatIfOutcome, WhatIfReport } from '../core/what-if.ts';
import { BULK_KINDS, type BulkKind } from '../core/bulk-kind.ts';
import { CANARY_STATES, type CanaryOptions, type CanaryState } from '../core/canary.ts';
import { JOB_STATUSES, RATE_LIMIT_MODES, SCHEDULE_CATCH_UP, SCHEDULE_OVERLAP, type JobStatus } from '../core/wire.ts';
import type { MaintenancePassReport } from '../maintenance/pass.ts';
import type { AlertPassReport } from '../maintenance/alerts.ts';
import type { SchedulesReport } from '../maintenance/schedules.ts';
import type { CascadesReport } from '../maintenance/cascades.ts';
import type { CanaryReport } from '../maintenance/canary.ts';
import type { QueueView } from './queue-view.ts';
import type { requeueWire } from './outcomes.ts';
import type { WorkerView } from './worker-view.ts';
import type { ScheduleView } from './schedule-view.ts';
import { anyJson, array, boolean, described, fields, integer, nullable, number, oneOf, sameFor, string, time, words, constant } from './schema-parts.ts';
import type { JsonSchema } from '../core/validate.ts';
import type { ScheduleJobOptions } from '../db/store/port.ts';

/** GET /metrics (JSON): the snapshot's public part, with the maintenance verdict. */
export interface MetricsWire {
  at: string;
  now: number;
  windows: MetricsSnapshot['windows'];
  workers: MetricsSnapshot['workers'];
  maintenance: MetricsSnapshot['maintenance'] & MaintenanceVerdict;
  queues: QueueMetrics[];
}

export interface AlertsWire {
  at: string;
  firing: number;
  thresholds: AlertThresholds;
  alerts: Alert[];
}

export interface TuningWire {
  at: string;
  queues: QueueTuning[];
}

/** GET /queues/:queue/tuning/what-if: one queue's evidence replayed against today's settings and a candidate. */
export type WhatIfWire = WhatIfReport & { at: string };

export interface WorkersWire {
  at: string;
  workerAliveMs: number;
  alive: number;
  workers: WorkerView[];
}

export type ReaperWire = Omit<MaintenancePassReport, 'at' | 'hold'> & { at: string | null; hold?: { until: string | null; why: string } };

type RequeueWire = ReturnType<typeof requeueWire>;

/** A canary requeue (src/core/canary.ts), as GET /canary/:id answers it. */
export interface CanaryRunWire extends CanaryOptions {
  id: string;
  queue: string;
  state: CanaryState;
  force: boolean;
  selected: number;
  step: number;
  stepStartedAt: string | null;
  watchUntil: string | null;
  requeued: number;
  failedForGood: number;
  skipped: number;
  remaining: number;
  stopReason: string | null;
  stopWhy: string | null;
  actor: string;
  reason: string;
  createdAt: string;
  finishedAt: string | null;
  steps?: { step: number; jobIds: string[]; requeued: number; failed: number; skipped: { id: string; why: string }[] }[];
  events?: { at: string; type: string; step: number; reason: string | null; message: string | null }[];
}

/** A canary start's dry run. */
export interface CanaryPlanWire {
  dryRun: true;
  queue: string;
  force: boolean;
  selected: number;
  jobIds: string[];
  steps: number[];
  hold: { until: string | null; why: string } | null;
}

/** What a bulk action matched, on a dry run and a real one alike. */
export interface BulkMatchWire {
  queue: string;
  action: BulkKind;
  status: JobStatus;
  force: boolean;
  matching: number;
  matchingCapped: boolean;
  cap: number;
  limit: number;
  /** A requeue without force: the server's hold, or null. */
  hold?: { until: string | null; why: string } | null;
}

export interface BulkPreviewJobWire {
  id: string;
  queue: string;
  status: string;
  attempt: number;
  maxAttempts: number;
  lockedBy: string | null;
  leaseExpiresAt: string | null;
  updatedAt: string | null;
  lastError: string | null;
  requeue?: RequeueWire;
}

export type BulkDryRunWire = BulkMatchWire & { dryRun: true; wouldChange: number; jobs: BulkPreviewJobWire[] };
export type BulkDoneWire = BulkMatchWire & { dryRun: false; changed: number; ids: string[] };

const ms = (description?: string) => integer(description ? `${description} (ms)` : 'ms');
const epochMs = (description: string) => integer(`${description} (epoch ms)`);
const statusCounts = fields<Record<JobStatus, number>>(sameFor(JOB_STATUSES, integer()), { description: 'jobs per status' });

const rateLimitSchema = fields<RateLimit>({ max: integer('claims per window'), windowMs: ms('the window') });

const queueDefaultsProps: { [K in keyof QueueDefaults]-?: JsonSchema } = {
  leaseMs: ms(),
  heartbeatMs: ms(),
  graceMs: ms(),
  maxAttempts: integer(),
  maxLostAttempts: integer(),
  backoffBaseMs: ms(),
  backoffMaxMs: ms(),
  retentionMs: ms(),
  timeoutMs: ms('hard time limit per attempt'),
};
const queueLimitsProps = {
  onLost: { type: 'string', enum: ['retry', 'hold'], description: "what a lost attempt leads to: 'retry' (run again) or 'hold' (wait for a person); a job's own onLost wins" } as JsonSchema,
  stallMs: nullable(ms('stalled past this without progress; null: not watched')), maxRunning: nullable(integer('null: no limit')), rateLimit: nullable(rateLimitSchema),
  deadLetterQueue: nullable(string("the dead-letter queue that lists this queue's jobs once they fail for good; null: none")),
  maxSnoozes: integer('how many times one job may snooze before a snooze is refused'),
};

/** The queue's group and rate-mode settings, in its settings and overrides (not in /metrics' per-queue object). */
const queueGroupProps = {
  rateLimitMode: { type: 'string', enum: [...RATE_LIMIT_MODES], description: "how rateLimit counts: 'sliding' (at most max in any window of windowMs) or 'fixed' (per window aligned to multiples of windowMs)" } as JsonSchema,
  groupMaxRunning: nullable(integer("at most this many running jobs per group (the job's group); null: no limit")),
  groupRateLimit: nullable(fields<RateLimit>({ max: integer('claims per group in any window'), windowMs: ms('the sliding window') })),
};

const alertThresholdProps = Object.fromEntries(
  Object.entries(ALERT_THRESHOLD_LIMITS).map(([k, l]) => [k, l.integer ? integer(l.help) : number(l.help)]),
) as { [K in keyof AlertThresholds]-?: JsonSchema };
const alertThresholdsSchema = fields<AlertThresholds>(alertThresholdProps);
const alertOverridesSchema = fields<Partial<AlertThresholds>>(alertThresholdProps, { optional: Object.keys(alertThresholdProps) as (keyof AlertThresholds)[], description: "the queue's own thresholds; absent ones are the server's" });

const QueueSchema = fields<QueueView>(
  {
    name: string(),
    paused: boolean,
    counts: statusCounts,
    ready: integer('pending jobs due now'),
    expiredLeases: integer('running jobs whose lease has expired'),
    held: integer("pending jobs held for a person after a lost attempt (onLost 'hold'): counted in pending, never in ready; they run again only when released"),
    oldestRunningStartedAt: nullable(time),
    oldestReadyAvailableAt: nullable(time),
    settings: fields<QueueView['settings']>({ ...queueDefaultsProps, ...queueLimitsProps, ...queueGroupProps }, { description: "the queue's effective settings (its overrides over the server's)" }),
    overrides: fields<QueueView['overrides']>(
      { ...queueDefaultsProps, ...queueLimitsProps, ...queueGroupProps },
      {
        optional: [...(Object.keys(queueDefaultsProps) as (keyof QueueDefaults)[]), 'onLost', 'stallMs', 'maxRunning', 'rateLimit', 'rateLimitMode', 'groupMaxRunning', 'groupRateLimit', 'deadLetterQueue', 'maxSnoozes'],
        description: "the settings this queue sets itself; absent ones are the server's",
      },
    ),
    rateUsed: integer("claims in the rate limit's current window"),
    rateLimitedUntil: nullable(described(time, "while the window's claims are spent: when the next one opens")),
    alertThresholds: alertThresholdsSchema,
    alertOverrides: alertOverridesSchema,
    indexedFields: { type: 'array', items: string(), description: "payload or result paths with an index of their own: an = on one of them in GET /jobs's where reads only the matches (PUT /queues/{queue}/indexed-fields)" },
  },
  { description: 'a queue: counts, health, settings and alert thresholds' },
);

const histogramSchema = fields<Histogram>({
  count: integer('observations, all-time'),
  sumMs: ms('their sum'),
  buckets: array(fields<Histogram['buckets'][number]>({ leMs: nullable(ms('upper bound; null: +Inf')), count: integer('cumulative') })),
});

const windowCount = fields<WindowCount>({ total: integer('all-time'), lastHour: integer(), last5m: integer() });

const QueueMetricsSchema = fields<QueueMetrics>(
  {
    queue: string(),
    paused: boolean,
    settings: fields<QueueDefaults>(queueDefaultsProps),
    alertOverrides: alertOverridesSchema,
    ...queueLimitsProps,
    held: integer("pending jobs held for a person after a lost attempt (onLost 'hold')"),
    rateUsed: integer(),
    rateLimitedUntil: nullable(epochMs('when the next rate window opens')),
    counts: statusCounts,
    ready: integer(),
    oldestReadyAvailableAt: nullable(epochMs('the oldest ready job became due')),
    oldestReadyAgeMs: nullable(ms()),
    running: fields<QueueMetrics['running']>({
      count: integer(),
      expiredLeases: integer(),
      oldestStartedAt: nullable(epochMs('the oldest running job started')),
      oldestAgeMs: nullable(ms()),
      maxHeartbeatLagMs: nullable(ms('now - last heartbeat, the worst running job')),
      heartbeatLagBuckets: array(fields<QueueMetrics['running']['heartbeatLagBuckets'][number]>({ leMs: nullable(ms('null: +Inf')), count: integer('cumulative') })),
      heartbeatLagSumMs: ms(),
      busyWorkers: integer(),
      ownerAliveJobs: integer(),
      ownerGoneJobs: integer(),
      maxOwnerAliveLagMs: nullable(ms()),
      lateJobs: integer(),
      lateJobIds: array(string()),
      stalled: fields<QueueMetrics['running']['stalled']>({ count: integer(), ids: array(string()) }),
      expiredPastGrace: integer('running jobs past lease + grace, read now'),
      suspect: fields<QueueMetrics['running']['suspect']>({ count: integer(), ids: array(string()), afterMs: nullable(ms()), basis: nullable(string()) }),
    }),
    jobsTotal: fields<QueueMetrics['jobsTotal']>(
      sameFor(['enqueued', 'claimed', 'completed', 'failed', 'cancelled', 'retried', 'requeuedExpired', 'requeuedForced', 'deadLettered', 'snoozed', 'redriven', 'replaced', 'debounced'] as const, integer()),
      { description: 'all-time counters' },
    ),
    servingWorkers: integer(),
    reaped: fields<Record<(typeof REAP_REASONS)[number], WindowCount>>(sameFor(REAP_REASONS, windowCount), {
      open: windowCount,
      description: "take-backs by reason: every reason the reaper has, and any other one recorded (an older server's)",
    }),
    reapedTotal: windowCount,
    reapDeferred: windowCount,
    staleWritesRejected: windowCount,
    enqueueDeduplicated: windowCount,
    duplicateExecutions: windowCount,
    duplicatesReported: windowCount,
    effectsSkipped: windowCount,
    effectsRerun: windowCount,
    claimsApprox: fields<QueueMetrics['claimsApprox']>({ lastHour: integer(), last5m: integer() }),
    attempts: fields<QueueMetrics['attempts']>({
      finished: integer(),
      histogram: array(fields<QueueMetrics['attempts']['histogram'][number]>({ attempts: integer(), count: integer() })),
      erroredAttempts: integer(),
      lostAttempts: integer(),
      jobsWithErrors: integer(),
      jobsWithLost: integer(),
    }),
    runtime: nullable(fields<NonNullable<QueueMetrics['runtime']>>({ count: integer(), p50Ms: ms(), p95Ms: ms(), p99Ms: ms(), maxMs: ms() }, { description: 'jobs completed in the last hour; null: none' })),
    histograms: fields<QueueMetrics['histograms']>(sameFor(HISTOGRAM_NAMES, histogramSchema), {
      description: 'all-time histograms (durable): run time of completed jobs, queue wait of claims, time between lease renewals',
    }),
  },
  { description: "one queue's metrics" },
);

const MetricsSchema = fields<MetricsWire>({
  at: time,
  now: epochMs('the snapshot time'),
  windows: fields<MetricsWire['windows']>({ shortMs: ms(), longMs: ms() }),
  workers: fields<MetricsWire['workers']>({ total: integer(), active: integer(), aliveMs: ms() }),
  maintenance: fields<MetricsWire['maintenance']>({
    lastStartedAt: nullable(epochMs('the last maintenance pass started')),
    lastCompletedAt: nullable(epochMs('the last maintenance pass completed')),
    passes: integer(),
    late: boolean,
    lateAfterMs: ms(),
    ageMs: nullable(ms('since the last completed pass')),
    message: string(),
  }),
  queues: array(QueueMetricsSchema),
});

const ALERT_NAMES = ['heartbeat_lag', 'long_running', 'reaper_burst', 'enqueue_dedup_rate', 'stale_write_rate', 'pending_backlog', 'duplicate_executions', 'stalled_jobs', 'held_jobs'] as const satisfies readonly AlertName[];

const AlertsSchema = fields<AlertsWire>({
  at: time,
  firing: integer('alerts firing now'),
  thresholds: described(alertThresholdsSchema, "the server's thresholds"),
  alerts: array(
    fields<Alert>({
      name: words(ALERT_NAMES),
      queue: string(),
      state: words(['firing', 'ok']),
      value: nullable(number('ms, count or per-minute rate (see unit)')),
      threshold: number(),
      unit: words(['ms', 'count', 'per_minute']),
      message: string(),
      overridden: array(words(Object.keys(ALERT_THRESHOLD_LIMITS))),
    }),
  ),
});

const leaseSettings = fields<QueueTuning['current']>({ leaseMs: ms(), heartbeatMs: ms(), graceMs: ms() });
const TuningSchema = fields<TuningWire>({
  at: time,
  queues: array(
    fields<QueueTuning>({
      queue: string(),
      current: leaseSettings,
      recommended: leaseSettings,
      confidence: words(['none', 'low', 'ok']),
      observed: fields<QueueTuning['observed']>({
        runtimeP50Ms: nullable(ms()),
        runtimeP99Ms: nullable(ms()),
        completedLastHour: integer(),
        maxHeartbeatLagMs: nullable(ms()),
        ownerGoneJobs: integer(),
        heartbeatDelayMs: ms(),
        heartbeatJitterMs: ms(),
        reapDeferredLastHour: integer(),
        reapedLastHour: integer(),
        longestBlockMs: nullable(ms('the longest event-loop block a worker serving the queue reported in the last hour')),
        longestFalseReapPauseMs: nullable(ms('the longest known pause of an attempt taken in the last hour while its owner was alive')),
        falseReapsLastHour: integer('attempts taken in the last hour whose owners turned out to be alive'),
      }),
      flags: array(fields<TuningFlag>({ setting: string(), severity: words(['error', 'warning']), rule: string() })),
      notes: array(string()),
    }),
  ),
});

const spread = nullable(fields<Spread>({ medianMs: number('ms'), maxMs: number('ms') }));
const whatIfOutcome = fields<WhatIfOutcome>({
  settings: fields<LeaseSettings>({ leaseMs: ms(), graceMs: ms(), heartbeatMs: ms() }),
  falseReaps: integer('healthy attempts these settings take back: their owners were alive (each one a duplicate run)'),
  falseReapsAvoided: integer('of the false reaps that happened, those these settings would have left with their owner'),
  falseReapJobs: described(
    array(fields<WhatIfOutcome['falseReapJobs'][number]>({ id: string(), attempt: integer('the attempt that was taken') })),
    'the reaped attempts behind falseReaps, newest take first, at most 100 (those replayed from silences are counts only)',
  ),
  zombies: integer('attempts whose owners were really gone'),
  recovery: described(spread, 'how long after its last renewal a zombie is taken, median and most (null: no zombie)'),
  extraRecovery: described(spread, "per zombie, this setting's recovery minus what happened (negative: sooner)"),
});
const WhatIfSchema = fields<WhatIfWire>({
  at: time,
  queue: string(),
  window: fields<WhatIfReport['window']>({ sinceMs: number('epoch ms'), untilMs: number('epoch ms') }),
  evidence: fields<WhatIfReport['evidence']>({
    healthyAttempts: integer('attempts their owners ended'),
    longestHealthySilenceMs: nullable(ms('their longest time without a renewal (rounded up to 250 ms)')),
    reaped: integer('attempts the reaper took for an expired lease'),
    falseReapsSeen: integer('of those, owners alive after all'),
    falseReapsUnknownPause: integer('of those, owners that beat again without saying when they resumed'),
    longestFalseReapPauseMs: nullable(ms()),
    zombiesSeen: integer(),
    deadlineTakes: integer('taken at their deadline: left out'),
    blocks: integer('event-loop blocks reported'),
    longestBlockMs: nullable(ms()),
  }),
  current: whatIfOutcome,
  candidate: whatIfOutcome,
  notes: array(string()),
});

const WorkersSchema = fields<WorkersWire>({
  at: time,
  workerAliveMs: ms('a worker seen within this is alive'),
  alive: integer('live workers (before the filters)'),
  workers: array(
    fields<WorkerView>({
      id: string(),
      alive: boolean,
      lastSeenAt: time,
      lastSeenAgoMs: ms(),
      startedAt: time,
      queues: nullable(array(string())),
      host: nullable(string()),
      pid: nullable(integer()),
      version: nullable(string()),
      restarts: integer('restarts under the same id'),
      runningCount: integer('what the worker last reported running'),
      heldJobs: integer('running jobs the database says it holds'),
      expiredLeases: integer('of those, leases that have expired'),
      counters: nullable(
        fields<NonNullable<WorkerView['counters']>>(
          { eventLoopBlocks: nullable(integer()), longestEventLoopBlockMs: nullable(ms()), heartbeatFailures: nullable(integer()), leasesLost: nullable(integer()) },
          { description: 'what its last beat reported since the process started; null from SDKs that do not send them' },
        ),
      ),
    }),
  ),
});

const ScheduleSchema = fields<ScheduleView>(
  {
    name: string(),
    queue: string(),
    cron: nullable(string()),
    timeZone: nullable(string()),
    intervalMs: nullable(ms()),
    payload: anyJson('the payload of every job it enqueues'),
    jobOptions: fields<ScheduleJobOptions>({ priority: integer(), maxAttempts: integer(), timeoutMs: ms() }, { optional: ['priority', 'maxAttempts', 'timeoutMs'] }),
    paused: boolean,
    nextRunAt: nullable(time),
    nextRuns: array(time),
    lastRunAt: nullable(time),
    lastJobId: nullable(string()),
    catchUp: words(SCHEDULE_CATCH_UP),
    catchUpWindowMs: nullable(ms()),
    overlap: words(SCHEDULE_OVERLAP),
    skipped: fields<ScheduleView['skipped']>(
      { missed: integer('occurrences skipped as missed (catch-up policy)'), overlap: integer("occurrences skipped while an earlier one's job was pending or running") },
      { description: 'occurrences skipped so far, by why' },
    ),
    createdAt: time,
    updatedAt: time,
  },
  { description: 'a schedule: what it enqueues, when, its policies, its last run and what it skipped' },
);

const reapedJob = fields<MaintenancePassReport['requeued'][number]>({ id: string(), reason: words(REAP_REASONS) });
const hold = fields<{ until: string | null; why: string }>({ until: time, why: string() });
const ReaperSchema = fields<ReaperWire>(
  {
    at: time,
    requeued: array(reapedJob),
    failed: array(reapedJob),
    deferred: array(fields<MaintenancePassReport['deferred'][number]>({ id: string(), reason: words(['owner_alive']), overdueMs: ms() })),
    held: array(fields<MaintenancePassReport['held'][number]>({ id: string(), reason: words(['server_gap']) })),
    heldForOperator: described(array(reapedJob), "jobs whose onLost is 'hold', taken from their lost attempt and held for a person: they run again only when released"),
    raced: integer('decisions that lost a race to a heartbeat or completion'),
    hold: described(hold, 'present when something was held: until when, and why'),
    pruned: integer(),
    schedules: fields<SchedulesReport>({
      enqueued: integer(),
      alreadyEnqueued: integer(),
      missedSkipped: integer(),
      missedCountCapped: boolean,
      overlapSkipped: integer("occurrences skipped because an earlier one's job was still pending or running (overlap 'skip'); absent when none"),
      errors: array(fields<SchedulesReport['errors'][number]>({ schedule: string(), error: string() })),
    }, { optional: ['overlapSkipped'] }),
    cascades: fields<CascadesReport>({ steps: integer('failure cascade steps taken'), edges: integer('dependency edges they settled'), owed: integer('failure cascades still owed after them') }),
    canary: fields<CanaryReport>({ steps: integer('canary steps taken'), stopped: integer('canary runs stopped by themselves'), done: integer('canary runs done') }),
    alerts: fields<AlertPassReport>({ evaluated: boolean, started: integer(), cleared: integer(), delivered: integer(), failed: integer(), error: string() }, { optional: ['error'] }),
    clockStepBack: fields<NonNullable<MaintenancePassReport['clockStepBack']>>(
      { stepMs: ms('how far back the clock had stepped: a lower bound'), jobs: integer('running jobs whose lease was counted again from now'), more: boolean },
      { description: 'present when the clock the leases use had stepped back: the leases renewed before the step now end at their lease counted from now' },
    ),
  },
  { optional: ['hold', 'clockStepBack'], description: 'what the pass did' },
);

const requeuePlan = fields<RequeueWire>(
  {
    action: words(['requeue', 'fail']),
    reason: string(),
    why: string(),
    forced: boolean,
    held: boolean,
    overrodeHold: nullable(fields<NonNullable<RequeueWire['overrodeHold']>>({ until: time, why: string() })),
    beyondBudget: nullable(string()),
  },
  { description: 'what a requeue without force does to this job' },
);

const bulkMatchProps: { [K in keyof BulkMatchWire]-?: JsonSchema } = {
  queue: string(),
  action: words(BULK_KINDS),
  status: words(JOB_STATUSES),
  force: boolean,
  matching: integer('matching jobs (counting stops at 100,000: see matchingCapped)'),
  matchingCapped: boolean,
  cap: integer('LEASEHOLD_BULK_ACTION_CAP'),
  limit: integer(),
  hold: nullable(described(hold, "a requeue without force: the server's hold after a restart or pause, during which nothing is taken")),
};
const bulkOptional = ['hold'] as const;

const BulkSchema = oneOf(
  fields<BulkDryRunWire>(
    {
      ...bulkMatchProps,
      dryRun: constant(true),
      wouldChange: integer(),
      jobs: array(
        fields<BulkPreviewJobWire>(
          {
            id: string(),
            queue: string(),
            status: words(JOB_STATUSES),
            attempt: integer(),
            maxAttempts: integer(),
            lockedBy: nullable(string()),
            leaseExpiresAt: nullable(time),
            updatedAt: time,
            lastError: nullable(string()),
            requeue: requeuePlan,
          },
          { optional: ['requeue'] },
        ),
      ),
    },
    { optional: bulkOptional, description: 'dryRun: what it would touch; nothing changed' },
  ),
  fields<BulkDoneWire>({ ...bulkMatchProps, dryRun: constant(false), changed: integer(), ids: array(string()) }, { optional: bulkOptional, description: 'what it changed' }),
);

const canaryRunProps: { [K in keyof CanaryRunWire]-?: JsonSchema } = {
  id: string(),
  queue: string(),
  state: words(CANARY_STATES, 'watching: a step was taken and its window runs; done; stopped (by itself: stopReason, stopWhy); cancelled'),
  force: boolean,
  first: integer('jobs in the first step'),
  growth: integer('each next step is this many times the one before'),
  windowMs: integer('how long each step is watched before the next'),
  maxFailures: integer(),
  maxStaleWrites: integer(),
  maxDuplicates: integer(),
  maxHeartbeatLagMs: integer(),
  selected: integer('jobs frozen at the start'),
  step: integer('the last step taken (0: none yet)'),
  stepStartedAt: nullable(time),
  watchUntil: nullable(described(time, 'while watching: when the step may be followed by the next')),
  requeued: integer(),
  failedForGood: integer('taken as the reaper would: failed for good (their budgets spent)'),
  skipped: integer('refused by the requeue rule (the reason is per job in steps)'),
  remaining: integer('frozen jobs no step took yet'),
  stopReason: nullable(string('failures, stale_writes, duplicates, heartbeat_lag, no_attempts, or cancelled')),
  stopWhy: nullable(string()),
  actor: string(),
  reason: string(),
  createdAt: time,
  finishedAt: nullable(time),
  steps: array(
    fields<NonNullable<CanaryRunWire['steps']>[number]>({
      step: integer(),
      jobIds: array(string()),
      requeued: integer(),
      failed: integer(),
      skipped: array(fields<{ id: string; why: string }>({ id: string(), why: string() })),
    }),
  ),
  events: array(
    fields<NonNullable<CanaryRunWire['events']>[number]>({ at: time, type: words(['started', 'step', 'stopped', 'done', 'cancelled']), step: integer(), reason: nullable(string()), message: nullable(string()) }),
  ),
};
const CanaryRunSchema = fields<CanaryRunWire>(canaryRunProps, { optional: ['steps', 'events'] });

export const VIEW_RESPONSES = {
  queues: fields<{ queues: QueueView[] }>({ queues: array(QueueSchema) }),
  queue: fields<{ queue: QueueView }>({ queue: QueueSchema }),
  workers: WorkersSchema,
  schedule: fields<{ schedule: ScheduleView }>({ schedule: ScheduleSchema }),
  schedules: fields<{ schedules: ScheduleView[] }>({ schedules: array(ScheduleSchema) }),
  metrics: MetricsSchema,
  alerts: AlertsSchema,
  tuning: TuningSchema,
  whatIf: WhatIfSchema,
  reaperReport: ReaperSchema,
  bulk: BulkSchema,
  redrive: fields<{ deadLetterQueue: string; dryRun: boolean; matching: number; limit: number; changed?: number; ids: string[]; movedTo?: unknown[]; jobs?: unknown[] }>(
    {
      deadLetterQueue: string(),
      dryRun: boolean,
      matching: integer('dead letters that match, counted up to 100,000'),
      limit: integer(),
      changed: integer('jobs sent back (not on a dry run)'),
      ids: array(string('the jobs it would send back (dry run) or sent back, lowest id first')),
      movedTo: array(fields<Record<string, unknown>>({ queue: string(), jobs: integer('jobs sent back to it') }, { description: 'a queue jobs went back to (their own), by name' })),
      jobs: array(fields<Record<string, unknown>>({ id: string(), queue: string(), attempt: integer(), maxAttempts: integer(), died: string('the failure and its reason'), lastError: nullable(string()), deadLetteredAt: time }, { description: 'a dead letter the redrive would send back' })),
    },
    { optional: ['changed', 'movedTo', 'jobs'], description: 'a redrive of a dead-letter queue, or its dry run' },
  ),
  canaryRun: fields<{ run: CanaryRunWire }>({ run: CanaryRunSchema }, { description: 'the run: its options, progress, steps and decisions' }),
  canaryRuns: fields<{ runs: CanaryRunWire[] }>({ runs: array(CanaryRunSchema) }, { description: 'the latest runs, newest first (without steps and events)' }),
  canaryPlan: fields<CanaryPlanWire>(
    { dryRun: constant(true), queue: string(), force: boolean, selected: integer(), jobIds: array(string()), steps: array(integer('jobs in this step')), hold: nullable(described(hold, "without force: the server's hold, during which every step skips its jobs")) },
    { description: 'dryRun: the jobs it would freeze and its steps; nothing started' },
  ),
} satisfies Record<string, JsonSchema>;
