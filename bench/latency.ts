/**
 * Enqueue-to-handler-start latency at low load: one job at a time
 * into an idle worker with the SDK's default options, over loopback HTTP to
 * the real server. Between jobs the worker sits idle a random 100-400 ms, as
 * a quiet queue does. The peer in the same run is the enqueue request's own
 * round trip: the floor no worker can beat, so the ratio survives a noisy host.
 */
import { createWorker, httpTransport } from '../src/worker/index.ts';
import { now, percentile, repeat } from './lib.ts';
import { QUEUE, startServer } from './http.ts';

export interface LatencySizes {
  runs: number;
  jobs: number;
}

const quiet = { info() {}, warn() {}, error() {} };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function oneRun(sizes: LatencySizes): Promise<{ p50Ms: number; p90Ms: number; enqueueP50Ms: number }> {
  const server = await startServer('latency');
  const started = new Map<string, number>();
  const worker = createWorker({
    transport: httpTransport({ url: server.url }),
    queue: QUEUE,
    handler: (ctx) => {
      started.set(ctx.job.id, now());
      return null;
    },
    handleSignals: false,
    logger: quiet,
  });
  try {
    worker.start();
    await sleep(300);
    const latencies: number[] = [];
    const enqueues: number[] = [];
    for (let i = 0; i < sizes.jobs; i++) {
      await sleep(100 + Math.random() * 300);
      const t0 = now();
      const res = await fetch(`${server.url}/api/v1/queues/${QUEUE}/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ payload: { i } }) });
      const t1 = now();
      const { job } = (await res.json()) as { job: { id: string } };
      enqueues.push(t1 - t0);
      const deadline = now() + 10_000;
      while (!started.has(job.id) && now() < deadline) await sleep(1);
      if (!started.has(job.id)) throw new Error(`job ${job.id} did not start within 10 s`);
      latencies.push(started.get(job.id)! - t0);
    }
    return { p50Ms: percentile(latencies, 50), p90Ms: percentile(latencies, 90), enqueueP50Ms: percentile(enqueues, 50) };
  } finally {
    await worker.close({ drainTimeoutMs: 2_000 });
    await server.stop();
  }
}

export async function benchLatency(sizes: LatencySizes, log: (line: string) => void) {
  const r = await repeat(sizes.runs, () => oneRun(sizes));
  for (const run of r.runs) log(`  enqueue -> handler start: p50 ${run.p50Ms.toFixed(1)} ms, p90 ${run.p90Ms.toFixed(1)} ms (the enqueue request alone: p50 ${run.enqueueP50Ms.toFixed(1)} ms)`);
  return r;
}
