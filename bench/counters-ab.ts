/**
 * What the counters cost the hot path: the 8-slot claim+complete loop of
 * bench/inprocess.ts on fresh databases, in one process, in three variants:
 * - `all`: every migration as shipped;
 * - `no-live`: without the drizzle/0014 triggers (live_counts: pending and
 *   running per queue);
 * - `no-durable`: without the drizzle/0006 triggers (durable counters,
 *   duplicate-execution and once() counting) and 0015's counting ones;
 * - `none`: without those nor the drizzle/0004 ones (finished_counts,
 *   queue_minutes).
 * The variants take turns going first, `ROUNDS` rounds each (default 6).
 * Prints each variant's runs, medians and the ratios.
 * `npx tsx bench/counters-ab.ts [rounds]` (about 40 s per round).
 */
import { median, openTempDb, seedPending } from './lib.ts';
import { inProcessDriver } from './inprocess.ts';
import { runSlots } from './worker-loop.ts';

/** Every trigger drizzle/0004 adds. */
const DASHBOARD_TRIGGERS = ['jobs_finished_insert', 'jobs_finished_enter', 'jobs_finished_leave', 'jobs_finished_delete', 'jobs_minute_reaped'];
/** Every trigger drizzle/0006 adds, and those 0015 adds to count enqueues and completions from the job row. */
const DURABLE_TRIGGERS = ['events_count', 'events_count_finished', 'jobs_taken_back', 'jobs_duplicate_claim', 'effects_rerun', 'jobs_count_enqueued', 'jobs_count_inserted_finished', 'jobs_count_completed'];
/** Every trigger drizzle/0014 adds. */
const LIVE_TRIGGERS = ['jobs_live_insert', 'jobs_live_move', 'jobs_live_delete'];
const VARIANTS = {
  all: [],
  'no-live': LIVE_TRIGGERS,
  'no-durable': DURABLE_TRIGGERS,
  none: [...DURABLE_TRIGGERS, ...DASHBOARD_TRIGGERS],
} as const satisfies Record<string, readonly string[]>;
type Variant = keyof typeof VARIANTS;

const ROUNDS = Number(process.argv[2] ?? 6);
const names = Object.keys(VARIANTS) as Variant[];
const res = Object.fromEntries(names.map((v) => [v, [] as number[]])) as Record<Variant, number[]>;
for (let round = 0; round < ROUNDS; round++) {
  // Rotate the order, so no variant always runs first (or last) on a warming machine.
  const order = names.map((_, i) => names[(i + round) % names.length]!);
  for (const v of order) {
    const db = await openTempDb('ab');
    for (const t of VARIANTS[v]) await db.client.execute(`DROP TRIGGER ${t}`);
    await seedPending(db.client, 'bench', 20_000);
    const r = await runSlots(inProcessDriver(db.db), { total: 20_000, slots: 8, maxClaim: 50, maxSeconds: 6 });
    res[v].push(r.jobs / r.seconds);
    db.done();
  }
}
for (const v of names) console.log(v.padEnd(11), res[v].map((x) => x.toFixed(0)).join(' '), 'median', median(res[v]).toFixed(0));
console.log('ratio all / no-durable (what drizzle/0006 costs)', (median(res.all) / median(res['no-durable'])).toFixed(3));
// Paired: each round's variants ran back to back, so their ratio is less exposed to a host whose load drifts.
const paired = res.all.map((x, i) => x / res['no-durable'][i]!);
console.log('  median of per-round ratios', median(paired).toFixed(3), `(${paired.map((x) => x.toFixed(2)).join(' ')})`);
const pairedLive = res.all.map((x, i) => x / res['no-live'][i]!);
console.log('ratio all / no-live (what drizzle/0014 costs)', (median(res.all) / median(res['no-live'])).toFixed(3), 'per-round median', median(pairedLive).toFixed(3));
console.log('ratio no-durable / none (what drizzle/0004 costs)', (median(res['no-durable']) / median(res.none)).toFixed(3));
console.log('ratio all / none (every counter)', (median(res.all) / median(res.none)).toFixed(3));
