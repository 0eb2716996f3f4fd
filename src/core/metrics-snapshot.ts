/**
 * The shape of one metrics pass: what the metrics, alerts and tuning views
 * read. The store computes it (src/db/store/metrics.ts); the rules in core
 * (alerts, tuning) judge it without knowing where it came from.
 */
import type { AlertThresholds } from './alert-thresholds.ts';
import type { QueueDefaults } from './config.ts';
import type { Histogram, HistogramName } from './histograms.ts';
import type { JobStatus, OnLost, RateLimitMode } from './wire.ts';

const MINUTE = 60_000;
/** The two rate windows: "now" and the baseline it is compared with. */
export const METRIC_WINDOWS = { shortMs: 5 * MINUTE, longMs: 60 * MINUTE } as const;

/** The per-queue health a snapshot is built from (the dashboard's overview table). */
export interface QueueHealth {
  name: string;
  paused: boolean;
  counts: Record<JobStatus, number>;
  /** Pending jobs due now. */
  ready: number;
  /** Running jobs whose lease has expired (zombie candidates). */
  expiredLeases: number;
  oldestRunningStartedAt: number | null;
  oldestReadyAvailableAt: number | null;
  /** The queue's own settings; absent ones fall back to the server defaults. */
  overrides: Partial<QueueDefaults>;
  settings: QueueDefaults;
  /** The queue's own alert thresholds (queues.alert_thresholds); absent ones use the server's. */
  alertOverrides: Partial<AlertThresholds>;
  /** Running jobs without a progress or checkpoint change for this long are stalled; null: not watched. */
  stallMs: number | null;
  /** At most this many of the queue's jobs run at once, across all workers; null: no limit. */
  maxRunning: number | null;
  /** At most `max` claims per fixed window of `windowMs`; null: no limit. */
  rateLimit: RateLimit | null;
  /** How rateLimit counts: 'sliding' (at most max in any windowMs) or 'fixed' (per aligned window). */
  rateLimitMode: RateLimitMode;
  /** Per group of the queue's jobs: at most this many running, at most groupRateLimit.max starts in any groupRateLimit.windowMs; null: none. */
  groupMaxRunning: number | null;
  groupRateLimit: RateLimit | null;
  /** Claims in the current window (0 without a rate limit). */
  rateUsed: number;
  /** While the current window's claims are spent: when the next window opens (epoch ms); else null. */
  rateLimitedUntil: number | null;
  /** What a lost attempt of the queue's jobs leads to (a job's own onLost wins); null: 'retry'. */
  onLost: OnLost | null;
  /** Pending jobs held for a person after a lost attempt (onLost 'hold'): counted in pending, never in ready. */
  held: number;
  /** Where the queue's jobs that fail for good are listed (a dead-letter queue); null: nowhere. */
  deadLetterQueue: string | null;
  /** How many times one job may snooze; null: DEFAULT_MAX_SNOOZES. */
  maxSnoozes: number | null;
  /** Payload or result paths with an index of their own for the jobs list's `where` (src/core/job-filter.ts). */
  indexedFields: string[];
}

export interface RateLimit {
  max: number;
  windowMs: number;
}

/** A count all-time (the durable counter), in the last hour and in the last 5 minutes (retained events). */
export interface WindowCount {
  total: number;
  lastHour: number;
  last5m: number;
}

