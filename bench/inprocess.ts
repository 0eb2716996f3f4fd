/** In-process mode: the store functions called directly on a libSQL Drizzle database. */
import { DB_CLOCK } from '../src/core/clock.ts';
import { defaultConfig } from '../src/core/config.ts';
import type { Db } from '../src/db/db.ts';
import { jobsClaimPending } from '../src/db/store/claim.ts';
import { jobsInsert, SUMMARY_COLUMNS } from '../src/db/store/enqueue.ts';
import { jobsCompleteIfOwned } from '../src/db/store/finish.ts';
import { check, now, openTempDb, repeat, seedPending } from './lib.ts';
import { loopStats, runNaive, runSlots, type Driver, type LoopResult } from './worker-loop.ts';
import type { NewJob } from '../src/db/store/port.ts';

export interface InProcessSizes {
  runs: number;
  singleCalls: number;
  bulkTotal: number;
  bulkPerCall: number;
  cycleJobs: number;
  naiveJobs: number;
  /** Each timed loop also stops after this long (whichever comes first). */
  maxSeconds: number;
}

const config = defaultConfig();
const QUEUE = 'bench';
const WORKER = 'bench-worker';
const jobsOf = (n: number, from = 0): NewJob[] => Array.from({ length: n }, (_, i) => ({ payload: { n: from + i } }));

/** The worker loop's claim and complete as the store functions, on `db` (also used by counters-ab.ts). */
export function inProcessDriver(db: Db): Driver {
  return {
    async claim(limit) {
      const claimed = await jobsClaimPending(db, { queue: QUEUE, workerId: WORKER, limit, now: DB_CLOCK, defaults: config });
      return claimed.map((j) => ({ id: j.id, lockToken: j.lock_token! }));
    },
    async complete(leases) {
      const outcomes = await jobsCompleteIfOwned(db, {
        workerId: WORKER,
        results: leases.map((l) => ({ id: Number(l.id), lockToken: l.lockToken, data: null })),
        now: DB_CLOCK,
      });
      return outcomes.filter((o) => o.ok).length;
    },
  };
}


export async function benchInProcess(s: InProcessSizes, log: (line: string) => void) {
  const enqueueSingle = await repeat(s.runs, async () => {
    const db = await openTempDb('inproc-single');
    try {
      const t0 = now();
      const deadline = t0 + s.maxSeconds * 1000;
      let calls = 0;
      while (calls < s.singleCalls && now() < deadline) {
        await jobsInsert(db.db, { queue: QUEUE, jobs: [{ payload: { n: calls } }], actor: 'bench', now: DB_CLOCK, defaults: config });
        calls++;
      }
      const seconds = (now() - t0) / 1000;
      return { jobsPerSec: calls / seconds, jobs: calls };
    } finally {
      db.done();
    }
  });
  log(`  in-process enqueue single: ${enqueueSingle.runs.map((r) => r.jobsPerSec.toFixed(0)).join(', ')} jobs/s`);

  const enqueueBulk = await repeat(s.runs, async () => {
    const db = await openTempDb('inproc-bulk');
    try {
      const batches = Array.from({ length: Math.ceil(s.bulkTotal / s.bulkPerCall) }, (_, b) => jobsOf(s.bulkPerCall, b * s.bulkPerCall));
      const t0 = now();
      const deadline = t0 + s.maxSeconds * 1000;
      let inserted = 0;
      for (const jobs of batches) {
        if (now() >= deadline) break;
        // The same columns the HTTP bulk answer returns.
        const enqueued = await jobsInsert(db.db, { queue: QUEUE, jobs, actor: 'bench', now: DB_CLOCK, defaults: config, columns: SUMMARY_COLUMNS });
        check(enqueued.length === jobs.length, 'bulk insert count');
        inserted += enqueued.length;
      }
      const seconds = (now() - t0) / 1000;
      return { jobsPerSec: inserted / seconds, jobs: inserted };
    } finally {
      db.done();
    }
  });
  log(`  in-process enqueue bulk: ${enqueueBulk.runs.map((r) => r.jobsPerSec.toFixed(0)).join(', ')} jobs/s`);

  const cycle = (label: string, run: (d: Driver) => Promise<LoopResult>, jobs: number) =>
    repeat(s.runs, async () => {
      const db = await openTempDb(`inproc-${label}`);
      try {
        await seedPending(db.client, QUEUE, jobs);
        const result = await run(inProcessDriver(db.db));
        const [row] = (await db.client.execute(`SELECT sum(status = 'completed') AS done, sum(status = 'running') AS running FROM jobs`)).rows;
        check(Number(row?.done) === result.jobs && Number(row?.running) === 0, `${label}: ${row?.done} completed, ${row?.running} running, loop says ${result.jobs}`);
        return loopStats(result);
      } finally {
        db.done();
      }
    });

  const slots8 = await cycle('slots8', (d) => runSlots(d, { total: s.cycleJobs, slots: 8, maxClaim: 50, maxSeconds: s.maxSeconds }), s.cycleJobs);
  log(`  in-process claim+complete, 8 slots: ${slots8.runs.map((r) => r.jobsPerSec.toFixed(0)).join(', ')} jobs/s`);
  const slots50 = await cycle('slots50', (d) => runSlots(d, { total: s.cycleJobs, slots: 50, maxClaim: 50, maxSeconds: s.maxSeconds }), s.cycleJobs);
  log(`  in-process claim+complete, 50 slots: ${slots50.runs.map((r) => r.jobsPerSec.toFixed(0)).join(', ')} jobs/s`);
  const naive = await cycle('naive', (d) => runNaive(d, { total: s.naiveJobs, loops: 8, maxSeconds: s.maxSeconds }), s.naiveJobs);
  log(`  in-process naive claim 1 / complete 1: ${naive.runs.map((r) => r.jobsPerSec.toFixed(0)).join(', ')} jobs/s`);

  return { enqueueSingle, enqueueBulk, slots8, slots50, naive };
}
