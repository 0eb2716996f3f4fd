/**
 * What an operator's script does over HTTP, as client calls: one per route
 * of the admin API (queues and their settings, pause and resume, requeue,
 * bulk actions, the reaper, schedules, workers, metrics, alerts, tuning,
 * the audit trail, health). Each answers the route's JSON as it is; the
 * shapes named here are the fields a script relies on (the admin views have
 * more, and grow).
 */
import type { AuditEntryWire as AuditEntry, Job, JobStatus, JobSummary, JobWithEvents, QueueSettingsPatch } from '../core/wire.ts';

export type { AuditEntry, QueueSettingsPatch };
import type { Request } from './request.ts';

const q = (name: string) => `/queues/${encodeURIComponent(name)}`;
const s = (name: string) => `/schedules/${encodeURIComponent(name)}`;

/** Who and why, kept in the audit trail with the change. */
export interface ActionOptions {
  reason?: string;
  /** Who: default "admin" (or the token's name). */
  actor?: string;
}

export interface RequeueOptions extends ActionOptions {
  /** Take a live lease too (the job may run twice); needs a reason. */
  force?: boolean;
  /** Say what the requeue would do now, and change nothing. */
  dryRun?: boolean;
}

/** What a requeue did (or, dryRun, would do): requeue, or fail for good as the reaper would. */
export interface RequeueDone {
  action: 'requeue' | 'fail';
  reason: string;
  why: string;
  forced: boolean;
  overrodeHold: { until: string; why: string } | null;
  beyondBudget: string | null;
}

export interface ListJobsFilter {
  queue?: string;
  status?: JobStatus;
  idempotencyKey?: string;
  /** The `next` of the previous page. */
  after?: string;
  /** 1-500, default 50. */
  limit?: number;
  order?: 'asc' | 'desc';
  /**
   * Filters on the payload or result, ANDed: `<path> <op> <value>`, e.g.
   * 'payload.customerId = 42', 'result.total >= 10', 'payload.name ^= "Ac"',
   * 'payload.email exists' (docs/http-api.md). With where, a page may come
   * back short, even empty, with next set: follow next until it is null.
   */
  where?: string | readonly string[];
}

/** A queue's counts, health and settings (GET /queues/:queue; more fields than these). */
export interface QueueInfo {
  name: string;
  paused: boolean;
  counts: Record<JobStatus, number>;
  ready: number;
  expiredLeases: number;
  settings: Record<string, unknown>;
  overrides: Record<string, unknown>;
  /** Payload or result paths with an index of their own (setQueueIndexedFields). */
  indexedFields: string[];
  [more: string]: unknown;
}


export interface BulkAction extends ActionOptions {
  action: 'retry' | 'cancel' | 'requeue';
  /** retry: failed (default) or cancelled; cancel: pending; requeue: running. */
  status?: JobStatus;
  /** List what it would touch, change nothing (no reason needed). */
  dryRun?: boolean;
  /** At most this many, lowest id first (never more than the server's cap). */
  limit?: number;
  /** requeue only: take live leases too; needs a reason. */
  force?: boolean;
}

/** What a bulk action matched and changed (ids), or on a dry run would touch (jobs). */
/** A redrive of a dead-letter queue (reason required unless dryRun). */
export interface RedriveOptions {
  dryRun?: boolean;
  limit?: number;
  fromQueue?: string;
  ids?: string[];
  reason?: string;
  actor?: string;
}

export interface RedriveResult {
  deadLetterQueue: string;
  dryRun: boolean;
  matching: number;
  limit: number;
  changed?: number;
  ids: string[];
  /** Not on a dry run: how many went back to each queue (their own), by queue name. */
  movedTo?: { queue: string; jobs: number }[];
  jobs?: { id: string; queue: string; attempt: number; maxAttempts: number; died: string; lastError: string | null; deadLetteredAt: string }[];
}

export interface BulkResult {
  queue: string;
  action: BulkAction['action'];
  status: JobStatus;
  matching: number;
  cap: number;
  limit: number;
  dryRun: boolean;
  changed?: number;
  ids?: string[];
  wouldChange?: number;
  jobs?: Record<string, unknown>[];
  [more: string]: unknown;
}

/** A schedule's fields (POST /schedules; PATCH takes any of them). */
/** A canary requeue's options (POST /queues/:queue/canary): the first step's size; the rest default on the server. */
export interface CanaryStart extends ActionOptions {
  first: number;
  growth?: number;
  windowMs?: number;
  maxFailures?: number;
  maxStaleWrites?: number;
  maxDuplicates?: number;
  maxHeartbeatLagMs?: number;
  limit?: number;
  /** Take live leases too (their jobs may run twice); needs a reason. */
  force?: boolean;
}

