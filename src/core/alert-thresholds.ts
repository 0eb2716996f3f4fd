/**
 * Alert thresholds: the server's defaults, the bounds a queue's own may take,
 * and reading a queue's stored overrides. The evaluation that uses them is
 * src/core/alerts.ts.
 */
export interface AlertThresholds {
  /** A running job is late when it has not heartbeated for over this many heartbeat intervals. */
  heartbeatLagFactor: number;
  /** heartbeat_lag fires when at least this many running jobs of live workers are late ... */
  heartbeatLateJobs: number;
  /** ... or when late ones are at least this share of the running jobs of live workers. */
  heartbeatLateShare: number;
  /** long_running fires when the oldest running job is older than max(p99 runtime x this, lease). */
  longRunningP99Factor: number;
  /** Without runtime history: older than this many leases. */
  longRunningLeaseFactor: number;
  /** reaper_burst fires above this many reaps in 5 minutes ... */
  reapsPer5m: number;
  /** ... or when reaps are more than this share of claims in 5 minutes ... */
  reapClaimRatio: number;
  /** ... once there are at least this many claims to judge by. */
  reapRatioMinClaims: number;
  /** enqueue_dedup_rate / stale_write_rate fire when the 5-minute rate is this many times the hour's ... */
  rateRiseFactor: number;
  /** ... and there were at least this many in the 5 minutes. */
  rateMinEvents: number;
  /** pending_backlog fires when the oldest ready job of a queue that is not paused has waited this long. */
  pendingAgeMs: number;
  /**
   * duplicate_executions fires above this many duplicate executions in 5
   * minutes (claims of jobs taken back while their worker may still have been
   * running them): recovery is too eager, or workers stall past lease + grace.
   */
  duplicateExecutionsPer5m: number;
}

export const DEFAULT_ALERT_THRESHOLDS: AlertThresholds = {
  heartbeatLagFactor: 3,
  heartbeatLateJobs: 2,
  heartbeatLateShare: 0.5,
  longRunningP99Factor: 3,
  longRunningLeaseFactor: 10,
  reapsPer5m: 10,
  reapClaimRatio: 0.2,
  reapRatioMinClaims: 10,
  rateRiseFactor: 2,
  rateMinEvents: 5,
  pendingAgeMs: 60_000,
  duplicateExecutionsPer5m: 5,
};

/**
 * What each threshold may be set to, per queue: [min, max, whole number?].
 * Ratios are shares (0..1]; factors multiply a measured value; counts and ms are whole.
 */
export const ALERT_THRESHOLD_LIMITS: Record<keyof AlertThresholds, { min: number; max: number; integer: boolean; help: string }> = {
  heartbeatLagFactor: { min: 1, max: 1_000, integer: false, help: 'a running job is late past this many heartbeat intervals without a heartbeat' },
  heartbeatLateJobs: { min: 1, max: 1_000_000, integer: true, help: 'heartbeat_lag fires when at least this many jobs of live workers are late' },
  heartbeatLateShare: { min: 0.001, max: 1, integer: false, help: '... or when late ones are at least this share of the running jobs of live workers' },
  longRunningP99Factor: { min: 1, max: 1_000, integer: false, help: 'long_running fires past this many times the p99 runtime (and the lease)' },
  longRunningLeaseFactor: { min: 1, max: 1_000, integer: false, help: 'without runtime history, long_running fires past this many leases' },
  reapsPer5m: { min: 0, max: 1_000_000, integer: true, help: 'reaper_burst fires above this many reaps in 5 minutes' },
  reapClaimRatio: { min: 0.001, max: 1, integer: false, help: '... or when reaps exceed this share of claims in 5 minutes' },
  reapRatioMinClaims: { min: 0, max: 1_000_000, integer: true, help: '... once there were at least this many claims' },
  rateRiseFactor: { min: 1, max: 1_000, integer: false, help: "enqueue_dedup_rate / stale_write_rate fire at this many times the hour's rate" },
  rateMinEvents: { min: 0, max: 1_000_000, integer: true, help: '... with at least this many events in 5 minutes' },
  pendingAgeMs: { min: 1_000, max: 30 * 24 * 3_600_000, integer: true, help: 'pending_backlog fires when the oldest ready job waited this long' },
  duplicateExecutionsPer5m: { min: 0, max: 1_000_000, integer: true, help: 'duplicate_executions fires above this many duplicate executions in 5 minutes' },
};

/**
 * A queue's stored overrides (JSON text from queues.alert_thresholds), keeping
 * only known fields with values in their limits: a row edited by hand cannot
 * break alerting for every queue.
 */
export function parseQueueAlertThresholds(text: string | null | undefined): Partial<AlertThresholds> {
  if (!text) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return {};
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return {};
  const out: Partial<AlertThresholds> = {};
  for (const [key, limit] of Object.entries(ALERT_THRESHOLD_LIMITS) as [keyof AlertThresholds, (typeof ALERT_THRESHOLD_LIMITS)[keyof AlertThresholds]][]) {
    const v = (value as Record<string, unknown>)[key];
    if (typeof v === 'number' && Number.isFinite(v) && v >= limit.min && v <= limit.max && (!limit.integer || Number.isInteger(v))) out[key] = v;
  }
  return out;
}

