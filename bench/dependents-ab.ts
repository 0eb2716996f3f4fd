/**
 * What it costs the hot path that a completion says whether jobs wait for
 * what it finished (hasDependentsSql, src/db/store/dependencies.ts: one
 * EXISTS probe of job_dependencies_dependency_idx per completed job, in the
 * completion's RETURNING), for jobs nothing waits for: the engine's hot
 * transaction (complete 100 and claim the next 100 in one batch,
 * in-process, as an SDK completion call does, as bench/lib.ts
 * drainHotTransaction runs it), in two variants:
 * - `constant`: the column reads a constant 0 (what the statement cost
 *   before it asked);
 * - `exists`: as shipped.
 * `edges` runs both with 50,000 unrelated edges in job_dependencies (other
 * flows' jobs), so the probe searches a real index rather than an empty one.
 * Each round drains one fresh database with two queues, one per variant,
 * a batch of each in turn (the order alternating), so load from elsewhere
 * on the machine falls on both alike; the figure is the process's CPU time
 * (process.cpuUsage) around each batch, per job, median of rounds, and the ratio.
 * `npx tsx bench/dependents-ab.ts [rounds] [jobs]` (default 7 rounds of 20,000).
 */
import { sql } from 'drizzle-orm';
import { hasDependentsSql } from '../src/db/store/dependencies.ts';
import { DB_CLOCK } from '../src/core/clock.ts';
import { defaultConfig } from '../src/core/config.ts';
import { jobsClaimPending } from '../src/db/store/claim.ts';
import { jobsCompleteThenClaim } from '../src/db/store/finish.ts';
import { check, median, openTempDb, seedPending } from './lib.ts';

const ROUNDS = Number(process.argv[2] ?? 7);
const JOBS = Number(process.argv[3] ?? 20_000);
const BATCH = 100;

const shipped = [...hasDependentsSql.queryChunks];
const constant = [...sql`0 AS has_dependents`.queryChunks];
const VARIANTS = ['constant', 'exists'] as const;
type Variant = (typeof VARIANTS)[number];

/** Leases held on a queue, as drainHotTransaction keeps them. */
type Held = { id: number; lockToken: string }[];

/**
 * One database, two queues of JOBS jobs each; each turn runs the hot
 * transaction once per variant (one on each queue, the order alternating),
 * so load from elsewhere on the machine falls on both alike. Answers the CPU
 * time per job of each variant over the whole drain.
 */
async function drainPaired(edges: boolean): Promise<Record<Variant, number>> {
  const db = await openTempDb('dependents-ab');
  try {
    const defaults = defaultConfig();
    const queueOf: Record<Variant, string> = { constant: 'a', exists: 'b' };
    for (const v of VARIANTS) await seedPending(db.client, queueOf[v], JOBS);
    if (edges) {
      // Edges between ids the drained jobs never have: job_dependencies has no foreign keys, and no trigger reads these.
      await db.client.execute(`INSERT INTO job_dependencies (dependent_id, dependency_id, state)
        WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 50000) SELECT 10000000 + i, 20000000 + i / 5, 'waiting' FROM s`);
    }
    const held = {} as Record<Variant, Held>;
    for (const v of VARIANTS) held[v] = (await jobsClaimPending(db.db, { queue: queueOf[v], workerId: 'w', limit: BATCH, now: DB_CLOCK, defaults })).map((j) => ({ id: j.id, lockToken: j.lock_token! }));
    const cpu: Record<Variant, number> = { constant: 0, exists: 0 };
    const completed: Record<Variant, number> = { constant: 0, exists: 0 };
    for (let turn = 0; held.constant.length > 0 || held.exists.length > 0; turn++) {
      for (const v of turn % 2 === 0 ? VARIANTS : [...VARIANTS].reverse()) {
        if (held[v].length === 0) continue;
        use(v);
        const c0 = process.cpuUsage();
        const r = await jobsCompleteThenClaim(db.db, {
          workerId: 'w',
          results: held[v].map((l) => ({ id: l.id, lockToken: l.lockToken, data: null })),
          now: DB_CLOCK,
          claim: { queue: queueOf[v], limit: BATCH },
          defaults,
        });
        const c = process.cpuUsage(c0);
        cpu[v] += c.user + c.system;
        completed[v] += r.outcomes.filter((o) => o.ok).length;
        check(r.outcomes.every((o) => o.ok && !o.dependents), `${v}: a job without dependents said it had some`);
        held[v] = r.claimed.map((j) => ({ id: j.id, lockToken: j.lock_token! }));
      }
    }
    for (const v of VARIANTS) check(completed[v] === JOBS, `${v}: completed ${completed[v]} of ${JOBS}`);
    return { constant: cpu.constant / JOBS, exists: cpu.exists / JOBS };
  } finally {
    use('exists');
    db.done();
  }
}

/** The one statement text the completion builds, swapped in place. */
function use(v: Variant) {
  hasDependentsSql.queryChunks.splice(0, hasDependentsSql.queryChunks.length, ...(v === 'exists' ? shipped : constant));
}

for (const edges of [false, true]) {
  const res: Record<Variant, number[]> = { constant: [], exists: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const r = await drainPaired(edges);
    for (const v of VARIANTS) res[v].push(r[v]);
  }
  const label = edges ? '50,000 other edges' : 'no edges          ';
  for (const v of VARIANTS) console.log(`${label} ${v.padEnd(8)} CPU us/job`, res[v].map((x) => x.toFixed(1)).join(' '), 'median', median(res[v]).toFixed(1));
  const paired = res.exists.map((x, i) => x / res.constant[i]!);
  console.log(`${label} ratio exists / constant`, (median(res.exists) / median(res.constant)).toFixed(3), 'per-round median', median(paired).toFixed(3));
}
