/**
 * Stalled jobs: running, still heartbeating (the lease is live), but their
 * progress and checkpoint have not changed for longer than their queue's
 * `stallMs`. A heartbeat only says the process is alive; a stall says the
 * handler may be stuck (a deadlock, hung I/O) while its heartbeat timer runs.
 * Stalled jobs are shown and alerted on, not taken back: the deadline does that.
 * The same rule in SQL: src/db/store/stalls.ts.
 */
export interface StallInput {
  progressedAt: number | null;
  startedAt: number | null;
  leaseExpiresAt: number | null;
  /** The queue's setting; null: stall detection off. */
  stallMs: number | null;
}

/** How long past its stallMs the job has gone without progress, or null when it is not stalled. */
export function stalledForMs(j: StallInput, now: number): number | null {
  if (j.stallMs === null || j.leaseExpiresAt === null || j.leaseExpiresAt < now) return null;
  const since = j.progressedAt ?? j.startedAt;
  if (since === null || now - since <= j.stallMs) return null;
  return now - since;
}
