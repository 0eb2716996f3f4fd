/**
 * What the routine event rows cost (issue 15, drizzle/0015): the in-process
 * paths of bench/inprocess.ts on fresh databases, in one process, in two
 * variants that take turns going first:
 * - `events`: the audit triggers as they were before 0015 (an `enqueued` and
 *   a `completed` event row per clean job, counted by the events triggers);
 * - `derived`: every migration as shipped (a clean job's only event row is
 *   its claim; the enqueue and completion are counted from the job row and
 *   derived in the timeline).
 * Per round and variant: single enqueues, bulk enqueues (500 per call), the
 * 8-slot claim+complete loop and the naive claim 1 / complete 1 loop (8
 * loops), and the event rows each clean job left behind.
 * `npx tsx bench/events-ab.ts [rounds]` (default 5; about 25 s per round).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DB_CLOCK } from '../src/core/clock.ts';
import { defaultConfig } from '../src/core/config.ts';
import { jobsInsert, SUMMARY_COLUMNS } from '../src/db/store/enqueue.ts';
import { MIGRATIONS_DIR } from '../src/runtime/node.ts';
import { inProcessDriver } from './inprocess.ts';
import { check, median, now, openTempDb, seedPending } from './lib.ts';
import { runNaive, runSlots } from './worker-loop.ts';

const ROUNDS = Number(process.argv[2] ?? 5);
const config = defaultConfig();
const QUEUE = 'bench';

/** A trigger's CREATE statement as a migration file has it. */
function triggerSql(file: string, name: string): string {
  const text = readFileSync(join(MIGRATIONS_DIR, file), 'utf8');
  const stmt = text.split('--> statement-breakpoint').find((s) => s.includes(`CREATE TRIGGER \`${name}\``));
  check(stmt, `${name} not found in drizzle/${file}`);
  return stmt.trim();
}

/** Back to the triggers of drizzle/0001 (one event row per transition, enqueue and completion included). */
const BEFORE_0015 = [
  'DROP TRIGGER jobs_count_enqueued',
  'DROP TRIGGER jobs_count_completed',
  'DROP TRIGGER jobs_audit_transition',
  triggerSql('0001_audit_triggers.sql', 'jobs_audit_enqueued'),
  triggerSql('0001_audit_triggers.sql', 'jobs_audit_transition'),
];
const VARIANTS = { events: BEFORE_0015, derived: [] } as const satisfies Record<string, readonly string[]>;
type Variant = keyof typeof VARIANTS;
const METRICS = ['enqueueSingle', 'enqueueBulk', 'slots8', 'naive', 'eventsPerJob'] as const;
type Metric = (typeof METRICS)[number];

async function fresh(v: Variant) {
  const db = await openTempDb(`events-ab-${v}`);
  for (const statement of VARIANTS[v]) await db.client.execute(statement);
  return db;
}

async function round(v: Variant): Promise<Record<Metric, number>> {
  const out = {} as Record<Metric, number>;
  {
    const db = await fresh(v);
    const t0 = now();
    let calls = 0;
    while (calls < 3_000 && now() - t0 < 6_000) {
      await jobsInsert(db.db, { queue: QUEUE, jobs: [{ payload: { n: calls } }], actor: 'bench', now: DB_CLOCK, defaults: config });
      calls++;
    }
    out.enqueueSingle = calls / ((now() - t0) / 1000);
    const t1 = now();
    let inserted = 0;
    for (let b = 0; b < 40 && now() - t1 < 6_000; b++) {
      const jobs = Array.from({ length: 500 }, (_, i) => ({ payload: { n: b * 500 + i } }));
      inserted += (await jobsInsert(db.db, { queue: QUEUE, jobs, actor: 'bench', now: DB_CLOCK, defaults: config, columns: SUMMARY_COLUMNS })).length;
    }
    out.enqueueBulk = inserted / ((now() - t1) / 1000);
    db.done();
  }
  {
    const db = await fresh(v);
    await seedPending(db.client, QUEUE, 20_000);
    const r = await runSlots(inProcessDriver(db.db), { total: 20_000, slots: 8, maxClaim: 50, maxSeconds: 6 });
    out.slots8 = r.jobs / r.seconds;
    // Every job the loop finished is a clean one: enqueued, claimed once, completed.
    const [row] = (await db.client.execute(`SELECT (SELECT count(*) FROM events WHERE job_id IN (SELECT id FROM jobs WHERE status = 'completed')) AS events,
        (SELECT count(*) FROM jobs WHERE status = 'completed') AS done`)).rows;
    check(Number(row!.done) === r.jobs, `${v}: ${row!.done} completed, the loop says ${r.jobs}`);
    out.eventsPerJob = Number(row!.events) / Number(row!.done);
    db.done();
  }
  {
    const db = await fresh(v);
    await seedPending(db.client, QUEUE, 5_000);
    const r = await runNaive(inProcessDriver(db.db), { total: 5_000, loops: 8, maxSeconds: 6 });
    out.naive = r.jobs / r.seconds;
    db.done();
  }
  return out;
}

const names = Object.keys(VARIANTS) as Variant[];
const res = Object.fromEntries(names.map((v) => [v, [] as Record<Metric, number>[]])) as Record<Variant, Record<Metric, number>[]>;
for (let r = 0; r < ROUNDS; r++) {
  // Rotate the order, so neither variant always runs first on a warming machine.
  for (const v of r % 2 === 0 ? names : [...names].reverse()) res[v].push(await round(v));
}
const med = (v: Variant, m: Metric) => median(res[v].map((x) => x[m]));
for (const m of METRICS) {
  const digits = m === 'eventsPerJob' ? 2 : 0;
  for (const v of names) console.log(`${m.padEnd(13)} ${v.padEnd(8)} ${res[v].map((x) => x[m].toFixed(digits)).join(' ')}  median ${med(v, m).toFixed(digits)}`);
  // Paired: each round's variants ran back to back, so their ratio is less exposed to a host whose load drifts.
  const paired = median(res.derived.map((x, i) => x[m] / res.events[i]![m]));
  console.log(`${m.padEnd(13)} derived / events: ${(med('derived', m) / med('events', m)).toFixed(3)} (median of per-round ratios ${paired.toFixed(3)})`);
}
