/**
 * A worker simulation shared by the in-process and HTTP scenarios: a fixed
 * number of handler slots, a claimer that fills free slots, a no-op handler,
 * and completions reported in batches.
 */
import { check, now, percentile } from './lib.ts';

export interface Lease {
  id: number | string;
  lockToken: string;
}

export interface Driver {
  /** Claims up to `limit` ready jobs. */
  claim(limit: number): Promise<Lease[]>;
  /** Completes the leases; returns how many were accepted. */
  complete(leases: Lease[]): Promise<number>;
}

export interface LoopResult {
  jobs: number;
  seconds: number;
  claimCalls: number;
  completeCalls: number;
  /** Wall time of every claim call, ms. */
  claimLatenciesMs: number[];
}

/** What a run reports: throughput, claim latency, and how well claims and completions batch. */
export const loopStats = (r: LoopResult) => ({
  jobs: r.jobs,
  jobsPerSec: r.jobs / r.seconds,
  claimP50Ms: percentile(r.claimLatenciesMs, 50),
  claimP99Ms: percentile(r.claimLatenciesMs, 99),
  jobsPerClaim: r.jobs / r.claimCalls,
  jobsPerCompletion: r.jobs / r.completeCalls,
});

/**
 * Slots mode: `slots` handlers run at once; the claimer asks for
 * min(free slots, maxClaim) jobs whenever a slot is free. A slot frees when
 * its handler returns; finished jobs queue up and one completion call at a
 * time reports all that are waiting (group commit). Stops claiming after
 * `total` jobs (the queue must hold at least that many) or `maxSeconds`,
 * whichever comes first, and returns once every claimed job is completed.
 */
export async function runSlots(driver: Driver, p: { total: number; slots: number; maxClaim: number; maxSeconds: number }): Promise<LoopResult> {
  let running = 0;
  let completed = 0;
  let claimedTotal = 0;
  let claimCalls = 0;
  let completeCalls = 0;
  const claimLatenciesMs: number[] = [];
  let finished: Lease[] = [];
  let flushing: Promise<void> | null = null;
  let wake: (() => void) | null = null;
  const signal = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  // Bounds memory: the claimer waits while this many completions are unreported.
  const maxUnreported = Math.max(1_000, p.slots * 4);

  const flush = (): Promise<void> => {
    if (flushing || finished.length === 0) return flushing ?? Promise.resolve();
    const batch = finished.slice(0, 1_000);
    finished = finished.slice(batch.length);
    flushing = (async () => {
      completeCalls++;
      const accepted = await driver.complete(batch);
      check(accepted === batch.length, `completion accepted ${accepted} of ${batch.length}`);
      completed += accepted;
      flushing = null;
      signal();
      if (finished.length) void flush();
    })();
    return flushing;
  };

  const handle = async (lease: Lease) => {
    await Promise.resolve(); // the no-op handler
    running--;
    finished.push(lease);
    void flush();
    signal();
  };

  const t0 = now();
  const deadline = t0 + p.maxSeconds * 1000;
  while (claimedTotal < p.total && now() < deadline) {
    const free = p.slots - running;
    if (free <= 0 || finished.length >= maxUnreported) {
      await new Promise<void>((resolve) => (wake = resolve));
      continue;
    }
    const limit = Math.min(free, p.maxClaim, p.total - claimedTotal);
    const c0 = now();
    const leases = await driver.claim(limit);
    claimLatenciesMs.push(now() - c0);
    claimCalls++;
    check(leases.length > 0, `claim returned nothing with ${p.total - claimedTotal} jobs still expected`);
    claimedTotal += leases.length;
    running += leases.length;
    for (const lease of leases) void handle(lease);
  }
  while (completed < claimedTotal) {
    await flush();
    if (completed < claimedTotal && !flushing && finished.length === 0) await new Promise<void>((resolve) => setImmediate(resolve));
  }
  const seconds = (now() - t0) / 1000;
  return { jobs: completed, seconds, claimCalls, completeCalls, claimLatenciesMs };
}

/**
 * Naive mode: `loops` independent workers, each claiming one job and
 * completing it (one call each) before claiming the next; until `total` jobs
 * or `maxSeconds`.
 */
export async function runNaive(driver: Driver, p: { total: number; loops: number; maxSeconds: number }): Promise<LoopResult> {
  let claimed = 0;
  let completed = 0;
  let claimCalls = 0;
  let completeCalls = 0;
  const claimLatenciesMs: number[] = [];
  const t0 = now();
  const deadline = t0 + p.maxSeconds * 1000;
  await Promise.all(
    Array.from({ length: p.loops }, async () => {
      while (claimed < p.total && now() < deadline) {
        claimed++;
        const c0 = now();
        const leases = await driver.claim(1);
        claimLatenciesMs.push(now() - c0);
        claimCalls++;
        check(leases.length === 1, 'naive claim found no job');
        completeCalls++;
        const accepted = await driver.complete(leases); // not `completed += await ...`: that reads `completed` before the await
        completed += accepted;
      }
    }),
  );
  check(completed === claimed, `naive completed ${completed} of ${claimed}`);
  return { jobs: completed, seconds: (now() - t0) / 1000, claimCalls, completeCalls, claimLatenciesMs };
}
