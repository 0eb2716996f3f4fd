/**
 * leasehold as its users drive it over HTTP: the real `leasehold serve` (the
 * CLI in a child process, fresh database file), jobs enqueued through
 * `createClient` (leasehold/client), processed by `createWorker` +
 * `httpTransport` (leasehold/worker). Worker options passed: queue,
 * concurrency, handler, and only what keeps a bench quiet (handleSignals
 * false, a silent logger); everything else is the SDK's default.
 */
import { createClient as openFile } from '@libsql/client';
import { createClient } from '../../src/client/index.ts';
import { createWorker, httpTransport } from '../../src/worker/index.ts';
import { startServer } from '../http.ts';
import { procMemory } from '../lib.ts';
import { idleLatency, startClock } from './latency.ts';
import { drainWithWorker, quiet } from './leasehold-drain.ts';
import { enqueueChunks, enqueueSingle, now, rates, type PeerRun, type PeersSizes } from './workload.ts';

const QUEUE = 'peers';

/** Job counts by status, read from the server's own database file (WAL lets a second reader in). */
export async function statusCounts(url: string): Promise<Record<string, number>> {
  const db = openFile({ url });
  try {
    const { rows } = await db.execute('SELECT status, count(*) AS n FROM jobs GROUP BY status');
    return Object.fromEntries(rows.map((r) => [String(r.status), Number(r.n)]));
  } finally {
    db.close();
  }
}

async function withServer<T>(label: string, fn: (server: Awaited<ReturnType<typeof startServer>>) => Promise<T>): Promise<T> {
  const server = await startServer(`peers-${label}`);
  try {
    return await fn(server);
  } finally {
    await server.stop();
  }
}

/** Single enqueue calls (8 in flight), then the worker SDK at concurrency 8. */
export function leaseholdSdk(s: PeersSizes): Promise<PeerRun> {
  return withServer('sdk', async (server) => {
    const client = createClient({ url: server.url });
    const t0 = now();
    await enqueueSingle(s.jobs, s.concurrency, (i) => client.enqueue(QUEUE, { i }));
    const t1 = now();
    const { t2, t3, seen } = await drainWithWorker('leasehold-sdk', s, (handler) =>
      createWorker<{ i: number }>({ transport: httpTransport({ url: server.url }), queue: QUEUE, concurrency: s.concurrency, handler, handleSignals: false, logger: quiet }),
    );
    const counts = await statusCounts(server.tmp.url);
    seen.check(`store: ${JSON.stringify(counts)}`);
    if (counts.completed !== s.jobs) throw new Error(`leasehold-sdk: store has ${JSON.stringify(counts)}, expected ${s.jobs} completed`);
    return { ...rates(s.jobs, t0, t1, t2, t3), serverPeakRssMb: procMemory(server.child.pid!).peakRssMb };
  });
}

/** client.enqueueMany in chunks of 1,000 (enqueue only). */
export function leaseholdSdkBulk(s: PeersSizes): Promise<PeerRun> {
  return withServer('bulk', async (server) => {
    const client = createClient({ url: server.url });
    const t0 = now();
    const added = await enqueueChunks(s.jobs, s.bulkChunk, async (ids) => (await client.enqueueMany(QUEUE, ids.map((i) => ({ payload: { i } })))).length);
    const t1 = now();
    const counts = await statusCounts(server.tmp.url);
    if (added !== s.jobs || counts.pending !== s.jobs) throw new Error(`leasehold-sdk bulk: client says ${added} added, store has ${JSON.stringify(counts)}`);
    return { enqueuePerSec: (s.jobs / (t1 - t0)) * 1000 };
  });
}

/** One job at a time into an idle worker with the SDK's default options. */
export function leaseholdSdkLatency(s: PeersSizes): Promise<PeerRun> {
  return withServer('latency', async (server) => {
    const client = createClient({ url: server.url });
    const clock = startClock();
    const worker = createWorker<{ i: number }>({
      transport: httpTransport({ url: server.url }),
      queue: QUEUE,
      handler: (ctx) => {
        clock.mark(ctx.job.payload.i);
        return null;
      },
      handleSignals: false,
      logger: quiet,
    });
    worker.start();
    try {
      return await idleLatency(s.latencyJobs, (i) => client.enqueue(QUEUE, { i }), clock.started);
    } finally {
      await worker.close({ drainTimeoutMs: 2_000 });
    }
  });
}
