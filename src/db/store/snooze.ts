/**
 * Snooze, by the job's owner: "not now, try again in N" (src/core/snooze.ts).
 *
 * Precondition: the owner's guard (owned.ts), before the attempt's deadline
 * (like a release, a snooze keeps the job), and the job has snoozed fewer
 * times than its queue's maxSnoozes.
 * Postcondition: running -> pending, due at now + delayMs, the attempt given
 * back (attempt_count - 1, no error recorded, last_error kept), snoozes + 1,
 * a `snoozed` event (counted per queue). The same snooze sent again under the
 * same token (its answer was lost) is answered as stored.
 * No row back: `lease_lost` / `not_found` as for any owned write, or
 * `snooze_limit` when the guard held but the limit was reached: nothing
 * changed and the job is still the worker's.
 */
import { sql } from 'drizzle-orm';
import type { Db } from '../db.ts';
import { nowSql } from '../sql.ts';
import { CLEAR_LEASE, finishedWriteSql, ownedWriteThen } from './owned.ts';
import type { JobRecord } from '../../core/job-record.ts';
import type { SnoozeOutcome, SnoozeParams } from './port-types.ts';

export async function jobSnoozeIfOwned(db: Db, p: SnoozeParams): Promise<SnoozeOutcome> {
  const now = nowSql(p.now);
  const write = finishedWriteSql('snooze', p.workerId, p.delayMs);
  const limit = sql`coalesce((SELECT q.max_snoozes FROM queues q WHERE q.name = jobs.queue_name), ${p.defaultMaxSnoozes})`;
  const repeat = { match: sql`j.finished_token IS v.token AND j.finished_write IS ${write}`, returning: sql`*` };
  const { outcomes, then } = await ownedWriteThen<JobRecord, { id: number; snoozes: number; max_snoozes: number }>(
    db,
    { refs: [{ id: p.id, lockToken: p.lockToken }], workerId: p.workerId, write: 'snooze', now: p.now, beforeDeadline: true, repeat },
    (v, guard) => sql`UPDATE jobs SET status = 'pending', attempt_count = jobs.attempt_count - 1, snoozes = jobs.snoozes + 1,
        available_at = ${now} + ${p.delayMs}, ${CLEAR_LEASE}, finished_token = v.token, finished_write = ${write}, updated_at = ${now},
        last_event = 'snoozed', last_event_reason = ${`for ${p.delayMs} ms`}, last_event_actor = ${p.workerId}
      FROM ${v} AS v WHERE ${guard} AND jobs.snoozes < ${limit} RETURNING *`,
    // Still the worker's after the update: its guard held, so the limit refused it.
    [db.all(sql`SELECT id, snoozes, ${limit} AS max_snoozes FROM jobs WHERE id = ${p.id} AND status = 'running' AND lock_token = ${p.lockToken} AND locked_by = ${p.workerId}`)],
  );
  const [over] = then;
  if (over) return { id: p.id, ok: false, reason: 'snooze_limit', snoozes: Number(over.snoozes), maxSnoozes: Number(over.max_snoozes) };
  return outcomes[0]!;
}
