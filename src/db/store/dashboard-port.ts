/**
 * The dashboard's section of the store port (port.ts joins it to JobStore):
 * the reads only the dashboard's pages make. Everything else the dashboard
 * shows or does goes through the methods the API and the CLI use too
 * (jobsList, queuesHealth, metricsSnapshot, auditList, the operator actions,
 * auditInsert and the form tokens, ...). Each method is the store function of
 * the same name without its `db` argument, as in port.ts.
 *
 * Types only, from src/db/store, like port.ts.
 */
import type { DashboardReadDefaults, FlaggableJobView, RunningJobView, SuspectAware } from './dashboard-reads.ts';
import type { QueueSuspectThreshold } from './suspects.ts';

/** Running jobs with what the reaper's decision needs, and the suspect thresholds (store/dashboard-reads, suspects). */
export interface DashboardReads {
  /** The zombies page: expired lease, heartbeat over two intervals late, stalled, or suspect; oldest expiry first. */
  jobsListZombieCandidates(p: SuspectAware & { limit: number }): Promise<RunningJobView[]>;
  /** The running jobs among `ids` (a page of the jobs list), each with whether the zombies page lists it. */
  jobsRunningFlagged(p: SuspectAware & { ids: readonly number[] }): Promise<FlaggableJobView[]>;
  /** One job, in any status, with its queue's settings and its owner's liveness (the job page); with `now`, its suspect threshold. */
  jobGetWithSettings(p: { id: number; defaults: DashboardReadDefaults; now?: number; suspects?: readonly QueueSuspectThreshold[] }): Promise<RunningJobView | undefined>;
  /**
   * The suspect thresholds of the queues that may have suspect jobs now (a
   * live job past its lease): what the three reads above take as `suspects`
   * (store/suspects), so polls can share one read of the runtime sample.
   */
  suspectThresholds(p: { now: number; defaults: DashboardReadDefaults }): Promise<QueueSuspectThreshold[]>;
}
