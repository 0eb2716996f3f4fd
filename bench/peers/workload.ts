/**
 * The peers comparison's workload, the same for every system (it follows
 * ../shared/peers-bench's lib/common.mjs): `jobs` jobs with payload {i},
 * enqueued with at most 8 calls in flight (or in chunks of 1,000 for the bulk
 * APIs), then processed at concurrency 8 by a no-op handler that sums `i`.
 * The clock for processing stops at the library's N-th recorded completion;
 * the handled count and the sum catch lost or duplicated deliveries.
 */
import { performance } from 'node:perf_hooks';

export interface PeersSizes {
  rounds: number;
  jobs: number;
  concurrency: number;
  bulkChunk: number;
  /** Jobs per round of the idle-worker latency measurement. */
  latencyJobs: number;
}

/** One system's figures in one round; absent fields were not measured for it. */
export interface PeerRun {
  enqueuePerSec?: number;
  processPerSec?: number;
  totalSeconds?: number;
  p50Ms?: number;
  p90Ms?: number;
  /** Peak RSS (VmHWM) of the leasehold server process. */
  serverPeakRssMb?: number;
}

export const now = () => performance.now();
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
export const expectedSum = (n: number) => (n * (n - 1)) / 2;

/** Calls add(i) for i in [0, n) with at most `inFlight` calls outstanding. */
export async function enqueueSingle(n: number, inFlight: number, add: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < n) await add(next++);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(inFlight, n)) }, lane));
}

/** Calls addMany(indexes) for consecutive chunks, one after another; returns how many the library said it added. */
export async function enqueueChunks(n: number, chunk: number, addMany: (ids: number[]) => Promise<number>): Promise<number> {
  let added = 0;
  for (let start = 0; start < n; start += chunk) {
    added += await addMany(Array.from({ length: Math.min(chunk, n - start) }, (_, k) => start + k));
  }
  return added;
}

/** Counts handler calls and sums payloads; `check` throws unless every job ran exactly once (as far as count and sum tell). */
export function tally(system: string, n: number) {
  const t = {
    handled: 0,
    sum: 0,
    add(i: number) {
      t.handled++;
      t.sum += i;
    },
    check(extra = '') {
      if (t.handled !== n || t.sum !== expectedSum(n)) {
        throw new Error(`${system}: verify failed: handled ${t.handled}/${n}, sum ${t.sum}/${expectedSum(n)}${extra ? `; ${extra}` : ''}`);
      }
    },
  };
  return t;
}

/** Enqueue, then process: the rates and total of one run from its four timestamps (ms). */
export function rates(n: number, t0: number, t1: number, t2: number, t3: number): Required<Pick<PeerRun, 'enqueuePerSec' | 'processPerSec' | 'totalSeconds'>> {
  return { enqueuePerSec: (n / (t1 - t0)) * 1000, processPerSec: (n / (t3 - t2)) * 1000, totalSeconds: (t1 - t0 + (t3 - t2)) / 1000 };
}

/** A promise and its settle functions. */
export function deferred() {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
