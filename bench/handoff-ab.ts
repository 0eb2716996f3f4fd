/**
 * What an enqueue that runs the waiting claim in its own transaction
 * (src/engine/claim-handoff.ts) saves against waking the claim to run its
 * own: one job at a time into one parked claim, as an idle worker sees work,
 * on two engines in one process (`handoff` on and off), each over a fresh
 * database, the variants taking turns. Per cycle (the enqueue through the
 * engine as the HTTP route calls it, and the claim's answer): process CPU
 * time, wall time from the enqueue call to the claim's answer, and write
 * transactions. `npx tsx bench/handoff-ab.ts [rounds] [cycles]` (default 5
 * rounds of 500); pin it to one CPU (`taskset -c 1`) on a VM whose CPUs differ.
 */
import { databaseClock } from '../src/core/clock.ts';
import { defaultConfig } from '../src/core/config.ts';
import { silentLogger } from '../src/core/log.ts';
import { createStore } from '../src/db/store/create-store.ts';
import { createEngine } from '../src/engine/engine.ts';
import { median, openTempDb } from './lib.ts';

const ROUNDS = Number(process.argv[2] ?? 5);
const CYCLES = Number(process.argv[3] ?? 500);
const VARIANTS = { woken: false, handoff: true } as const;
type Variant = keyof typeof VARIANTS;

async function run(variant: Variant): Promise<{ cpuUs: number; wallUs: number; commits: number }> {
  const db = await openTempDb(`handoff-${variant}`);
  let commits = 0;
  const batch = db.db.batch.bind(db.db);
  (db.db as { batch: unknown }).batch = (q: Parameters<typeof batch>[0]) => {
    commits++;
    return batch(q);
  };
  const engine = createEngine({ store: createStore(db.db), config: defaultConfig(), clock: databaseClock, log: silentLogger, handOffClaims: VARIANTS[variant] });
  try {
    // Warm up: the queue and the worker's row exist, statements prepared.
    await engine.enqueue('q', { payload: {} }, 'api');
    await engine.claim({ queue: 'q', workerId: 'w', limit: 1 });
    const walls: number[] = [];
    commits = 0;
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < CYCLES; i++) {
      const claim = engine.claim({ queue: 'q', workerId: 'w', limit: 1, waitMs: 5_000, claimId: `c${i}` });
      while (engine.claimWaiters.waiting === 0) await new Promise((r) => setImmediate(r));
      const t0 = performance.now();
      const [answer] = await Promise.all([claim, engine.enqueue('q', { payload: { i } }, 'api')]);
      walls.push(performance.now() - t0);
      if (answer.jobs.length !== 1) throw new Error(`${variant}: cycle ${i} claimed ${answer.jobs.length} jobs`);
    }
    const cpu = process.cpuUsage(cpu0);
    return { cpuUs: (cpu.user + cpu.system) / CYCLES, wallUs: median(walls) * 1000, commits: commits / CYCLES };
  } finally {
    engine.close();
    db.done();
  }
}

const results: Record<Variant, { cpuUs: number; wallUs: number; commits: number }[]> = { woken: [], handoff: [] };
for (let r = 0; r < ROUNDS; r++) {
  const order: Variant[] = r % 2 ? ['handoff', 'woken'] : ['woken', 'handoff'];
  for (const v of order) results[v].push(await run(v));
}
for (const v of Object.keys(results) as Variant[]) {
  const rs = results[v];
  console.log(`${v.padEnd(8)} CPU per job ${median(rs.map((x) => x.cpuUs)).toFixed(0)} us, enqueue to claim answer p50 ${median(rs.map((x) => x.wallUs)).toFixed(0)} us, ${median(rs.map((x) => x.commits)).toFixed(2)} transactions per job`);
}
const ratio = (k: 'cpuUs' | 'wallUs') => median(results.handoff.map((h, i) => h[k] / results.woken[i]![k]));
console.log(`handoff / woken, median of per-round ratios: CPU ${ratio('cpuUs').toFixed(3)}, wall ${ratio('wallUs').toFixed(3)}`);
process.exit(0);
