/**
 * What GET /queues, the overview and /metrics spend on counting as the
 * backlog grows (issue 15): the queue-health statement (kept counts,
 * drizzle/0014) at 10k and 1M pending jobs, next to the COUNT(*) over the
 * pending index it replaced, timed in the same run on the same file.
 * `npx tsx bench/counts.ts [small] [large] [reads]` (defaults 10000 1000000 9).
 */
import { sql } from 'drizzle-orm';
import { queuesHealthSql } from '../src/db/store/read.ts';
import { median, now, openTempDb, seedPending } from './lib.ts';

const sizes = [Number(process.argv[2] ?? 10_000), Number(process.argv[3] ?? 1_000_000)];
const reads = Number(process.argv[4] ?? 9);

for (const pending of sizes) {
  const db = await openTempDb('counts');
  try {
    await seedPending(db.client, 'bench', pending);
    // A little of everything else a real queue has: delayed jobs and a second queue.
    await db.client.execute(`UPDATE jobs SET available_at = available_at + 3600000 WHERE id % 100 = 0`);
    await seedPending(db.client, 'other', 1_000);
    const time = async (run: () => Promise<unknown>) => {
      const xs: number[] = [];
      for (let i = 0; i < reads; i++) {
        const t0 = now();
        await run();
        xs.push(now() - t0);
      }
      return median(xs);
    };
    const at = Date.now();
    const health = await time(() => db.db.all(queuesHealthSql({ now: at })));
    const scan = await time(() => db.db.all(sql`SELECT queue_name, count(*), sum(available_at <= ${at}) FROM jobs INDEXED BY jobs_claim_idx WHERE status = 'pending' GROUP BY queue_name`));
    console.log(`${pending} pending: queue health ${health.toFixed(2)} ms (median of ${reads}); the pending-index COUNT(*) it replaced ${scan.toFixed(2)} ms; ratio ${(health / scan).toFixed(3)}`);
  } finally {
    db.done();
  }
}
