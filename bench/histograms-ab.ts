/**
 * What the durable histograms (drizzle/0022) cost the hot path, as an A/B on
 * fresh databases in one process, the variants taking turns:
 * - `0022`: every migration as shipped;
 * - `before`: 0022's triggers put back as drizzle/0012 and 0015 left them
 *   (the claim's rate-window trigger and the completion counter without their
 *   histogram upserts, no trigger on lease renewals).
 * Two loops per variant: the 8-slot claim+complete loop of bench/inprocess.ts,
 * and a heartbeat loop (one worker renewing 8 leases per call, as the SDK's
 * lease keeper does). Prints each run, the medians and the per-round ratios,
 * of throughput and of this process's CPU time per job or renewal (the
 * database runs in this process, so CPU time per operation is its cost, and
 * much less exposed than throughput to other load on a shared machine).
 * `npx tsx bench/histograms-ab.ts [rounds]` (about 16 s per round).
 */
import { DB_CLOCK } from '../src/core/clock.ts';
import { defaultConfig } from '../src/core/config.ts';
import { jobsClaimPending } from '../src/db/store/claim.ts';
import { jobsHeartbeatIfOwned } from '../src/db/store/lease.ts';
import { inProcessDriver } from './inprocess.ts';
import { median, now, openTempDb, seedPending } from './lib.ts';
import { runSlots } from './worker-loop.ts';

const BEFORE_0022 = [
  'DROP TRIGGER jobs_heartbeat_interval',
  'DROP TRIGGER jobs_count_claimed',
  `CREATE TRIGGER jobs_rate_count AFTER UPDATE OF status ON jobs WHEN NEW.status = 'running' AND OLD.status <> 'running'
   BEGIN
     UPDATE queues SET
       rate_claims = CASE WHEN rate_window_start = NEW.started_at - NEW.started_at % rate_window_ms THEN rate_claims + 1 ELSE 1 END,
       rate_window_start = NEW.started_at - NEW.started_at % rate_window_ms
     WHERE name = NEW.queue_name AND rate_max IS NOT NULL;
   END`,
  'DROP TRIGGER jobs_count_completed',
  `CREATE TRIGGER jobs_count_completed AFTER UPDATE OF last_event ON jobs WHEN NEW.last_event = 'completed' AND OLD.status IS NOT NEW.status
   BEGIN
     INSERT INTO counters (queue_name, name, label, value) VALUES (NEW.queue_name, 'completed', '', 1)
       ON CONFLICT (queue_name, name, label) DO UPDATE SET value = value + 1;
   END`,
];
const VARIANTS = { '0022': [], before: BEFORE_0022 } as const satisfies Record<string, readonly string[]>;
type Variant = keyof typeof VARIANTS;

const ROUNDS = Number(process.argv[2] ?? 4);
const SECONDS = 4;
const config = defaultConfig();
const names = Object.keys(VARIANTS) as Variant[];
const loops = {
  cycle: 'claim+complete jobs/s (8 slots)',
  cycleCpu: 'claim+complete: CPU us per job',
  beat: 'lease renewals/s (8 per call)',
  beatCpu: 'lease renewals: CPU us per renewal',
} as const;
const res = Object.fromEntries(names.map((v) => [v, { cycle: [], cycleCpu: [], beat: [], beatCpu: [] }])) as unknown as Record<Variant, Record<keyof typeof loops, number[]>>;
/** CPU time (user + system) of this process since `from`, in microseconds. */
const cpuSince = (from: NodeJS.CpuUsage) => {
  const d = process.cpuUsage(from);
  return d.user + d.system;
};

for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? names : [...names].reverse();
  for (const v of order) {
    const db = await openTempDb('hist-ab');
    try {
      for (const statement of VARIANTS[v]) await db.client.execute(statement);
      await seedPending(db.client, 'bench', 20_000);
      const cpu0 = process.cpuUsage();
      const r = await runSlots(inProcessDriver(db.db), { total: 20_000, slots: 8, maxClaim: 50, maxSeconds: SECONDS });
      res[v].cycleCpu.push(cpuSince(cpu0) / r.jobs);
      res[v].cycle.push(r.jobs / r.seconds);

      await seedPending(db.client, 'beat', 8);
      const held = await jobsClaimPending(db.db, { queue: 'beat', workerId: 'keeper', limit: 8, leaseMs: 3_600_000, now: DB_CLOCK, defaults: config });
      const leases = held.map((j) => ({ id: j.id, lockToken: j.lock_token! }));
      const t0 = now();
      const cpu1 = process.cpuUsage();
      let renewed = 0;
      while (now() - t0 < SECONDS * 1000) {
        const out = await jobsHeartbeatIfOwned(db.db, { workerId: 'keeper', leases, now: DB_CLOCK });
        renewed += out.filter((o) => o.ok).length;
      }
      res[v].beatCpu.push(cpuSince(cpu1) / renewed);
      res[v].beat.push(renewed / ((now() - t0) / 1000));
    } finally {
      db.done();
    }
  }
}
for (const loop of Object.keys(loops) as (keyof typeof loops)[]) {
  console.log(loops[loop]);
  for (const v of names) console.log(' ', v.padEnd(7), res[v][loop].map((x) => x.toFixed(1)).join(' '), 'median', median(res[v][loop]).toFixed(1));
  const paired = res['0022'][loop].map((x, i) => x / res.before[loop][i]!);
  console.log('  0022 / before: medians', (median(res['0022'][loop]) / median(res.before[loop])).toFixed(3), 'per-round median', median(paired).toFixed(3), `(${paired.map((x) => x.toFixed(2)).join(' ')})`);
}