/** A canary run's progress (GET /canary/:id; more fields than these). */
export interface CanaryRun {
  id: string;
  queue: string;
  state: 'watching' | 'done' | 'stopped' | 'cancelled';
  step: number;
  selected: number;
  requeued: number;
  skipped: number;
  remaining: number;
  watchUntil: string | null;
  stopReason: string | null;
  stopWhy: string | null;
  steps?: { step: number; jobIds: string[]; requeued: number; failed: number; skipped: { id: string; why: string }[] }[];
  events?: { at: string; type: string; step: number; reason: string | null; message: string | null }[];
}

/** A canary start's dry run: the jobs it would freeze and each step's size. */
export interface CanaryPlan {
  dryRun: true;
  selected: number;
  jobIds: string[];
  steps: number[];
}

export interface ScheduleFields {
  queue: string;
  /** A cron expression (5 or 6 fields) read in timeZone; or intervalMs. */
  cron?: string | null;
  timeZone?: string | null;
  intervalMs?: number | null;
  payload?: unknown;
  jobOptions?: { priority?: number; maxAttempts?: number; timeoutMs?: number };
  paused?: boolean;
}

export interface Schedule {
  name: string;
  queue: string;
  cron: string | null;
  timeZone: string | null;
  intervalMs: number | null;
  payload: unknown;
  jobOptions: { priority?: number; maxAttempts?: number; timeoutMs?: number };
  paused: boolean;
  nextRunAt: string | null;
  nextRuns: string[];
  lastRunAt: string | null;
  lastJobId: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface AuditFilter {
  actor?: string;
  /** e.g. queue.pause, jobs.bulk, job.requeue. */
  action?: string;
  queue?: string;
  /** The `next` of the previous page. */
  before?: string;
  /** 1-500, default 50. */
  limit?: number;
}


/** An admin view described by its top-level fields (metrics, alerts, tuning, workers, reaper report). */
export type View = Record<string, unknown>;

export function operatorCalls(request: Request) {
  return {
    /** GET /jobs/:id: the job and its newest 1,000 events. */
    getJobWithEvents: (id: string) => request<JobWithEvents>('GET', `/jobs/${encodeURIComponent(id)}`),
    /** GET /jobs: summaries (no payload or result), newest first; pass `next` as `after` for the next page. */
    listJobs: (filter: ListJobsFilter = {}) => request<{ jobs: JobSummary[]; next: string | null }>('GET', '/jobs', undefined, { query: { ...filter } }),
    /** Jobs held for a person after a lost attempt (onLost 'hold'), longest held first, with that attempt and its effects. */
    listHeldJobs: async (filter: { queue?: string; limit?: number } = {}) => (await request<{ jobs: (Job & { effects: unknown[] })[] }>('GET', '/held-jobs', undefined, { query: { ...filter } })).jobs,
    /** A held job runs again (back to pending, due now); a reason is required. 409 when it is not held. */
    releaseHeldJob: async (id: string, o: ActionOptions & { reason: string }) => (await request<{ job: Job }>('POST', `/jobs/${encodeURIComponent(id)}/held/release`, o)).job,
    /** A held job completed by hand, with the result the person found; a reason is required. */
    completeHeldJob: async (id: string, o: ActionOptions & { reason: string; result?: unknown }) => (await request<{ job: Job }>('POST', `/jobs/${encodeURIComponent(id)}/held/complete`, o)).job,
    /** A held job failed for good; the reason becomes its error. */
    failHeldJob: async (id: string, o: ActionOptions & { reason: string }) => (await request<{ job: Job }>('POST', `/jobs/${encodeURIComponent(id)}/held/fail`, o)).job,
    /** Put a running job back (or fail it for good) as the reaper would now; 409 while it would wait. */
    requeue: (id: string, o: RequeueOptions = {}) => request<{ job?: Job; dryRun?: true; requeue: RequeueDone }>('POST', `/jobs/${encodeURIComponent(id)}/requeue`, o),

    listQueues: async () => (await request<{ queues: QueueInfo[] }>('GET', '/queues')).queues,
    getQueue: async (name: string) => (await request<{ queue: QueueInfo }>('GET', q(name))).queue,
    updateQueueSettings: async (name: string, patch: QueueSettingsPatch) => (await request<{ queue: QueueInfo }>('PATCH', `${q(name)}/settings`, patch)).queue,
    /** Replace the queue's alert thresholds ({} clears them: the server's apply). */
    setQueueAlertThresholds: async (name: string, thresholds: Record<string, number>) => (await request<{ queue: QueueInfo }>('PUT', `${q(name)}/alerts`, thresholds)).queue,
    /** Replaces the queue's indexed fields (at most 5, [] for none): an = on one of them in listJobs' where reads only the matches. */
    setQueueIndexedFields: async (name: string, fields: readonly string[]) => (await request<{ queue: QueueInfo }>('PUT', `${q(name)}/indexed-fields`, { fields })).queue,
    pauseQueue: (name: string) => request<{ queue: string; paused: boolean }>('POST', `${q(name)}/pause`),
    resumeQueue: (name: string) => request<{ queue: string; paused: boolean }>('POST', `${q(name)}/resume`),
    /**
     * Delete a queue that holds no pending or running job and no schedule (409 saying why
     * otherwise); with purge, its finished jobs go with it.
     */
    deleteQueue: (name: string, opts: { purge?: boolean } = {}) =>
      request<{ deleted: string; purgedFinishedJobs: number }>('DELETE', q(name), undefined, { query: opts.purge ? { purge: true } : {} }),
    /** Retry, cancel or requeue a queue's jobs of one status, at most the server's cap per call. */
    bulk: (name: string, action: BulkAction) => request<BulkResult>('POST', `${q(name)}/bulk`, action),
    /** Send a dead-letter queue's jobs back to their own queues (pending now, fresh attempts); dryRun lists them and changes nothing. */
    redrive: (deadLetterQueue: string, options: RedriveOptions) => request<RedriveResult>('POST', `${q(deadLetterQueue)}/redrive`, options),
    /** A canary requeue: its first step taken now, the rest by the server's maintenance pass while each stays healthy. */
    startCanaryRequeue: async (name: string, options: CanaryStart) => (await request<{ run: CanaryRun }>('POST', `${q(name)}/canary`, options)).run,
    planCanaryRequeue: (name: string, options: CanaryStart) => request<CanaryPlan>('POST', `${q(name)}/canary`, { ...options, dryRun: true }),
    listCanaryRuns: async () => (await request<{ runs: CanaryRun[] }>('GET', '/canary')).runs,
    getCanaryRun: async (id: string) => (await request<{ run: CanaryRun }>('GET', `/canary/${encodeURIComponent(id)}`)).run,
    cancelCanaryRun: async (id: string, options: ActionOptions & { reason: string }) => (await request<{ run: CanaryRun }>('POST', `/canary/${encodeURIComponent(id)}/cancel`, options)).run,
    /** One reaper pass now, and what it did. */
    runReaper: () => request<View>('POST', '/reaper/run'),

    listSchedules: async () => (await request<{ schedules: Schedule[] }>('GET', '/schedules')).schedules,
    getSchedule: async (name: string) => (await request<{ schedule: Schedule }>('GET', s(name))).schedule,
    createSchedule: async (name: string, fields: ScheduleFields) => (await request<{ schedule: Schedule }>('POST', '/schedules', { name, ...fields })).schedule,
    updateSchedule: async (name: string, patch: Partial<ScheduleFields>) => (await request<{ schedule: Schedule }>('PATCH', s(name), patch)).schedule,
    deleteSchedule: (name: string) => request<{ deleted: string }>('DELETE', s(name)),

    /** The worker registry, filtered by queue or liveness. */
    listWorkers: (filter: { queue?: string; alive?: boolean } = {}) => request<View & { workers: View[] }>('GET', '/workers', undefined, { query: filter }),
    getMetrics: () => request<View>('GET', '/metrics'),
    listAlerts: () => request<View>('GET', '/alerts'),
    getTuning: () => request<View>('GET', '/tuning'),
    /** A queue's evidence (heartbeat silences, reaps, blocks) replayed against today's lease and grace and a candidate (each field left out: today's). */
    getTuningWhatIf: (name: string, candidate: { leaseMs?: number; graceMs?: number; heartbeatMs?: number; windowMs?: number } = {}) =>
      request<View>('GET', `${q(name)}/tuning/what-if`, undefined, { query: { ...candidate } }),
    /** Who changed what, newest first; pass `next` as `before` for the next page. */
    listAudit: (filter: AuditFilter = {}) => request<{ entries: AuditEntry[]; next: string | null }>('GET', '/audit', undefined, { query: { ...filter } }),
  };
}

export type OperatorCalls = ReturnType<typeof operatorCalls>;
