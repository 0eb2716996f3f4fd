/**
 * runMaintenancePass: one maintenance pass, the only thing the Node server's
 * interval, Deno.cron, a Workers `scheduled` handler, `leasehold reap` and
 * `POST /api/v1/reaper/run` call. It runs the services in order, each with
 * its own report:
 *
 * 0. rebaseAfterStepBackOnce (clock-step-back.ts): after the clock stepped
 *    back, leases renewed before the step counted from now, so that no dead
 *    owner's job waits the step out;
 * 1. reapLostLeases (reaper.ts): take back what the reaper's rules say;
 * 2. dependencyCascadesOnce (cascades.ts): bounded steps of the failure
 *    cascades owed (a failed, cancelled or retried job's dependents), among
 *    them those of the jobs the reaper just failed;
 * 3. schedulesOnce (schedules.ts): enqueue due occurrences of recurring jobs,
 *    each exactly once however many passes run at once;
 * 4. canaryRunsOnce (canary.ts): one decision for each canary requeue still
 *    watching (take its next step, stop it, or end it), after the reaper so
 *    a step never takes a job the reaper just took;
 * 5. pruneOnce (prune.ts): retention;
 * 6. sampleActivityOnce (activity.ts): the heartbeat lag history;
 * 7. alertsOnce (alerts.ts): evaluate alerts and tell the webhook. Its
 *    failure is reported in `alerts.error` and never fails the pass: the
 *    jobs are already taken back, and the next pass tries again.
 * 8. Last, the pass records that it completed (maintenance_state: when it
 *    started and finished), so /healthz, /metrics and the dashboard on any
 *    server or isolate can tell when no reaper runs any more
 *    (src/core/maintenance-watch.ts). A pass that throws before this records
 *    nothing, and the time it left behind ages.
 *
 * The time and `fetch` are the caller's, so tests run a pass at any instant
 * against any receiver. The services take the store port (src/db/store/port.ts):
 * maintenancePassOnce is the pass over a store (the admin API's, whose app has
 * one), and runMaintenancePass the same pass over a database handle,
 * building its store at this edge, for the runtimes and the public API
 * (src/index.ts).
 */
import type { AlertTransition } from '../core/alert-webhook.ts';
import type { Now } from '../core/clock.ts';
import type { Config } from '../core/config.ts';
import type { Db } from '../db/db.ts';
import { createStore } from '../db/store/create-store.ts';
import type { JobStore } from '../db/store/port.ts';
import { sampleActivityOnce } from './activity.ts';
import { canaryRunsOnce, type CanaryReport } from './canary.ts';
import { dependencyCascadesOnce, type CascadesReport } from './cascades.ts';
import { alertsOnce, NO_ALERTS_PASS, type AlertPassReport, type Fetch } from './alerts.ts';
import { pruneOnce } from './prune.ts';
import type { RefusedOwnerAnswer } from './owner-check.ts';
import { reapLostLeases, type ReaperObserver, type ReaperReport } from './reaper.ts';
import { rebaseAfterStepBackOnce, type StepBackReport } from './clock-step-back.ts';
import { schedulesOnce, type SchedulesReport } from './schedules.ts';

export interface MaintenancePassReport extends ReaperReport {
  /** The time the pass ran at (epoch ms). */
  at: number;
  /** Finished jobs pruned past their retention. */
  pruned: number;
  /** Recurring jobs: occurrences enqueued, found enqueued already, skipped as missed. */
  schedules: SchedulesReport;
  /** Canary requeues: steps taken, runs stopped by themselves, runs done. */
  canary: CanaryReport;
  /** Failure cascades: steps taken, edges settled, cascades still owed. */
  cascades: CascadesReport;
  alerts: AlertPassReport;
  /** The clock had stepped back: how far (at least) and how many running jobs were moved onto the clock as it is now. */
  clockStepBack?: StepBackReport;
}

/**
 * Told of each decision as the pass makes it, with what the report leaves
 * out (the job's queue and the worker that held it): the servers log one
 * line per job taken back and per alert that flips.
 */
export interface MaintenancePassObserver {
  job?: ReaperObserver;
  alert?(t: AlertTransition): void;
  /** An owner check answer refused (a redirect, an answer too long): counted already; the servers log it. */
  ownerCheckRefused?(r: RefusedOwnerAnswer): void;
}

export interface MaintenancePassOptions extends MaintenancePassObserver {
  /**
   * After a write of the pass committed that made `n` jobs of `queue`
   * claimable (a reaper requeue, a schedule's occurrence): the engine that
   * runs the pass wakes the claims waiting on it (src/engine/engine.ts).
   */
  jobsBecameClaimable?: (queue: string, n: number) => void;
  /** See reapLostLeases: a hold the caller knows of besides the database's (the servers write theirs there). */
  holdLostLeases?: { why: string };
  /** Where webhook POSTs and the owner check's GETs go through (default: the global fetch). */
  fetch?: Fetch;
  /**
   * The time the pass decides at, when the caller already read the clock for
   * it (a server's reaper judges that very reading for a step of the clock,
   * src/runtime/gap-watch.ts, and writes its hold before this pass reads a
   * lease). Absent: the pass reads the clock itself.
   */
  readAt?: number;
}

/** One pass over a database: its store is built here (createStore), at the edge. */
export function runMaintenancePass(db: Db, now: Now, config: Config, options: MaintenancePassOptions = {}): Promise<MaintenancePassReport> {
  return maintenancePassOnce(createStore(db), now, config, options);
}

/** One pass over the store port. */
export async function maintenancePassOnce(store: JobStore, now: Now, config: Config, options: MaintenancePassOptions = {}): Promise<MaintenancePassReport> {
  const at = typeof now === 'number' ? now : (options.readAt ?? (await store.readNow()));
  const clockStepBack = await rebaseAfterStepBackOnce(store, at, now, config);
  const reaped = await reapLostLeases(store, at, config, {
    holdLostLeases: options.holdLostLeases,
    onJob: options.job,
    ...(options.ownerCheckRefused ? { onOwnerCheckRefused: options.ownerCheckRefused } : {}),
    jobsBecameClaimable: options.jobsBecameClaimable,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  const cascades = await dependencyCascadesOnce(store, at, config, options.jobsBecameClaimable);
  const schedules = await schedulesOnce(store, at, config, options.jobsBecameClaimable);
  const canary = await canaryRunsOnce(store, at, config, options.jobsBecameClaimable);
  const [pruned] = await Promise.all([pruneOnce(store, at, config), sampleActivityOnce(store, at)]);
  let alerts: AlertPassReport;
  try {
    alerts = await alertsOnce(store, at, config, options.fetch ?? fetch, options.alert);
  } catch (err) {
    // A broken alert pass (a database error, a bug) is reported with the pass.
    alerts = { ...NO_ALERTS_PASS, error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) };
  }
  await store.maintenancePassRecord({ startedAt: at, now });
  return { at, ...reaped, pruned: pruned.jobs, schedules, canary, cascades, alerts, ...(clockStepBack ? { clockStepBack } : {}) };
}
