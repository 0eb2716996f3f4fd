/**
 * What GET /queues, the overview and /metrics spend on counting as the
 * backlog grows: at each backlog size, the queue-health statement
 * (kept counts, drizzle/0014) next to the COUNT(*) over the pending index it
 * replaced, and GET /api/v1/queues and GET /metrics through the real app
 * (createApp + app.request, no socket), timed in the same run on the same file.
 * One job in 100 is due an hour later and a second queue holds 1,000 jobs.
 *
 *   npx tsx bench/counts.ts [size ...]     default 10000 1000000; COUNTS_READS (9) reads each
 *
 * 10,000,000 takes a few minutes to seed and about 3 GB of temp disk.
 */
import { createEngine } from '../src/engine/engine.ts';
import { createStore } from '../src/db/store/create-store.ts';
import { sql } from 'drizzle-orm';
import { createApp } from '../src/app.ts';
import { databaseClock } from '../src/core/clock.ts';
import { defaultConfig } from '../src/core/config.ts';
import { silentLogger } from '../src/core/log.ts';
import { queuesHealthSql } from '../src/db/store/read.ts';
import { median, now, openTempDb, seedPending } from './lib.ts';

const sizes = process.argv.length > 2 ? process.argv.slice(2).map(Number) : [10_000, 1_000_000];
const reads = Number(process.env.COUNTS_READS ?? 9);

for (const pending of sizes) {
  const db = await openTempDb('counts');
  try {
    const seeded = now();
    await seedPending(db.client, 'bench', pending);
    // A little of everything else a real queue has: delayed jobs and a second queue.
    await db.client.execute(`UPDATE jobs SET available_at = available_at + 3600000 WHERE id % 100 = 0`);
    await seedPending(db.client, 'other', 1_000);
    const seedS = (now() - seeded) / 1000;
    const time = async (run: () => Promise<unknown>) => {
      for (let i = 0; i < 3; i++) await run(); // warm: compiled code and prepared statements
      const xs: number[] = [];
      for (let i = 0; i < reads; i++) {
        const t0 = now();
        await run();
        xs.push(now() - t0);
      }
      return median(xs);
    };
    const app = createApp({ engine: createEngine({ store: createStore(db.db), config: defaultConfig({ databaseUrl: db.tmp.url }), clock: databaseClock, log: silentLogger }) });
    const get = (path: string) => async () => {
      const res = await app.request(path);
      if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
      await res.text();
    };
    const at = Date.now();
    const health = await time(() => db.db.all(queuesHealthSql({ now: at })));
    const scan = await time(() => db.db.all(sql`SELECT queue_name, count(*), sum(available_at <= ${at}) FROM jobs INDEXED BY jobs_claim_idx WHERE status = 'pending' GROUP BY queue_name`));
    const queues = await time(get('/api/v1/queues'));
    const metrics = await time(get('/metrics'));
    console.log(
      `${pending} pending (seeded in ${seedS.toFixed(0)} s): queue health ${health.toFixed(2)} ms, GET /api/v1/queues ${queues.toFixed(2)} ms, ` +
        `GET /metrics ${metrics.toFixed(2)} ms (medians of ${reads} after 3 warm-up reads); the pending-index COUNT(*) it replaced ${scan.toFixed(2)} ms`,
    );
  } finally {
    db.done();
  }
}
