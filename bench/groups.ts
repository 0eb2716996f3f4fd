/**
 * What groups cost the claim: the engine's hot transaction (complete 100 and
 * claim the next 100 in one batch, in-process, as an SDK completion call
 * does) over a queue whose jobs carry no group, 100 groups and 10,000 groups
 * (the jobs spread evenly, so every claim takes its turns across groups), on
 * fresh databases in one process, the variants taking turns. The figure is
 * the process's CPU time per job (process.cpuUsage) over the drain, median of
 * rounds, and each grouped variant's ratio to the ungrouped one per round.
 * `npx tsx bench/groups.ts [rounds] [jobs]` (default 5 rounds of 20,000).
 */
import type { Client } from '@libsql/client';
import { check, drainHotTransaction, median, openTempDb } from './lib.ts';

const ROUNDS = Number(process.argv[2] ?? 5);
const JOBS = Number(process.argv[3] ?? 20_000);
const QUEUE = 'bench';
const VARIANTS = { 'no groups': 0, '100 groups': 100, '10,000 groups': 10_000 } as const;
type Variant = keyof typeof VARIANTS;

/** `n` pending jobs, due now; with `groups`, job i in group i % groups (inserted with it, so the group triggers count them). */
async function seed(client: Client, n: number, groups: number): Promise<void> {
  const NOW = `CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)`;
  await client.execute({ sql: `INSERT INTO queues (name, created_at, updated_at) VALUES (?1, ${NOW}, ${NOW}) ON CONFLICT (name) DO NOTHING`, args: [QUEUE] });
  for (let done = 0; done < n; done += 10_000) {
    await client.execute({
      sql: `INSERT INTO jobs (queue_name, payload, max_attempts, available_at, group_key, last_event_actor, created_at, updated_at)
            WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?2), t(now) AS (SELECT ${NOW})
            SELECT ?1, json_object('n', ?3 + i), 5, t.now, CASE WHEN ?4 > 0 THEN 'g' || ((?3 + i) % ?4) END, 'bench', t.now, t.now FROM s, t ORDER BY i`,
      args: [QUEUE, Math.min(10_000, n - done), done, groups],
    });
  }
}

async function drain(v: Variant): Promise<number> {
  const db = await openTempDb(`groups-${v}`);
  try {
    await seed(db.client, JOBS, VARIANTS[v]);
    const { cpuUsPerJob, completed } = await drainHotTransaction(db, QUEUE);
    check(completed === JOBS, `${v}: completed ${completed} of ${JOBS}`);
    return cpuUsPerJob;
  } finally {
    db.done();
  }
}

const names = Object.keys(VARIANTS) as Variant[];
const res = Object.fromEntries(names.map((v) => [v, [] as number[]])) as Record<Variant, number[]>;
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? names : [...names].reverse();
  for (const v of order) res[v].push(await drain(v));
}
for (const v of names) {
  const ratios = res[v].map((x, i) => x / res['no groups'][i]!);
  console.log(`${v.padEnd(14)} CPU us/job ${res[v].map((x) => x.toFixed(1)).join(' ')}  median ${median(res[v]).toFixed(1)}  vs no groups, per-round median ${median(ratios).toFixed(2)}`);
}
