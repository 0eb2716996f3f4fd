/**
 * An operator deletes a queue, defined once for the API (DELETE
 * /api/v1/queues/:queue), the dashboard's queue page and `leasehold queues
 * delete`: the rule, the purge, and the one text of each refusal.
 *
 * The rule: a queue is deleted only when nothing in it would be lost
 * unasked. Pending or running jobs always refuse it (cancel them, or let
 * them finish: a delete never drops work); so does a schedule that enqueues
 * to it (delete or move the schedule first). Finished jobs (completed,
 * failed, cancelled, kept for retention) refuse it too, unless the operator
 * says `purge`: then they are deleted first, with their events and effects,
 * a batch at a time as retention prunes them. The delete itself is one
 * guarded batch (src/db/store/queue-delete.ts), audited with who did it and
 * the settings the queue had; an enqueue that lands in between wins, and the
 * delete is refused naming it.
 *
 * @example
 *   const done = await deleteQueue(store, { queue: 'emails', purge: false, audit });
 *   if (!done.deleted) throw new LeaseholdError(done.code, done.message, 'queue');
 */
import type { AuditEntry, FormNonce, JobStore, QueueBlockers } from '../db/store/port.ts';

/** Finished jobs deleted per batch by a purge (as retention's prune: the event loop stays free between batches). */
export const PURGE_BATCH = 1_000;

export type QueueDeleteOutcome =
  | { deleted: true; purgedFinishedJobs: number }
  | { deleted: false; code: 'not_found' | 'conflict'; message: string; blockers: QueueBlockers; purgedFinishedJobs: number };

/** Why a queue cannot be deleted, or null when nothing keeps it. */
export function queueDeleteRefusal(queue: string, b: QueueBlockers, purge: boolean): { code: 'not_found' | 'conflict'; message: string } | null {
  if (!b.exists) return { code: 'not_found', message: `no queue is named ${queue}` };
  const held: string[] = [];
  if (b.pending + b.running > 0) {
    held.push(`${b.pending} pending and ${b.running} running jobs (cancel them or let them finish: a delete never drops work)`);
  }
  if (b.schedules.length > 0) held.push(`schedules that enqueue to it (${b.schedules.join(', ')}: delete them first)`);
  if (b.finished > 0 && !purge) held.push(`${b.finished} finished jobs kept for retention (purge deletes them with the queue)`);
  if (held.length === 0) return null;
  return { code: 'conflict', message: `queue ${queue} still holds ${held.join('; and ')}; nothing was deleted` };
}

export async function deleteQueue(
  store: JobStore,
  p: { queue: string; purge: boolean; audit: Omit<AuditEntry, 'action' | 'queue' | 'target' | 'after'>; formNonce?: FormNonce },
): Promise<QueueDeleteOutcome> {
  let purged = 0;
  const refuse = (blockers: QueueBlockers) => {
    const r = queueDeleteRefusal(p.queue, blockers, p.purge);
    return r && ({ deleted: false, ...r, blockers, purgedFinishedJobs: purged } as const);
  };
  // Every refusal that does not depend on a race is said before anything is deleted.
  const first = refuse(await store.queueBlockers({ queue: p.queue }));
  if (first) return first;
  if (p.purge) {
    for (;;) {
      const n = await store.queueFinishedJobsPurge({ queue: p.queue, limit: PURGE_BATCH });
      purged += n;
      if (n < PURGE_BATCH) break;
      await new Promise<void>((resolve) => setTimeout(resolve, 0));
    }
  }
  const audit: AuditEntry = {
    ...p.audit,
    action: 'queue.delete',
    queue: p.queue,
    target: `queue ${p.queue}`,
    after: JSON.stringify({ deleted: true, purgedFinishedJobs: purged }),
  };
  if (await store.queueDeleteIfUnused({ queue: p.queue, also: { audit, ...(p.formNonce ? { formNonce: p.formNonce } : {}) } })) {
    return { deleted: true, purgedFinishedJobs: purged };
  }
  // Something landed in the queue between the check and the delete (an enqueue, a schedule): say what.
  const blockers = await store.queueBlockers({ queue: p.queue });
  return refuse(blockers) ?? { deleted: false, code: 'conflict', message: `queue ${p.queue} changed while it was being deleted; nothing was deleted`, blockers, purgedFinishedJobs: purged };
}
