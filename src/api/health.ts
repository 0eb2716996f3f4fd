/**
 * GET /healthz: the server serves and its database answers (200), with the
 * database's clock and whether a reaper still runs (`maintenance`, judged by
 * src/core/maintenance-watch.ts from the last pass any reaper recorded). A
 * late reaper does not make the answer fail: this process may be healthy
 * while another server's timer or a cron trigger is what stopped, and
 * restarting it would not help; alert on `maintenance.late` (or on
 * leasehold_maintenance_late in /metrics) instead.
 *
 * One batch of four small reads (maintenance-state.ts), so a probe stays cheap.
 */
import { maintenanceVerdict } from '../core/maintenance-watch.ts';
import type { AppDeps } from './deps.ts';

export interface HealthMaintenance {
  /** When the last maintenance pass (reaper) completed; null: none recorded on this database. */
  lastPassAt: string | null;
  /** Milliseconds since then, on the same clock the leases use; null: none recorded. */
  lastPassAgeMs: number | null;
  /** True while jobs run and the last pass is older than lateAfterMs (or none was recorded while leases are past grace). */
  late: boolean;
  /** LEASEHOLD_REAPER_INTERVAL_MS x 3. */
  lateAfterMs: number;
  runningJobs: number;
  /** Running jobs whose lease + grace has passed, read now. */
  expiredLeases: number;
  message: string;
}

export interface HealthWire {
  ok: true;
  databaseTime: string;
  maintenance: HealthMaintenance;
}

export async function healthBody(deps: Pick<AppDeps, 'store' | 'config' | 'clock'>): Promise<HealthWire> {
  const w = await deps.store.maintenanceWatch({ now: deps.clock.now(), defaults: deps.config });
  const verdict = maintenanceVerdict({ now: w.now, lastPassAt: w.lastCompletedAt, runningJobs: w.runningJobs, expiredLeases: w.expiredLeases, reaperIntervalMs: deps.config.reaperIntervalMs });
  return {
    ok: true,
    databaseTime: new Date(w.databaseNow).toISOString(),
    maintenance: {
      lastPassAt: w.lastCompletedAt === null ? null : new Date(w.lastCompletedAt).toISOString(),
      lastPassAgeMs: verdict.ageMs,
      late: verdict.late,
      lateAfterMs: verdict.lateAfterMs,
      runningJobs: w.runningJobs,
      expiredLeases: w.expiredLeases,
      message: verdict.message,
    },
  };
}
