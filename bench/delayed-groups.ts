/**
 * A claim (limit 100) and a waiting claim's look (queueClaimableCount) on a
 * queue with N groups whose jobs are all delayed (never served, so first in
 * the round's order) and 10 groups with due work, against a plain queue with
 * N delayed jobs and due ones: milliseconds per call, median of 15.
 * `npx tsx bench/delayed-groups.ts [N]` (default 200,000).
 */
import { DB_CLOCK } from '../src/core/clock.ts';
import { defaultConfig } from '../src/core/config.ts';
import { jobsClaimPending, queueClaimableCount } from '../src/db/store/claim.ts';
import { median, now, openTempDb } from './lib.ts';

const config = defaultConfig();
const N = Number(process.argv[2] ?? 200_000);
const T = Date.now();

async function run(queue: 'grouped' | 'plain') {
  const db = await openTempDb(`delayed-groups-${queue}`);
  const g = (expr: string) => (queue === 'grouped' ? expr : 'NULL');
  await db.client.execute({ sql: `INSERT INTO queues (name, created_at, updated_at) VALUES ('q', ?1, ?1)`, args: [T] });
  // N delayed jobs (one per group), then 10 groups of 1,000 due jobs each.
  await db.client.execute({ sql: `INSERT INTO jobs (queue_name, payload, max_attempts, available_at, group_key, last_event_actor, created_at, updated_at)
    WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?2) SELECT 'q', '{}', 5, ?1 + 3600000 + i, ${g(`'later-' || i`)}, 'b', ?1, ?1 FROM s`, args: [T, N] });
  await db.client.execute({ sql: `INSERT INTO jobs (queue_name, payload, max_attempts, available_at, group_key, last_event_actor, created_at, updated_at)
    WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 10000) SELECT 'q', '{}', 5, ?1 - 1000, ${g(`'due-' || (i % 10)`)}, 'b', ?1, ?1 FROM s`, args: [T] });
  const count: number[] = [], claim: number[] = [];
  for (let i = 0; i < 15; i++) {
    let t0 = now(); const n = await queueClaimableCount(db.db, { queue: 'q', cap: 100, now: DB_CLOCK }); count.push(now() - t0);
    t0 = now(); const c = await jobsClaimPending(db.db, { queue: 'q', workerId: 'w', limit: 100, now: DB_CLOCK, defaults: config }); claim.push(now() - t0);
    if (n !== 100 || c.length !== 100) throw new Error(`expected 100 claimable and claimed, got ${n} and ${c.length}`);
  }
  console.log(`${queue.padEnd(7)} ${N} delayed: claimable count ms median ${median(count).toFixed(2)}, claim ms median ${median(claim).toFixed(2)}`);
  db.done();
}

await run('plain');
await run('grouped');
