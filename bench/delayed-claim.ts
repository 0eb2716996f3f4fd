/**
 * A claim and a waiting claim's look (queueClaimableCount) on a queue whose
 * pending jobs are all delayed (nothing due): milliseconds per call, median
 * of 15, with N delayed jobs (default 100,000). Before the claim's due guard
 * (claim.ts, anyDueSql) both walked every not yet due pending job.
 * `npx tsx bench/delayed-claim.ts [N]`.
 */
import { DB_CLOCK } from '../src/core/clock.ts';
import { defaultConfig } from '../src/core/config.ts';
import { jobsClaimPending, queueClaimableCount } from '../src/db/store/claim.ts';
import { median, now, openTempDb } from './lib.ts';
const config = defaultConfig();
const db = await openTempDb('delayed');
const N = Number(process.argv[2] ?? 100_000);
const T = Date.now();
await db.client.execute({ sql: `INSERT INTO queues (name, created_at, updated_at) VALUES ('q', ?1, ?1)`, args: [T] });
await db.client.execute({ sql: `INSERT INTO jobs (queue_name, payload, max_attempts, available_at, last_event_actor, created_at, updated_at)
  WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?2) SELECT 'q', '{}', 5, ?1 + 3600000 + i, 'b', ?1, ?1 FROM s`, args: [T, N] });
const count: number[] = [], claim: number[] = [];
for (let i = 0; i < 15; i++) {
  let t0 = now(); const n = await queueClaimableCount(db.db, { queue: 'q', cap: 100, now: DB_CLOCK }); count.push(now() - t0);
  t0 = now(); const c = await jobsClaimPending(db.db, { queue: 'q', workerId: 'w', limit: 100, now: DB_CLOCK, defaults: config }); claim.push(now() - t0);
  if (n !== 0 || c.length !== 0) throw new Error('something was due');
}
console.log(`${N} delayed: claimable count ms median ${median(count).toFixed(2)}, claim ms median ${median(claim).toFixed(2)}`);
db.done();
