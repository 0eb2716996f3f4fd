/**
 * Suspect jobs: running and heartbeating (the lease is live), but far beyond
 * what their queue's healthy jobs take. A handler that never returns while the
 * SDK's heartbeat timer runs keeps renewing its lease, so the reaper cannot
 * tell it from a slow job and leaves it until its deadline (one hour by
 * default); stall detection (src/core/stall.ts) sees it only on queues with
 * `stallMs` set. This rule needs no setting: it learns the normal runtime.
 *
 * The rule: a running job whose lease is live is suspect once it has run
 * (now - started_at, this attempt) longer than
 *
 *   max(k x p99, lease)     k = the queue's longRunningP99Factor (default 3),
 *                           p99 = nearest-rank 99th percentile of the
 *                           queue's jobs completed in the last hour,
 *                           lease = the queue's lease (the floor: a job
 *                           inside one lease has not yet needed a renewal);
 *   f x lease               without a completed job in the hour, f = the
 *                           queue's longRunningLeaseFactor (default 10).
 *
 * The runtimes are those tuning learns from (src/db/store/metrics.ts: the
 * newest 5,000 jobs finished in the last hour, completed ones only: failed,
 * cancelled and taken-back attempts are not "normal"). The same threshold is
 * the long_running alert's (src/core/alerts.ts), so the alert and the flag
 * agree; both thresholds can be set per queue (PUT /queues/:queue/alerts).
 *
 * Detection only: nothing takes a suspect job back. Its deadline does that.
 * The same condition in SQL: src/db/store/suspects.ts.
 */
import type { AlertThresholds } from './alert-thresholds.ts';

/** What the rule learns from: the queue's completed jobs in the window. */
export interface LearnedRuntime {
  count: number;
  p99Ms: number;
}

export interface SuspectThreshold {
  /** A live job that has run longer than this is suspect. */
  afterMs: number;
  /** How afterMs was made, for people: "max(3 x p99 runtime 4.0 s, lease 30 s)". */
  basis: string;
}

export type SuspectThresholds = Pick<AlertThresholds, 'longRunningP99Factor' | 'longRunningLeaseFactor'>;

/** The queue's threshold from its learned runtime (null: no completed job in the window), its lease and its thresholds. */
export function suspectThreshold(p: { runtime: LearnedRuntime | null; leaseMs: number; thresholds: SuspectThresholds }): SuspectThreshold {
  const { runtime, leaseMs, thresholds: t } = p;
  if (runtime === null || runtime.count === 0) {
    return { afterMs: leaseMs * t.longRunningLeaseFactor, basis: `${t.longRunningLeaseFactor} leases of ${seconds(leaseMs)} (no completed job in the last hour to learn from)` };
  }
  return {
    afterMs: Math.max(runtime.p99Ms * t.longRunningP99Factor, leaseMs),
    basis: `max(${t.longRunningP99Factor} x p99 runtime ${seconds(runtime.p99Ms)}, lease ${seconds(leaseMs)}), learned from ${runtime.count} completed in the last hour`,
  };
}

/** How long a running job has run when it is suspect (lease live, past afterMs), else null. */
export function suspectRanForMs(j: { startedAt: number | null; leaseExpiresAt: number | null }, afterMs: number | null, now: number): number | null {
  if (afterMs === null || j.startedAt === null || j.leaseExpiresAt === null || j.leaseExpiresAt < now) return null;
  const ran = now - j.startedAt;
  return ran > afterMs ? ran : null;
}

/** Milliseconds as seconds, short: 30 s, 0.25 s, 12.5 s. */
function seconds(ms: number): string {
  const s = ms / 1000;
  return `${Number.isInteger(s) ? s : s.toFixed(s < 10 ? 2 : 1)} s`;
}
