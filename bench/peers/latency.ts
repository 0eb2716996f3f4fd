/**
 * Enqueue-to-handler-start latency at low load, measured the same way for
 * every system (the way bench/latency.ts measures leasehold's): one job at a
 * time into an idle worker, a random 100-400 ms of quiet between jobs, the
 * clock from just before the enqueue call to the handler's first line.
 */
import { percentile } from '../lib.ts';
import { now, sleep } from './workload.ts';

/** Records when each job's handler started, by payload index. */
export function startClock() {
  const started = new Map<number, number>();
  return { started, mark: (i: number) => void started.set(i, now()) };
}

export async function idleLatency(jobs: number, enqueue: (i: number) => Promise<unknown>, started: ReadonlyMap<number, number>): Promise<{ p50Ms: number; p90Ms: number }> {
  const latencies: number[] = [];
  await sleep(300);
  for (let i = 0; i < jobs; i++) {
    await sleep(100 + Math.random() * 300);
    const t0 = now();
    await enqueue(i);
    const deadline = now() + 10_000;
    while (!started.has(i) && now() < deadline) await sleep(1);
    const t = started.get(i);
    if (t === undefined) throw new Error(`latency: job ${i} did not start within 10 s`);
    latencies.push(t - t0);
  }
  return { p50Ms: percentile(latencies, 50), p90Ms: percentile(latencies, 90) };
}
