/**
 * Redriving a dead-letter queue, written once for the API (and through it the
 * CLI and the client) and the dashboard, with the caution of a bulk requeue:
 *
 * - the plan (a dry run): how many dead letters match, and the first of them,
 *   lowest id first, with how each died. Changes nothing.
 * - the redrive: at most `limit` of them (the caller keeps it within
 *   LEASEHOLD_BULK_ACTION_CAP) back to their own queues, pending now with a
 *   fresh attempt budget, in one guarded statement with its audit entry
 *   (`jobs.bulk`, who and why, the count changed) and a form's one-time token
 *   in the same batch (src/db/store/dead-letters.ts). A reason is required.
 *   The engine's `redrive` wakes the claims waiting on each queue a job went
 *   back to, and the waits on those jobs.
 *
 * @example
 *   const plan = await planRedrive(store, { deadLetterQueue: 'emails-dead', limit: 100 });
 *   const moved = await engine.redrive({ deadLetterQueue: 'emails-dead', limit: 100, by, reason: 'smtp fixed', now });
 */
import type { Now } from '../core/clock.ts';
import type { Alongside, AuditActor, DeadLetterFilter, DeadLetterRow, JobStore, RedrivenJob } from '../db/store/port.ts';

/** What a redrive without a reason is told, by the API (400, field reason), the dashboard and the CLI. */
export const REDRIVE_NEEDS_REASON = 'a redrive needs a reason (kept in the audit trail)';

/** Matching dead letters are counted up to this many, as for bulk actions. */
export const REDRIVE_COUNT_LIMIT = 100_000;

export interface RedrivePlan {
  /** How many match, counted up to REDRIVE_COUNT_LIMIT. */
  matching: number;
  /** The first `limit` of them, lowest id first. */
  jobs: DeadLetterRow[];
}

/** What a redrive did: the jobs it moved, and how many went back to each queue (by queue name). */
export interface RedriveDone {
  moved: RedrivenJob[];
  movedTo: { queue: string; jobs: number }[];
}

/** How a dead letter died, as the API and the dashboard say it: "failed (attempts_exhausted)". */
export function diedText(j: Pick<DeadLetterRow, 'last_event' | 'last_event_reason'>): string {
  return `${j.last_event}${j.last_event_reason ? ` (${j.last_event_reason})` : ''}`;
}

/** The dry run: what a redrive with the same filter and limit would send back now. Changes nothing. */
export function planRedrive(store: Pick<JobStore, 'jobsDeadLetterList'>, p: DeadLetterFilter & { limit: number }): Promise<RedrivePlan> {
  return store.jobsDeadLetterList({ ...p, max: REDRIVE_COUNT_LIMIT });
}

/** The redrive itself, audited as a bulk action (its `after` gets the count changed in the same batch). */
export async function redriveDeadLetters(
  store: Pick<JobStore, 'jobsRedrive'>,
  p: DeadLetterFilter & { limit: number; by: AuditActor; reason: string; now: Now; also?: Pick<Alongside, 'formNonce'> | undefined },
): Promise<RedriveDone> {
  const audit = {
    by: p.by,
    action: 'jobs.bulk' as const,
    queue: p.deadLetterQueue,
    target: `redrive dead letters of ${p.deadLetterQueue}`,
    after: JSON.stringify({ redrive: p.deadLetterQueue, fromQueue: p.fromQueue ?? null, ids: p.ids?.map(String) ?? null, limit: p.limit }),
    reason: p.reason,
    now: p.now,
  };
  const moved = await store.jobsRedrive({
    deadLetterQueue: p.deadLetterQueue,
    fromQueue: p.fromQueue,
    ids: p.ids,
    actor: p.by.actor,
    reason: p.reason,
    now: p.now,
    limit: p.limit,
    also: { ...p.also, audit },
  });
  const counts = new Map<string, number>();
  for (const j of moved) counts.set(j.queue, (counts.get(j.queue) ?? 0) + 1);
  return { moved, movedTo: [...counts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([queue, jobs]) => ({ queue, jobs })) };
}
