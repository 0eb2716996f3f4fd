/**
 * What the routine event rows cost (drizzle/0015): the in-process
 * paths of bench/inprocess.ts on fresh databases, in one process, in two
 * variants:
 * - `events`: the audit triggers as they were before 0015 (an `enqueued` and
 *   a `completed` event row per clean job, counted by the events triggers);
 * - `derived`: every migration as shipped (a clean job's only event row is
 *   its claim; the enqueue and completion are counted from the job row and
 *   derived in the timeline).
 * Per round: single enqueues (2,000), bulk enqueues (500 per call, 20,000),
 * the 8-slot claim+complete loop (20,000) and the naive claim 1 / complete 1
 * loop (8 loops, 4,000), each on the two variants' databases side by side in
 * alternating slices; then the event rows each clean job left behind.
 * `npx tsx bench/events-ab.ts [rounds]` (default 5).
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
  'DROP TRIGGER jobs_count_inserted_finished',
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

/**
 * The two variants on two databases open side by side, the work cut into
 * CHUNKS slices that alternate A B B A ..., each variant's time summed: a
 * host whose load swings (2 cores shared with other work) slows both alike.
 */
const CHUNKS = 10;
type Timed = (v: Variant, db: Awaited<ReturnType<typeof fresh>>, chunk: number) => Promise<number>;

async function interleaved(prepare: (db: Awaited<ReturnType<typeof fresh>>) => Promise<void>, work: Timed): Promise<Record<Variant, number>> {
  const dbs = { events: await fresh('events'), derived: await fresh('derived') };
  const done = { events: 0, derived: 0 };
  const ms = { events: 0, derived: 0 };
  try {
    for (const v of names) await prepare(dbs[v]);
    for (let c = 0; c < CHUNKS; c++) {
      for (const v of c % 2 === 0 ? names : [...names].reverse()) {
        const t0 = now();
        done[v] += await work(v, dbs[v], c);
        ms[v] += now() - t0;
      }
    }
    return { events: done.events / (ms.events / 1000), derived: done.derived / (ms.derived / 1000) };
  } finally {
    for (const v of names) dbs[v].done();
  }
}

async function round(): Promise<Record<Variant, Record<Metric, number>>> {
  const out = { events: {}, derived: {} } as Record<Variant, Record<Metric, number>>;
  const put = (m: Metric, r: Record<Variant, number>) => names.forEach((v) => (out[v][m] = r[v]));
  put('enqueueSingle', await interleaved(async () => {}, async (_v, db, c) => {
    for (let i = 0; i < 200; i++) await jobsInsert(db.db, { queue: QUEUE, jobs: [{ payload: { n: c * 200 + i } }], actor: 'bench', now: DB_CLOCK, defaults: config });
    return 200;
  }));
  put('enqueueBulk', await interleaved(async () => {}, async (_v, db, c) => {
    let n = 0;
    for (let b = 0; b < 4; b++) {
      const jobs = Array.from({ length: 500 }, (_, i) => ({ payload: { n: (c * 4 + b) * 500 + i } }));
      n += (await jobsInsert(db.db, { queue: QUEUE, jobs, actor: 'bench', now: DB_CLOCK, defaults: config, columns: SUMMARY_COLUMNS })).length;
    }
    return n;
  }));
  put('slots8', await interleaved((db) => seedPending(db.client, QUEUE, 20_000), async (_v, db) => {
    const r = await runSlots(inProcessDriver(db.db), { total: 2_000, slots: 8, maxClaim: 50, maxSeconds: 10 });
    return r.jobs;
  }));
  put('naive', await interleaved((db) => seedPending(db.client, QUEUE, 5_000), async (_v, db) => {
    const r = await runNaive(inProcessDriver(db.db), { total: 400, loops: 8, maxSeconds: 10 });
    return r.jobs;
  }));
  // Event rows per clean job: enqueued through the store, claimed and completed by the loop.
  for (const v of names) {
    const db = await fresh(v);
    for (let b = 0; b < 4; b++) {
      await jobsInsert(db.db, { queue: QUEUE, jobs: Array.from({ length: 500 }, (_, i) => ({ payload: { n: b * 500 + i } })), actor: 'bench', now: DB_CLOCK, defaults: config, columns: SUMMARY_COLUMNS });
    }
    const r = await runSlots(inProcessDriver(db.db), { total: 2_000, slots: 8, maxClaim: 50, maxSeconds: 30 });
    const [row] = (await db.client.execute(`SELECT (SELECT count(*) FROM events) AS events, (SELECT count(*) FROM jobs WHERE status = 'completed') AS done`)).rows;
    check(Number(row!.done) === 2_000 && r.jobs === 2_000, `${v}: ${row!.done} completed of 2,000`);
    out[v].eventsPerJob = Number(row!.events) / Number(row!.done);
    db.done();
  }
  return out;
}

const names = Object.keys(VARIANTS) as Variant[];
const res = Object.fromEntries(names.map((v) => [v, [] as Record<Metric, number>[]])) as Record<Variant, Record<Metric, number>[]>;
for (let r = 0; r < ROUNDS; r++) {
  const one = await round();
  for (const v of names) res[v].push(one[v]);
}
const med = (v: Variant, m: Metric) => median(res[v].map((x) => x[m]));
for (const m of METRICS) {
  const digits = m === 'eventsPerJob' ? 2 : 0;
  for (const v of names) console.log(`${m.padEnd(13)} ${v.padEnd(8)} ${res[v].map((x) => x[m].toFixed(digits)).join(' ')}  median ${med(v, m).toFixed(digits)}`);
  const paired = res.derived.map((x, i) => x[m] / res.events[i]![m]);
  console.log(`${m.padEnd(13)} derived / events: ${(med('derived', m) / med('events', m)).toFixed(3)} (per-round ratios ${paired.map((x) => x.toFixed(2)).join(' ')}, median ${median(paired).toFixed(3)})`);
}
