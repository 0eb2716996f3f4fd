/**
 * The shapes on the wire that both sides share: the server encodes them, and
 * the worker SDK and the producer client (which import nothing else of the
 * server's) decode them. Types only, so the SDK and client bundles stay free
 * of server code.
 */

export const JOB_STATUSES = ['pending', 'running', 'completed', 'failed', 'cancelled'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

/**
 * What an idempotency key does with the jobs it finds (docs/guarantees.md):
 * 'retained' (the default) deduplicates while a job enqueued with it that
 * way is kept (until retention prunes it); 'active' only while a job with it
 * is pending or running. The key modes rewrite or ration instead: 'replace'
 * rewrites the key's job that no worker has claimed yet (payload, run time,
 * options), 'debounce' does the same and pushes its run time to debounceMs
 * from now, 'throttle' answers the key's job made less than throttleMs ago.
 */
export const UNIQUE_WHILE = ['retained', 'active', 'replace', 'debounce', 'throttle'] as const;
export type UniqueWhile = (typeof UNIQUE_WHILE)[number];
/** The two dedup windows the jobs.unique_while column holds (its CHECK cannot grow without rebuilding the table). */
export const STORED_UNIQUE_WHILE = ['retained', 'active'] as const;
export type StoredUniqueWhile = (typeof STORED_UNIQUE_WHILE)[number];
/** The key modes, held in jobs.key_mode (drizzle/0036); their jobs keep unique_while 'active'. */
export const KEY_MODES = ['replace', 'debounce', 'throttle'] as const;
export type KeyMode = (typeof KEY_MODES)[number];

/**
 * What happens to a job whose attempt was lost (its worker vanished, its
 * deadline passed, an operator forced it back): 'retry' (the default) runs it
 * again at once, for idempotent jobs; 'hold' keeps it for a person, who
 * releases, completes or fails it, for jobs whose side effects cannot be
 * fenced.
 */
export const ON_LOST_POLICIES = ['retry', 'hold'] as const;
export type OnLost = (typeof ON_LOST_POLICIES)[number];

/**
 * Why a worker stopped its handler when the attempt lost its lease or ran out
 * of time, sent with the failure that follows (`abortedBy` of POST
 * /jobs/:id/fail): its deadline passed, its lease ran out by the worker's own
 * clock (it fenced itself), or the server refused its lease. Such a failure
 * ends a lost attempt, so a job whose onLost is 'hold' is held for a person
 * instead of retried.
 */
export const LOST_ATTEMPT_ABORTS = ['deadline_exceeded', 'lease_expired_locally', 'lease_lost'] as const;
export type LostAttemptAbort = (typeof LOST_ATTEMPT_ABORTS)[number];

/** A schedule's policy for occurrences it finds missed (src/maintenance/schedules.ts). */
export const SCHEDULE_CATCH_UP = ['latest', 'all', 'none'] as const;
export type ScheduleCatchUp = (typeof SCHEDULE_CATCH_UP)[number];
/** A schedule's policy for an occurrence due while the previous one's job is pending or running. */
export const SCHEDULE_OVERLAP = ['allow', 'skip'] as const;
export type ScheduleOverlap = (typeof SCHEDULE_OVERLAP)[number];
/** Why occurrences were skipped. */
export const SCHEDULE_SKIP_REASONS = ['missed', 'overlap'] as const;
export type ScheduleSkipReason = (typeof SCHEDULE_SKIP_REASONS)[number];

/**
 * What a failed or cancelled dependency does to a job that waits for it
 * (docs/flows.md): 'fail' (the default) fails the dependent, naming the
 * dependency; 'run' counts it as met; 'hold' keeps the dependent for a
 * person. Retrying the failed dependency puts a failed or held dependent
 * back to waiting.
 */
export const DEPENDENCY_POLICIES = ['fail', 'run', 'hold'] as const;
export type DependencyPolicy = (typeof DEPENDENCY_POLICIES)[number];
/** Where one dependency of a job stands (job_dependencies.state). */
export const DEPENDENCY_STATES = ['waiting', 'completed', 'failed', 'ignored'] as const;
export type DependencyState = (typeof DEPENDENCY_STATES)[number];
/**
 * The other job of one dependency edge, seen from a job, and where the edge
 * stands (GET /jobs/:id/dependencies; the client's getJobDependencies, the
 * worker's ctx.dependencies()).
 */
export interface DependencyLinkWire {
  id: string;
  queue: string;
  status: JobStatus;
  /** 'ignored': it failed or was cancelled, and the dependent's policy 'run' counted it as met. */
  state: DependencyState;
  /** A completed dependency's result (null otherwise, and for dependents). */
  result: unknown;
  lastError: string | null;
  updatedAt: string;
}
/** A job's graph: what it waits for (each completed one with its result) and the jobs that wait for it. */
export interface JobDependenciesWire {
  dependencies: DependencyLinkWire[];
  dependents: DependencyLinkWire[];
}
/** At most this many dependencies per job, and jobs per flow; at most MAX_DEPENDENTS jobs wait for one job. */
export const MAX_DEPENDENCIES = 100;
export const MAX_DEPENDENTS = 1000;

/** A job as clients see it. The lock token is never part of it: only the claimer gets it. */
export interface Job {
  id: string;
  queue: string;
  status: JobStatus;
  payload: unknown;
  priority: number;
  attempt: number;
  maxAttempts: number;
  erroredAttempts: number;
  lostAttempts: number;
  fencingToken: number;
  idempotencyKey: string | null;
  /** What the key does: 'retained' or 'active' (how long it deduplicates), or 'replace', 'debounce', 'throttle'. */
  uniqueWhile: UniqueWhile;
  /** Times a later enqueue with the key (replace, debounce) rewrote this job before any worker claimed it. */
  replacedCount: number;
  /** The schedule that enqueued the job (null: a client did), and the occurrence it runs. */
  schedule: string | null;
  occurrenceAt: string | null;
  /** The W3C traceparent of the code that enqueued the job: the trace its attempts' spans join (null: not traced). */
  traceparent: string | null;
  /** When the job may be claimed; while it is held for a person (heldAt), when it was held. */
  availableAt: string;
  createdAt: string;
  updatedAt: string;
  startedAt: string | null;
  completedAt: string | null;
  failedAt: string | null;
  cancelledAt: string | null;
  lastHeartbeatAt: string | null;
  leaseExpiresAt: string | null;
  leaseMs: number | null;
  lockedBy: string | null;
  timeoutMs: number | null;
  deadlineAt: string | null;
  lastError: string | null;
  progress: unknown;
  checkpoint: unknown;
  result: unknown;
  /** The job's own onLost ('retry' or 'hold'); null: its queue's setting (default 'retry'). */
  onLost: OnLost | null;
  /** The job's group (a tenant, a customer); null: none. */
  group: string | null;
  /** Set while the job is held for a person after a lost attempt: it runs again only when an operator releases it. */
  heldAt: string | null;
  /** What is known of the lost attempt that held it (null when not held). Progress and checkpoint are the job's own fields. */
  lostAttempt: {
    worker: string | null;
    attempt: number;
    fencingToken: number;
    startedAt: string | null;
    lastHeartbeatAt: string | null;
    leaseExpiresAt: string | null;
    why: string;
  } | null;
  /** Times a handler snoozed the job ("not now, try again in N"): each gave its attempt back. */
  snoozes: number;
  /** Set while the job, failed for good, is listed in a dead-letter queue: which one (a redrive sends it back to its own queue). */
  deadLetterQueue: string | null;
  deadLetteredAt: string | null;
}

/**
 * A job as lists show it (GET /jobs): everything but the JSON it carries.
 * Payload, result, progress and checkpoint are each replaced by their size in
 * bytes (null where there is none), and payload and result by a short preview
 * too, so a page of large jobs stays small; GET /jobs/:id has them whole.
 */
export interface JobSummary extends Omit<Job, 'payload' | 'result' | 'progress' | 'checkpoint'> {
  payloadBytes: number;
  /** The payload's JSON text, cut at JOB_PREVIEW_CHARS characters. */
  payloadPreview: string;
  resultBytes: number | null;
  resultPreview: string | null;
  progressBytes: number | null;
  checkpointBytes: number | null;
}

/** How much of a payload or result a job summary shows. */
export const JOB_PREVIEW_CHARS = 200;

/** A claimed job as the claimer sees it: what it needs to run, renew and finish it. */
export interface ClaimedJobWire {
  id: string;
  queue: string;
  payload: unknown;
  attempt: number;
  maxAttempts: number;
  priority: number;
  lockToken: string;
  fencingToken: number;
  leaseMs: number;
  leaseExpiresAt: string;
  /** When this attempt's time limit runs out (every claim has one): past it the job is taken back even while it heartbeats. */
  deadlineAt: string | null;
  heartbeatIntervalMs: number;
  idempotencyKey: string | null;
  checkpoint: unknown;
  progress: unknown;
  /** This attempt's time limit in ms (the job's, else its queue's, else the server's): deadlineAt - claim time. */
  timeoutMs: number | null;
  /**
   * The W3C trace context the job was enqueued with (null: none): the worker
   * parents this attempt's span to it. Absent from servers older than it.
   */
  traceparent?: string | null;
  tracestate?: string | null;
  /** The job's group (a tenant, a customer; null: none). Absent from servers older than it. */
  group?: string | null;
  /** How many times the job was snoozed so far (they spent no attempt). Absent from servers older than it. */
  snoozes?: number;
}

/** What an enqueue answers per job in a bulk (and the producer client per call): the job's summary. */
export interface Enqueued {
  id: string;
  queue: string;
  status: JobStatus;
  priority: number;
  availableAt: string;
  idempotencyKey: string | null;
  /** True when the idempotency key matched an existing job, which is the one returned. */
  deduplicated: boolean;
  /** True when the key's unclaimed job was rewritten by this enqueue (replace, debounce), which is the one returned. */
  replaced: boolean;
}

/**
 * One entry of a job's history (GET /jobs/:id). A job's `enqueued` and
 * `completed` are read from the job row (`derived: true`, `id: null`): they
 * have no event row of their own.
 */
export interface JobEvent {
  id: string | null;
  derived: boolean;
  type: string;
  at: string;
  from: string | null;
  to: string | null;
  reason: string | null;
  message: string | null;
  actor: string | null;
  workerId: string | null;
  attempt: number | null;
}

/** GET /jobs/:id: the job and its newest events. */
export interface JobWithEvents {
  job: Job;
  olderEventsNotShown: number;
  events: JobEvent[];
  /** The job's failure (or retry) still settling the jobs that wait for it, step by step (docs/flows.md); null when nothing is owed. */
  cascade: CascadeWire | null;
}

/** A failure cascade in progress: 'fail' settles the dependents, 'retry' and then 'retry_jobs' undo that. */
export interface CascadeWire {
  action: 'fail' | 'retry' | 'retry_jobs';
  steps: number;
  /** Edges and jobs settled so far. */
  settled: number;
  queuedAt: string;
}

/** The lease after a heartbeat, extend or checkpoint. */
export interface LeaseState {
  id: string;
  leaseExpiresAt: string | null;
  deadlineAt: string | null;
  fencingToken: number;
}

/** A refused entry of a batched write: the error this job would have got alone. */
export interface BatchRefusal {
  id: string;
  ok: false;
  error: { code: string; message: string; status?: string };
}

/** Every error answer: a stable code, a message for people, and the field at fault where there is one. */
export interface ErrorBody {
  error: { code: string; message: string; field?: string };
}

/**
 * What a worker says about itself in its liveness beat: the fields of
 * POST /workers/beat and of /heartbeats' `worker`. Counters are the
 * process's own since it started; all optional, as older SDKs send fewer.
 */
export interface WorkerLivenessWire {
  /** This process of the worker (random per start). */
  instanceId?: string | undefined;
  host?: string | undefined;
  pid?: number | undefined;
  version?: string | undefined;
  queues?: readonly string[] | undefined;
  /** Jobs the process holds a lease on: running, claimed ahead and waiting for a slot, or with their result on its way. */
  runningCount?: number | undefined;
  eventLoopBlocks?: number | undefined;
  longestEventLoopBlockMs?: number | undefined;
  heartbeatFailures?: number | undefined;
  leasesLost?: number | undefined;
  /**
   * Claim ids whose answer this process never received and no longer waits
   * for: it will never act on them, so the jobs still running under them go
   * back to the queue at once, without costing an attempt.
   */
  lostClaims?: readonly string[] | undefined;
}

/** An operator audit entry as the API answers it (GET /api/v1/audit, `leasehold audit`, the client's listAudit). */
export interface AuditEntryWire {
  id: string;
  at: string;
  actor: string;
  role: string;
  /** The name of the token the request or session authenticated with (null: open mode, or a failed login). */
  credential: string | null;
  source: 'dashboard' | 'api';
  action: string;
  queue: string | null;
  jobId: string | null;
  target: string;
  before: unknown;
  after: unknown;
  reason: string | null;
  client: string | null;
}

/** PATCH /queues/:queue/settings: any of these; null sets one back to the server's default. */
/** How a queue's rate limit counts its starts. */
export const RATE_LIMIT_MODES = ['sliding', 'fixed'] as const;
export type RateLimitMode = (typeof RATE_LIMIT_MODES)[number];

export interface QueueSettingsPatch {
  leaseMs?: number | null;
  heartbeatMs?: number | null;
  graceMs?: number | null;
  maxAttempts?: number | null;
  maxLostAttempts?: number | null;
  backoffBaseMs?: number | null;
  backoffMaxMs?: number | null;
  retentionMs?: number | null;
  timeoutMs?: number | null;
  stallMs?: number | null;
  maxRunning?: number | null;
  rateLimit?: { max: number; windowMs: number } | null;
  /** How rateLimit counts: 'sliding' (null, the default: at most max in any windowMs) or 'fixed' (per aligned window). */
  rateLimitMode?: RateLimitMode | null;
  /** At most this many running jobs per group (the job's `group`); null: no limit. */
  groupMaxRunning?: number | null;
  /** At most `max` starts per group in any window of `windowMs`; null: no limit. */
  groupRateLimit?: { max: number; windowMs: number } | null;
  paused?: boolean;
  /** What a lost attempt leads to: 'retry' or 'hold' (null: back to 'retry'). */
  onLost?: OnLost | null;
  /** Where this queue's jobs that fail for good are listed (a dead-letter queue's name; null: nowhere). */
  deadLetterQueue?: string | null;
  /** How many times one job may snooze (null: DEFAULT_MAX_SNOOZES). */
  maxSnoozes?: number | null;
}

/** One step of a job as a claim finds it (the worker's ctx.steps). */
export interface StepWire {
  name: string;
  state: 'done' | 'uncertain' | 'running';
  attempt: number;
  result: unknown;
}
