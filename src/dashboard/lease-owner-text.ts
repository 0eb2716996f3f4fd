/** How a running job's lease and its owner read, on the job page and the zombies page. Pure: no HTML, no SQL. */
import type { Config } from '../core/config.ts';
import type { JobRecord } from '../core/job-record.ts';
import { fmtDuration, fmtRelative } from './format.ts';
import type { RunningJobView } from '../db/store/port.ts';

/** "12.0 s remaining", "overdue by 3.0 s"; — when the job holds no lease. */
export function leaseText(j: JobRecord, now: number): string {
  if (j.status !== 'running' || j.lease_expires_at === null) return '—';
  return j.lease_expires_at >= now ? `${fmtDuration(j.lease_expires_at - now)} remaining` : `overdue by ${fmtDuration(now - j.lease_expires_at)}`;
}

/** Who holds the job, and whether that worker still looks alive. */
export function ownerText(j: RunningJobView, now: number, config: Config): string {
  if (!j.locked_by) return '—';
  if (j.owner_replaced) return `${j.locked_by} (restarted since this claim: the process that claimed it is gone)`;
  if (j.owner_last_seen_at === null) return `${j.locked_by} (not registered)`;
  const alive = j.owner_last_seen_at >= now - config.workerAliveMs;
  return `${j.locked_by} (${alive ? 'alive' : 'not seen'}, last seen ${fmtRelative(j.owner_last_seen_at, now)})`;
}
