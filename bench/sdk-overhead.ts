/**
 * What the worker SDK itself costs per job, in process: the in-process row of
 * the peers benchmark (bench/peers/leasehold-inprocess.ts) without its
 * enqueue phase, beside the engine's hot transaction alone.
 *
 * Per round, on fresh database files:
 * - `sdk`: `jobs` pending jobs seeded (seedPending) into a migrated file, then
 *   openLeasehold on it and lh.createWorker with the in-process transport,
 *   concurrency 8, the SDK's defaults (handleSignals false, a silent logger),
 *   a no-op handler; timed from start() to the N-th `completed` event.
 * - `engine`: the same seeded queue drained by drainHotTransaction (bench/lib.ts:
 *   complete 100 and claim 100 in one transaction, no SDK, no transport).
 * - `alone`: the same worker on a transport that answers from memory (no
 *   engine, no SQL): the SDK's own JavaScript per job, with a far smaller
 *   spread between runs than the rows above, so the figure to compare when
 *   changing the SDK.
 * All report the process's CPU time (process.cpuUsage, user + system) per
 * job; `sdk - engine` is what the SDK, the in-process transport and the
 * engine's glue around the store add per job (the SDK's claims also record
 * their claim id, which the bare hot transaction does not). Each run starts
 * after a forced GC when node runs with --expose-gc, so one run's garbage is
 * not billed to the next.
 *
 * The VM's vCPUs run at different speeds: pin it (`taskset -c 1 npx tsx
 * bench/sdk-overhead.ts [rounds] [jobs]`, default 7 rounds of 20,000, or
 * `taskset -c 1 node --expose-gc --import tsx bench/sdk-overhead.ts`) and
 * compare two versions only pinned to the same CPU, taking turns.
 */
import { openLeasehold } from '../src/embedded/leasehold.ts';
import { createWorker, type Transport } from '../src/worker/index.ts';
import type { ClaimedJob } from '../src/worker/transport.ts';
import { drainHotTransaction, median, now, openTempDb, seedPending, check } from './lib.ts';

const ROUNDS = Number(process.argv[2] ?? 7);
const JOBS = Number(process.argv[3] ?? 20_000);
const QUEUE = 'overhead';
const quiet = { info() {}, warn() {}, error() {} };

/** A migrated temp file with `n` pending jobs, closed again; its URL and a remover. */
async function seeded(label: string, n: number) {
  const db = await openTempDb(label);
  await seedPending(db.client, QUEUE, n);
  db.close();
  return db.tmp;
}

async function sdkRound(n: number): Promise<{ cpuUsPerJob: number; jobsPerSec: number }> {
  const tmp = await seeded('sdk-overhead', n);
  gc();
  const lh = await openLeasehold({ databaseUrl: tmp.url });
  try {
    let completed = 0;
    let handled = 0;
    let done!: () => void;
    const finished = new Promise<void>((resolve) => (done = resolve));
    const worker = lh.createWorker({ queue: QUEUE, concurrency: 8, handler: () => void handled++, handleSignals: false, logger: quiet });
    let cpu = { user: 0, system: 0 };
    let t1 = 0;
    worker.on('completed', () => {
      if (++completed === n) {
        cpu = process.cpuUsage(cpu0);
        t1 = now();
        done();
      }
    });
    const cpu0 = process.cpuUsage();
    const t0 = now();
    worker.start();
    await finished;
    await worker.close();
    check(handled === n && worker.stats.completed === n, `sdk: handled ${handled}, completed ${worker.stats.completed}, expected ${n}`);
    return { cpuUsPerJob: (cpu.user + cpu.system) / n, jobsPerSec: n / ((t1 - t0) / 1000) };
  } finally {
    lh.close();
    tmp.remove();
  }
}

