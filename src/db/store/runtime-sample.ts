/**
 * The runtimes leasehold learns "normal" from: the newest jobs finished in
 * the last hour (at most RECENT_SAMPLE, a range of jobs_finished_idx, so the
 * cost stays flat however busy the hour was and however many finished jobs
 * are kept), and nearest-rank percentiles of the completed ones. The metrics
 * snapshot (metrics.ts: tuning, the long_running alert) and the suspect rule
 * (suspects.ts: the dashboard's zombies and jobs pages) read the same sample,
 * so the page and the alert agree.
 */
import { sql, type SQL } from 'drizzle-orm';
import { METRIC_WINDOWS, type QueueMetrics } from '../../core/metrics-snapshot.ts';

/** Attempts and runtime percentiles come from at most this many of the last hour's finished jobs. */
export const RECENT_SAMPLE = 5_000;

/**
 * "The last hour" of finished jobs, newest first, at most RECENT_SAMPLE rows,
 * as a subquery. (Exact over 42k rows it took ~300 ms per poll,
 * bench/dashboard.ts.) INDEXED BY: left alone, SQLite (after ANALYZE) scanned
 * jobs_queue_status_id_idx.
 */
export const recentFinishedSql = (now: SQL): SQL => sql`(SELECT queue_name, status, attempt_count, errored_attempts, lost_attempts, started_at, completed_at, finished_at
    FROM jobs INDEXED BY jobs_finished_idx
    WHERE finished_at IS NOT NULL AND finished_at >= ${now} - ${METRIC_WINDOWS.longMs}
    ORDER BY finished_at DESC LIMIT ${RECENT_SAMPLE})`;

/** Nearest-rank percentiles (the value at rank ceil(p/100 x n), 1-based) of a non-empty list of runtimes. */
export function percentiles(values: number[]): NonNullable<QueueMetrics['runtime']> {
  const sorted = values.sort((a, b) => a - b);
  // Whole-number arithmetic: (p / 100) * n in floating point can land just above an integer.
  const at = (p: number) => sorted[Math.ceil((p * sorted.length) / 100) - 1]!;
  return { count: sorted.length, p50Ms: at(50), p95Ms: at(95), p99Ms: at(99), maxMs: sorted[sorted.length - 1]! };
}
