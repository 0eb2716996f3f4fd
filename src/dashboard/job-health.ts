/**
 * What the jobs list says about a running job beyond "running": a zombie
 * (expired lease), a late heartbeat, a stall or a suspect (heartbeating far
 * past its queue's normal runtime), exactly when the zombies page
 * lists it (the same SQL condition, src/db/store/dashboard-reads.ts), with what the
 * reaper will do from the reaper's own decision (src/core/reaper.ts
 * decideReap, through reaperView). Pure: no HTML, no SQL.
 */
import type { Config } from '../core/config.ts';
import { fmtDuration, fmtRelative } from './format.ts';
import { jobStalledForMs, jobSuspectForMs, reaperView } from './reaper-view.ts';
import type { FlaggableJobView, RunningJobView } from '../db/store/port.ts';

export interface JobFlag {
  /**
   * zombie: the lease expired; late: heartbeat over two of its intervals
   * late; stalled: heartbeating without progress; suspect: heartbeating far
   * past its queue's normal runtime. A stalled job is suspect too (its label
   * says so); neither is taken back before its deadline.
   */
  kind: 'zombie' | 'late' | 'stalled' | 'suspect';
  /** Short text for the status cell. */
  label: string;
  /** The reaper's or the stall's reasoning, in full (a title). */
  why: string;
}

/** How long since a running job last heartbeated (or was claimed). */
export function heartbeatLag(j: RunningJobView, now: number): number | null {
  if (j.status !== 'running') return null;
  const last = j.last_heartbeat_at ?? j.started_at;
  return last === null ? null : now - last;
}

/** The interval a running job's worker was told (its claim's), else the queue's. */
export const heartbeatInterval = (j: RunningJobView) => j.job_heartbeat_ms ?? j.q_heartbeat_ms;

/** When the reaper acts, in a few words: "reaper: next pass", "reaper: in 12.0 s". */
function reaperWhen(j: RunningJobView, now: number, config: Config): { text: string; why: string } | null {
  const d = reaperView(j, now, config);
  if (d === null) return null;
  const takes = d.action === 'requeue' || d.action === 'fail' || d.takesAt <= now;
  return { text: takes ? 'reaper takes it at its next pass' : `reaper takes it ${fmtRelative(d.takesAt, now)} if nothing arrives`, why: d.why };
}

export function jobFlag(j: FlaggableJobView, now: number, config: Config): JobFlag | null {
  if (j.status !== 'running' || Number(j.zombie_candidate) !== 1) return null;
  const reaper = reaperWhen(j, now, config);
  const tail = reaper ? ` · ${reaper.text}` : '';
  if (j.lease_expires_at !== null && j.lease_expires_at < now) {
    return { kind: 'zombie', label: `zombie: lease expired ${fmtDuration(now - j.lease_expires_at)} ago${tail}`, why: reaper?.why ?? '' };
  }
  const stalled = jobStalledForMs(j, now);
  if (stalled !== null) {
    return {
      kind: 'stalled',
      label: `stalled: no progress for ${fmtDuration(stalled)} · suspect${deadlineText(j, now)}`,
      why: `heartbeating without progress past the queue's stall setting (${fmtDuration(j.q_stall_ms ?? 0)}); the reaper leaves it until its deadline${deadlineText(j, now)}`,
    };
  }
  const suspect = jobSuspectForMs(j, now);
  if (suspect !== null) {
    return {
      kind: 'suspect',
      label: `suspect: running ${fmtDuration(suspect)}, past ${fmtDuration(j.suspect_after_ms ?? 0)}${deadlineText(j, now)}`,
      why: suspectWhy(j),
    };
  }
  const lag = heartbeatLag(j, now);
  return {
    kind: 'late',
    label: `heartbeat late: ${lag === null ? '—' : fmtDuration(lag)} (interval ${fmtDuration(heartbeatInterval(j))})${tail}`,
    why: reaper?.why ?? '',
  };
}

/** ", deadline in 55 m 0 s": when the reaper takes a heartbeating job, the only thing that does. */
export function deadlineText(j: RunningJobView, now: number): string {
  return j.deadline_at === null ? '' : j.deadline_at > now ? ` · deadline ${fmtRelative(j.deadline_at, now)}` : ' · deadline passed: the reaper takes it at its next pass';
}

/** Why a job is suspect, in full (a title, and the job page). */
export function suspectWhy(j: RunningJobView): string {
  return `heartbeating, but running longer than its queue's normal runtime: ${j.suspect_basis ?? ''}. The reaper leaves a heartbeating job until its deadline; check the handler (a call that never returns), then force a requeue on the job page if it is stuck`;
}
