/**
 * Per-group counts for display (the queue page, /metrics): a read of
 * job_groups, which the triggers of drizzle/0030 keep exact (a row per group
 * with pending or running jobs, none for a group without). Nothing here
 * writes.
 *
 * Bounded however many groups a queue has: per queue, the `limit` busiest
 * groups by pending + running (ties by group key, byte order), and the rest
 * summed into `other`. The busiest and the sums come from one statement, so
 * they are read at one instant: top + other is every grouped job of the queue.
 *
 * Cost: each queue's groups are read once through job_groups' primary key
 * (queue_name, group_key), for the sums, and once more for the busiest (a
 * sort that keeps only `limit` rows); no read of jobs
 * (test/store/query-plans.test.ts pins it). Measured on this machine with
 * 10,000 groups in one queue: about 2 ms (0.02 ms for a queue without
 * groups). An index on
 * (queue_name, pending + running DESC, ...) made the busiest a seek (about
 * 0.3 ms), but it is rewritten with every grouped enqueue, claim and finish
 * (about 4 µs more per job_groups update, 10% of a bare one) to speed up a
 * page view and a scrape: the hot path wins.
 */
import { sql } from 'drizzle-orm';
import type { Db } from '../db.ts';
import type { GroupCount, QueueGroupCounts } from './port-types.ts';

/**
 * Each queue with groups (one queue with `queue`), by name: its groups with
 * work, the `limit` busiest with their counts, and the rest summed. Queues
 * without groups are left out.
 */
export async function queuesGroupCounts(db: Db, p: { limit: number; queue?: string | undefined }): Promise<QueueGroupCounts[]> {
  const limit = Math.max(0, Math.floor(p.limit));
  const only = p.queue === undefined ? sql`` : sql`AND q.name = ${p.queue}`;
  const rows = await db.all<{ queue: string; top: string; totals: string }>(
    sql`SELECT q.name AS queue,
        (SELECT json_group_array(json_array(t.group_key, t.pending, t.running)) FROM (
          SELECT g.group_key, g.pending, g.running FROM job_groups g WHERE g.queue_name = q.name
          ORDER BY g.pending + g.running DESC, g.group_key LIMIT ${limit}) t) AS top,
        (SELECT json_array(count(*), sum(g.pending), sum(g.running)) FROM job_groups g WHERE g.queue_name = q.name) AS totals
      FROM queues q
      WHERE EXISTS (SELECT 1 FROM job_groups g WHERE g.queue_name = q.name) ${only}
      ORDER BY q.name`,
  );
  return rows.map((r) => {
    const top = (JSON.parse(r.top) as [string, number, number][]).map(([group, pending, running]): GroupCount => ({ group, pending: Number(pending), running: Number(running) }));
    // The statement's order, restated: an aggregate's order is not promised by SQL.
    top.sort((a, b) => b.pending + b.running - (a.pending + a.running) || byteOrder(a.group, b.group));
    const [groups, pending, running] = (JSON.parse(r.totals) as (number | null)[]).map(Number) as [number, number, number];
    const sum = (pick: (g: GroupCount) => number) => top.reduce((s, g) => s + pick(g), 0);
    return {
      queue: String(r.queue),
      groups,
      top,
      other: { groups: groups - top.length, pending: pending - sum((g) => g.pending), running: running - sum((g) => g.running) },
    };
  });
}

/** SQLite's BINARY order (UTF-8 bytes), which is code point order: UTF-16 units differ for characters past U+FFFF. */
function byteOrder(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}