export interface QueueMetrics {
  queue: string;
  paused: boolean;
  /** The queue's effective lease settings (its overrides over the server defaults). */
  settings: QueueDefaults;
  /** The queue's own alert thresholds; absent ones use the server's. */
  alertOverrides: Partial<AlertThresholds>;
  /** Running jobs without progress for this long are stalled (null: not watched). */
  stallMs: number | null;
  /** The queue's limits and the rate limit's current window (see QueueHealth). */
  maxRunning: number | null;
  rateLimit: RateLimit | null;
  rateUsed: number;
  rateLimitedUntil: number | null;
  /** What a lost attempt leads to ('retry' or 'hold', a job's own wins), and the pending jobs held for a person now. */
  onLost: OnLost;
  held: number;
  /** Where the queue's jobs that fail for good are listed, and how many times one job may snooze (the default filled in). */
  deadLetterQueue: string | null;
  maxSnoozes: number;
  counts: Record<JobStatus, number>;
  /** Pending jobs due now, and the oldest of them. */
  ready: number;
  oldestReadyAvailableAt: number | null;
  oldestReadyAgeMs: number | null;
  running: {
    count: number;
    expiredLeases: number;
    oldestStartedAt: number | null;
    oldestAgeMs: number | null;
    /** now - last heartbeat (or claim), the worst running job. */
    maxHeartbeatLagMs: number | null;
    /** Cumulative: running jobs whose heartbeat lag is <= leMs (null: +Inf). */
    heartbeatLagBuckets: { leMs: number | null; count: number }[];
    heartbeatLagSumMs: number;
    /** Distinct workers holding a job of this queue. */
    busyWorkers: number;
    /** Running jobs whose owner looks alive: seen within workerAliveMs, and the same process that claimed them. */
    ownerAliveJobs: number;
    /** Running jobs whose owner looks dead, is unknown, or restarted since the claim: the reaper's business. */
    ownerGoneJobs: number;
    /** The worst heartbeat lag among jobs whose owner looks alive (what tuning learns from). */
    maxOwnerAliveLagMs: number | null;
    /**
     * Late jobs of live owners: not heartbeated for over the queue's
     * heartbeat interval x its heartbeatLagFactor threshold. `lateJobIds`:
     * up to 10 of them, worst first.
     */
    lateJobs: number;
    lateJobIds: string[];
    /** Running jobs heartbeating without progress past the queue's stallMs (src/core/stall.ts), and their ids (at most 20). */
    stalled: { count: number; ids: string[] };
    /**
     * Running jobs whose lease + grace has passed, read now: the reaper's to
     * take (or to defer while the owner reports in). Rising while no pass
     * runs means the reaper has stopped.
     */
    expiredPastGrace: number;
    /**
     * Suspect jobs (src/core/suspect.ts): lease live, running longer than
     * `afterMs` (the queue's learned threshold; `basis` says how it was
     * made), how many and their ids (at most 10, longest running first).
     */
    suspect: { count: number; ids: string[]; afterMs: number | null; basis: string | null };
  };
  /** Jobs through each transition, all-time (durable counters; never decrease). */
  jobsTotal: {
    enqueued: number;
    claimed: number;
    completed: number;
    /** Failed for good (by the owner, the reaper or a deadline). */
    failed: number;
    cancelled: number;
    /** Put back to run again after an errored attempt, or by an operator's retry. */
    retried: number;
    /** Running jobs an operator requeued: after the lease expired, or forced. */
    requeuedExpired: number;
    requeuedForced: number;
    /** Failed for good and listed in the queue's dead-letter queue (counted in failed too). */
    deadLettered: number;
    /** Snoozes by handlers: back to pending with the attempt given back. */
    snoozed: number;
    /** Dead letters redriven back into this queue by an operator. */
    redriven: number;
    /** Unclaimed jobs rewritten by a later enqueue with their key: uniqueWhile 'replace', and 'debounce'. */
    replaced: number;
    debounced: number;
  };
  /**
   * Live workers that serve this queue: they report it in their beats, or
   * hold one of its running jobs (a worker that never beats still claims).
   */
  servingWorkers: number;
  /** Reaper take-backs by reason (every known reason, 0 when none). */
  reaped: Record<string, WindowCount>;
  reapedTotal: WindowCount;
  reapDeferred: WindowCount;
  staleWritesRejected: WindowCount;
  /** Enqueues answered with the existing job of the same idempotency key. */
  enqueueDeduplicated: WindowCount;
  /** Claims of a job whose previous claim was taken back while it may still have been running. */
  duplicateExecutions: WindowCount;
  /** Duplicates a handler found downstream and reported (ctx.reportDuplicate). */
  duplicatesReported: WindowCount;
  /** once() effects not run because an earlier attempt recorded them done. */
  effectsSkipped: WindowCount;
  /** once() effects run again because an earlier start was never recorded done. */
  effectsRerun: WindowCount;
  /**
   * Claims in the window, approximated without reading the 'claimed' events
   * (which no index covers): running jobs started in the window + finished
   * jobs that were claimed and finished in the window + reaps in the window.
   * Errored attempts retried within the window are not counted.
   */
  claimsApprox: { lastHour: number; last5m: number };
  /** Jobs finished in the last hour: how many attempts they took. */
  attempts: {
    finished: number;
    /** attempt_count -> jobs. */
    histogram: { attempts: number; count: number }[];
    erroredAttempts: number;
    lostAttempts: number;
    jobsWithErrors: number;
    jobsWithLost: number;
  };
  /** completed_at - started_at of jobs completed in the last hour (nearest-rank percentiles). */
  runtime: { count: number; p50Ms: number; p95Ms: number; p99Ms: number; maxMs: number } | null;
  /**
   * All-time histograms (durable, never decrease; src/core/histograms.ts):
   * run time of each completed job, queue wait of each claim, and the time
   * between lease renewals of each running claim. Cumulative buckets, every
   * bound present, 0 included.
   */
  histograms: Record<HistogramName, Histogram>;
}

export interface MetricsSnapshot {
  now: number;
  windows: typeof METRIC_WINDOWS;
  workers: { total: number; active: number; aliveMs: number };
  queues: QueueMetrics[];
  /** The per-queue health the snapshot was built from (the dashboard's overview table). */
  health: QueueHealth[];
  /** The last completed maintenance pass (null fields: none recorded); src/core/maintenance-watch.ts judges it. */
  maintenance: { lastStartedAt: number | null; lastCompletedAt: number | null; passes: number };
  /** The owner check's answers refused since the database was made, by reason (redirect, too_large); durable. Absent: none recorded. */
  ownerCheckRefused?: Record<string, number>;
  /** Failure cascades still owed: failed, cancelled or retried jobs whose dependents are still being settled in steps. */
  cascadesOwed: number;
}
