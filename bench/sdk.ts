/**
 * The worker SDK at full speed: createWorker with a no-op handler at
 * concurrency 8, in-process and over HTTP, against the same seeded queue the
 * engine benchmark drains. The SDK should keep at least 80% of the engine's
 * claim+complete rate with 8 slots.
 */
import { createEngine } from '../src/engine/engine.ts';
import { createStore } from '../src/db/store/create-store.ts';
import { defaultConfig } from '../src/core/config.ts';
import { databaseClock } from '../src/core/clock.ts';
import { silentLogger } from '../src/core/log.ts';
import { dbTransport } from '../src/embedded/db-transport.ts';
import { createWorker, httpTransport, type Transport } from '../src/worker/index.ts';
import { now, openTempDb, repeat, seedPending } from './lib.ts';
import { QUEUE, startServer } from './http.ts';

export interface SdkSizes {
  runs: number;
  jobs: number;
  maxSeconds: number;
}

const quiet = { info() {}, warn() {}, error() {} };

/** Runs a worker until `jobs` are completed or `maxSeconds` pass; jobs per second. */
async function drain(transport: Transport, sizes: SdkSizes): Promise<{ jobsPerSec: number; jobs: number }> {
  const worker = createWorker({ transport, queue: QUEUE, concurrency: 8, handler: () => null, handleSignals: false, pollMs: 5, maxPollMs: 20, logger: quiet });
  const t0 = now();
  worker.start();
  const deadline = t0 + sizes.maxSeconds * 1000;
  while (worker.stats.completed < sizes.jobs && now() < deadline) await new Promise((r) => setTimeout(r, 5));
  const seconds = (now() - t0) / 1000;
  const jobs = worker.stats.completed;
  await worker.close({ drainTimeoutMs: 5_000 });
  return { jobsPerSec: jobs / seconds, jobs };
}

export async function benchSdk(sizes: SdkSizes, log: (line: string) => void) {
  const inProcess = await repeat(sizes.runs, async () => {
    const db = await openTempDb('sdk-inprocess');
    try {
      await seedPending(db.client, QUEUE, sizes.jobs);
      return await drain(dbTransport(createEngine({ store: createStore(db.db), config: defaultConfig(), clock: databaseClock, log: silentLogger })), sizes);
    } finally {
      db.done();
    }
  });
  log(`  sdk in-process, concurrency 8: ${inProcess.runs.map((r) => Math.round(r.jobsPerSec)).join(', ')} jobs/s`);
  const http = await repeat(sizes.runs, async () => {
    const server = await startServer('sdk', sizes.jobs);
    try {
      return await drain(httpTransport({ url: server.url }), sizes);
    } finally {
      await server.stop();
    }
  });
  log(`  sdk http, concurrency 8: ${http.runs.map((r) => Math.round(r.jobsPerSec)).join(', ')} jobs/s`);
  return { inProcess, http };
}
