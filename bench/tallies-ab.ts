/**
 * What the claim's and completion's per-statement tallies (drizzle/0026)
 * save against the per-row triggers they replaced: the engine's hot transaction (complete 100
 * and claim the next 100 in one batch, in-process, as an SDK completion call
 * does), on fresh databases in one process, in two variants:
 * - `per-row`: the triggers as 0025 had them (the claimed counter from each
 *   claim event, the pending -> running live-count move and the rate window
 *   per claimed job; the completed counter, finished count and live-count
 *   move per completed job), and the tallies' views left in place doing
 *   nothing;
 * - `tally`: every migration as shipped.
 * `rate` runs both with a rate limit set on the queue (large enough never to
 * hold claims back), where the rate window's per-row update found its row.
 * The variants take turns going first; the figure is the process's CPU time
 * (process.cpuUsage) per job over the drain, median of rounds, and the ratio.
 * `npx tsx bench/tallies-ab.ts [rounds] [jobs]` (default 5 rounds of 20,000).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MIGRATIONS_DIR } from '../src/runtime/node.ts';
import { check, drainHotTransaction, median, openTempDb, seedPending } from './lib.ts';

const ROUNDS = Number(process.argv[2] ?? 5);
const JOBS = Number(process.argv[3] ?? 20_000);
const BATCH = 100;
const QUEUE = 'bench';

function triggerSql(file: string, name: string): string {
  const text = readFileSync(join(MIGRATIONS_DIR, file), 'utf8');
  const stmt = text.split('--> statement-breakpoint').find((s) => s.includes(`CREATE TRIGGER \`${name}\``));
  check(stmt, `${name} not found in drizzle/${file}`);
  return stmt.trim();
}

/** Back to 0025's per-row claim counting; the tally's view stays, counting nothing. */
const PER_ROW = [
  'DROP TRIGGER events_count',
  triggerSql('0006_durable_counters.sql', 'events_count'),
  'DROP TRIGGER jobs_live_move',
  triggerSql('0014_live_counts.sql', 'jobs_live_move'),
  'DROP TRIGGER jobs_count_claimed',
  triggerSql('0022_histograms.sql', 'jobs_count_claimed'),
  'DROP TRIGGER claim_tallies_add',
  'CREATE TRIGGER claim_tallies_add INSTEAD OF INSERT ON claim_tallies WHEN 0 BEGIN SELECT 1; END',
];
/** Back to 0025's per-row completion counting; the tally's view stays, counting nothing. */
const PER_ROW_COMPLETION = [
  'DROP TRIGGER jobs_count_completed',
  triggerSql('0022_histograms.sql', 'jobs_count_completed'),
  'DROP TRIGGER jobs_finished_enter',
  triggerSql('0004_rollups_and_alert_state.sql', 'jobs_finished_enter'),
  'DROP TRIGGER completion_tallies_add',
  'CREATE TRIGGER completion_tallies_add INSTEAD OF INSERT ON completion_tallies WHEN 0 BEGIN SELECT 1; END',
];
const VARIANTS = { 'per-row': [...PER_ROW, ...PER_ROW_COMPLETION], tally: [] } as const satisfies Record<string, readonly string[]>;
type Variant = keyof typeof VARIANTS;

async function drain(v: Variant, rate: boolean): Promise<number> {
  const db = await openTempDb(`claim-tally-${v}`);
  try {
    for (const statement of VARIANTS[v]) await db.client.execute(statement);
    await seedPending(db.client, QUEUE, JOBS);
    if (rate) await db.client.execute({ sql: 'UPDATE queues SET rate_max = 1000000000, rate_window_ms = 60000 WHERE name = ?', args: [QUEUE] });
    const { cpuUsPerJob, completed } = await drainHotTransaction(db, QUEUE, BATCH);
    check(completed === JOBS, `${v}: completed ${completed} of ${JOBS}`);
    const counted = await db.client.execute(`SELECT value FROM counters WHERE queue_name = '${QUEUE}' AND name = 'claimed'`);
    check(Number(counted.rows[0]?.value) === JOBS, `${v}: claimed counter ${counted.rows[0]?.value}, expected ${JOBS}`);
    const finished = await db.client.execute(`SELECT jobs FROM finished_counts WHERE queue_name = '${QUEUE}' AND status = 'completed'`);
    check(Number(finished.rows[0]?.jobs) === JOBS, `${v}: finished count ${finished.rows[0]?.jobs}, expected ${JOBS}`);
    return cpuUsPerJob;
  } finally {
    db.done();
  }
}

const names = Object.keys(VARIANTS) as Variant[];
for (const rate of [false, true]) {
  const res = Object.fromEntries(names.map((v) => [v, [] as number[]])) as Record<Variant, number[]>;
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? names : [...names].reverse();
    for (const v of order) res[v].push(await drain(v, rate));
  }
  const label = rate ? 'rate limit set' : 'no rate limit';
  for (const v of names) console.log(`${label} ${v.padEnd(8)} CPU us/job`, res[v].map((x) => x.toFixed(1)).join(' '), 'median', median(res[v]).toFixed(1));
  const paired = res.tally.map((x, i) => x / res['per-row'][i]!);
  console.log(`${label} ratio tally / per-row`, (median(res.tally) / median(res['per-row'])).toFixed(3), 'per-round median', median(paired).toFixed(3));
}
