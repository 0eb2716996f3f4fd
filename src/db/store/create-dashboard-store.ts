/** The dashboard's section of createStore (port.ts, DashboardReads): each method delegates to its store function. */
import type { Db } from '../db.ts';
import type { DashboardReads } from './port.ts';
import { jobGetWithSettings, jobsListZombieCandidates, jobsRunningFlagged } from './dashboard-reads.ts';
import { suspectThresholds } from './suspects.ts';

export function createDashboardStore(db: Db): DashboardReads {
  return {
    jobsListZombieCandidates: (p) => jobsListZombieCandidates(db, p),
    jobsRunningFlagged: (p) => jobsRunningFlagged(db, p),
    jobGetWithSettings: (p) => jobGetWithSettings(db, p),
    suspectThresholds: (p) => suspectThresholds(db, p),
  };
}