/** Claims, completions and beats answered from memory: every job ok, as many claimed as asked, no SQL. */
function memoryTransport(n: number): Transport {
  let made = 0;
  // Made once: the SDK does not read them, and dates per job would be billed to it.
  const leaseExpiresAt = new Date(Date.now() + 30_000).toISOString();
  const deadlineAt = new Date(Date.now() + 3_600_000).toISOString();
  const claim = (limit: number): ClaimedJob[] => {
    const jobs: ClaimedJob[] = [];
    for (; limit > 0 && made < n; limit--) {
      made++;
      jobs.push({
        id: String(made),
        queue: QUEUE,
        payload: { n: made },
        attempt: 1,
        maxAttempts: 5,
        priority: 0,
        lockToken: `token-${made}`,
        fencingToken: 1,
        // What the engine answers by default: a 30 s lease, 5 s heartbeats, a deadline an hour out.
        leaseMs: 30_000,
        leaseExpiresAt,
        deadlineAt,
        heartbeatIntervalMs: 5_000,
        idempotencyKey: null,
        checkpoint: null,
        progress: null,
        timeoutMs: 3_600_000,
        traceparent: null,
        tracestate: null,
        group: null,
        snoozes: 0,
      });
    }
    return jobs;
  };
  const ok = (ls: { id: string }[]) => ls.map((l) => ({ id: l.id, ok: true as const }));
  const never = () => Promise.reject(new Error('not used by this benchmark'));
  return {
    claim: async (p) => ({ jobs: claim(p.limit) }),
    heartbeat: async (p) => ok(p.leases),
    complete: async (p) => ({ answers: ok(p.results), claimed: p.claim ? claim(p.claim.limit) : [] }),
    release: async (p) => ok(p.leases),
    checkpoint: never,
    fail: never,
    effectStart: never,
    effectFinish: never,
    steps: never,
    reportDuplicate: never,
  };
}

async function aloneRound(n: number): Promise<{ cpuUsPerJob: number }> {
  gc();
  let completed = 0;
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const worker = createWorker({ transport: memoryTransport(n), queue: QUEUE, concurrency: 8, handler: () => null, handleSignals: false, logger: quiet });
  let cpu = { user: 0, system: 0 };
  worker.on('completed', () => {
    if (++completed === n) {
      cpu = process.cpuUsage(cpu0);
      done();
    }
  });
  const cpu0 = process.cpuUsage();
  worker.start();
  await finished;
  await worker.close();
  check(worker.stats.completed === n, `alone: completed ${worker.stats.completed}, expected ${n}`);
  return { cpuUsPerJob: (cpu.user + cpu.system) / n };
}

/** A forced GC between runs, when node was started with --expose-gc. */
const gc = () => (globalThis as { gc?: () => void }).gc?.();

async function engineRound(n: number): Promise<{ cpuUsPerJob: number }> {
  const db = await openTempDb('sdk-overhead-engine');
  try {
    await seedPending(db.client, QUEUE, n);
    gc();
    const { cpuUsPerJob, completed } = await drainHotTransaction(db, QUEUE);
    check(completed === n, `engine: completed ${completed}, expected ${n}`);
    return { cpuUsPerJob };
  } finally {
    db.done();
  }
}

const sdk: { cpuUsPerJob: number; jobsPerSec: number }[] = [];
const engine: number[] = [];
const alone: number[] = [];
// A first round of each warms the JIT and the page cache; not counted.
await sdkRound(Math.min(JOBS, 5_000));
await engineRound(Math.min(JOBS, 5_000));
await aloneRound(Math.min(JOBS, 5_000));
for (let round = 0; round < ROUNDS; round++) {
  const s = await sdkRound(JOBS);
  const e = await engineRound(JOBS);
  const a = await aloneRound(JOBS);
  sdk.push(s);
  engine.push(e.cpuUsPerJob);
  alone.push(a.cpuUsPerJob);
  console.log(
    `round ${round + 1}: sdk ${s.cpuUsPerJob.toFixed(1)} us/job, ${Math.round(s.jobsPerSec)} jobs/s; engine ${e.cpuUsPerJob.toFixed(1)} us/job; sdk share ${(s.cpuUsPerJob - e.cpuUsPerJob).toFixed(1)} us/job; sdk alone ${a.cpuUsPerJob.toFixed(1)} us/job`,
  );
}
const sdkCpu = median(sdk.map((s) => s.cpuUsPerJob));
const engineCpu = median(engine);
const summary = { rounds: ROUNDS, jobs: JOBS, sdkCpuUsPerJob: sdkCpu, sdkJobsPerSec: median(sdk.map((s) => s.jobsPerSec)), engineCpuUsPerJob: engineCpu, sdkShareUsPerJob: sdkCpu - engineCpu, sdkAloneCpuUsPerJob: median(alone) };
console.log(JSON.stringify(summary));
