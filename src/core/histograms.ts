/**
 * The durable histograms behind /metrics: job runtime, queue wait and the
 * heartbeat interval as the server sees it, per queue. Each observation is
 * counted once, in the transaction that made it (a claim's waits and a
 * completion's run times once per batch, src/db/store/attempt-stats.ts; a
 * renewal's interval by a trigger, drizzle/0022_histograms.sql), into one row per queue, histogram and bucket
 * of `histogram_buckets`: a plain count of the observations that fell in
 * that bucket (not cumulative) and their sum. Nothing prunes it, so like the
 * `_total` counters these never go down; /metrics adds the buckets up into
 * Prometheus' cumulative `_bucket{le}` series when it is read.
 *
 * The bucket bounds below are the ones the statements' CASE expressions use
 * (attempt-stats.ts writes them from here; the renewal trigger has its own
 * copy): change one only with a migration that changes the trigger too (test/store/histograms.test.ts
 * drives a value to each bound and one past it through the real statements).
 */

export type HistogramName = 'runtime' | 'queue_wait' | 'heartbeat_interval';

/**
 * Bounds, in ms, for durations of work and of waiting: from a job that takes
 * (or waits) 10 ms to one that takes an hour (the default deadline), roughly
 * 1-2.5-5 steps where jobs usually are, wider past a minute.
 */
const WORK_BOUNDS_MS = [10, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000, 900_000, 3_600_000] as const;

/**
 * Bounds, in ms, for the time between two renewals of one lease: fine around
 * the intervals workers are told to use (5 s by default, down to a few
 * hundred ms for short leases), then out to the multiples of the lease where
 * a job is about to be lost.
 */
const HEARTBEAT_BOUNDS_MS = [250, 500, 1_000, 2_000, 3_000, 5_000, 7_500, 10_000, 15_000, 20_000, 30_000, 60_000, 120_000] as const;

export interface HistogramSpec {
  /** The Prometheus base name (`_bucket`, `_sum`, `_count` are added). */
  metric: string;
  help: string;
  /** Finite upper bounds, ms, ascending; +Inf is implied. */
  boundsMs: readonly number[];
}

export const HISTOGRAMS: Record<HistogramName, HistogramSpec> = {
  runtime: {
    metric: 'leasehold_job_runtime_seconds',
    help: 'Run time of completed jobs (completed_at - started_at of the attempt that completed), counted at each completion.',
    boundsMs: WORK_BOUNDS_MS,
  },
  queue_wait: {
    metric: 'leasehold_job_queue_wait_seconds',
    help: 'How long a job waited to be claimed since it became claimable (enqueued, or due after a delay, retry backoff or requeue), counted at each claim.',
    boundsMs: WORK_BOUNDS_MS,
  },
  heartbeat_interval: {
    metric: 'leasehold_heartbeat_interval_seconds',
    help: "Time between consecutive lease renewals (heartbeat, extend, checkpoint) of one running claim as the server saw them, the first counted from the claim.",
    boundsMs: HEARTBEAT_BOUNDS_MS,
  },
};

export const HISTOGRAM_NAMES = Object.keys(HISTOGRAMS) as HistogramName[];

/**
 * The `le_ms` a stored row of the +Inf bucket carries (an observation above
 * every finite bound): the largest integer both SQLite and JavaScript hold
 * exactly, so it sorts last and reads back unchanged.
 */
export const OVERFLOW_LE_MS = Number.MAX_SAFE_INTEGER;

/** One histogram as read: cumulative buckets (leMs null: +Inf, equal to count), the count and the sum. */
export interface Histogram {
  count: number;
  sumMs: number;
  buckets: { leMs: number | null; count: number }[];
}

/** A stored row: the observations in one bucket (not cumulative) and their sum. */
export interface HistogramBucketRow {
  leMs: number;
  count: number;
  sumMs: number;
}

/**
 * Stored bucket rows to cumulative buckets over `bounds`. A row whose bound
 * is not one of `bounds` (bounds changed by a later migration) counts in the
 * first bound at or above it, so the buckets stay cumulative and `+Inf`
 * always equals the count.
 */
export function toHistogram(rows: readonly HistogramBucketRow[], bounds: readonly number[]): Histogram {
  const perBound = new Array<number>(bounds.length + 1).fill(0);
  let sumMs = 0;
  for (const r of rows) {
    const i = bounds.findIndex((b) => r.leMs <= b);
    perBound[i === -1 ? bounds.length : i]! += r.count;
    sumMs += r.sumMs;
  }
  let running = 0;
  const buckets = perBound.map((n, i) => {
    running += n;
    return { leMs: i < bounds.length ? bounds[i]! : null, count: running };
  });
  return { count: running, sumMs, buckets };
}
