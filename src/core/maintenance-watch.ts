/**
 * Is the reaper running? Alerts are evaluated inside the maintenance pass,
 * so a pass that stops (a Workers cron trigger removed, a server whose timer
 * died, a `leasehold reap` cron that no longer fires) can page nobody by
 * itself. Each completed pass records its time in the database
 * (maintenance_state, written by src/maintenance/pass.ts), so every server,
 * isolate and scraper sees the same "last pass"; this is the rule that calls
 * it late, read by /healthz, /metrics (leasehold_maintenance_late) and the
 * dashboard's banner alike.
 *
 * Late: running jobs exist, and either the last completed pass is more than
 * LATE_AFTER_INTERVALS reaper intervals old, or no pass was ever recorded and
 * a running job's lease + grace has passed (a fresh database, or one from
 * before passes were recorded, is not late until something needs reaping).
 * Without running jobs nothing waits for the reaper to be taken back, so it
 * is not called late (schedules and retention still wait: the last pass time
 * says so).
 */

import type { MetricsSnapshot } from './metrics-snapshot.ts';

/** How many reaper intervals without a completed pass make it late. */
export const LATE_AFTER_INTERVALS = 3;

export interface MaintenanceWatchInput {
  /** The database's time the figures were read at. */
  now: number;
  /** When the last completed pass finished (epoch ms); null: none recorded. */
  lastPassAt: number | null;
  runningJobs: number;
  /** Running jobs whose lease + grace has passed: the reaper's to take (or to defer while their owner reports in). */
  expiredLeases: number;
  /** LEASEHOLD_REAPER_INTERVAL_MS: how often a pass is meant to run (a minute on Workers, its cron). */
  reaperIntervalMs: number;
}

export interface MaintenanceVerdict {
  late: boolean;
  /** A pass older than this is late (while jobs run). */
  lateAfterMs: number;
  /** now - lastPassAt; null when none was recorded. */
  ageMs: number | null;
  /** One sentence for people (the banner, /healthz). */
  message: string;
}

export function maintenanceVerdict(w: MaintenanceWatchInput): MaintenanceVerdict {
  const lateAfterMs = LATE_AFTER_INTERVALS * w.reaperIntervalMs;
  const ageMs = w.lastPassAt === null ? null : Math.max(0, w.now - w.lastPassAt);
  const expired = `${w.expiredLeases} running ${w.expiredLeases === 1 ? 'job is' : 'jobs are'} past lease + grace`;
  if (ageMs === null) {
    const late = w.runningJobs > 0 && w.expiredLeases > 0;
    return {
      late,
      lateAfterMs,
      ageMs,
      message: late
        ? `no maintenance pass has been recorded on this database, and ${expired}: is a reaper running (the in-process timer, the Workers cron, leasehold reap)?`
        : 'no maintenance pass recorded yet',
    };
  }
  const late = w.runningJobs > 0 && ageMs > lateAfterMs;
  const ago = `the last maintenance pass completed ${Math.round(ageMs / 1000)} s ago`;
  return {
    late,
    lateAfterMs,
    ageMs,
    message: late
      ? `${ago}, over ${LATE_AFTER_INTERVALS} reaper intervals (${Math.round(lateAfterMs / 1000)} s), while ${w.runningJobs} ${w.runningJobs === 1 ? 'job runs' : 'jobs run'} and ${expired}: the reaper may have stopped, and alerts are evaluated only by its passes`
      : ago,
  };
}

/** The verdict from a metrics snapshot (its last pass, and its queues' running and expired jobs). */
export function snapshotMaintenanceVerdict(m: Pick<MetricsSnapshot, 'now' | 'maintenance' | 'queues'>, reaperIntervalMs: number): MaintenanceVerdict {
  return maintenanceVerdict({
    now: m.now,
    lastPassAt: m.maintenance.lastCompletedAt,
    runningJobs: m.queues.reduce((s, q) => s + q.running.count, 0),
    expiredLeases: m.queues.reduce((s, q) => s + q.running.expiredPastGrace, 0),
    reaperIntervalMs,
  });
}
