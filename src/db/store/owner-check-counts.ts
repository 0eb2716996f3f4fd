/**
 * The owner check's refused answers (a redirect, an answer too long: see
 * src/maintenance/owner-check.ts), counted durably for
 * leasehold_owner_check_refused_total. They belong to no queue, so they are
 * kept in `counters` under the queue name '' (no queue can be named that),
 * label = the reason. One statement per pass that refused anything; never
 * decremented.
 */
import { sql } from 'drizzle-orm';
import type { Db } from '../db.ts';

/** counters.name of the refusals; queue_name is OUTSIDE_ANY_QUEUE. */
export const OWNER_CHECK_REFUSED = 'owner_check_refused';
export const OUTSIDE_ANY_QUEUE = '';

export async function ownerCheckRefusalsAdd(db: Db, p: { byReason: Readonly<Record<string, number>> }): Promise<void> {
  const rows = Object.entries(p.byReason).filter(([, n]) => n > 0);
  if (rows.length === 0) return;
  await db.run(sql`INSERT INTO counters (queue_name, name, label, value)
    SELECT ${OUTSIDE_ANY_QUEUE}, ${OWNER_CHECK_REFUSED}, r.value ->> '$[0]', r.value ->> '$[1]' FROM json_each(${JSON.stringify(rows)}) r WHERE true
    ON CONFLICT (queue_name, name, label) DO UPDATE SET value = value + excluded.value`);
}
