/**
 * HTTP mode: the real `leasehold serve` in a child process on 127.0.0.1 (port
 * 0), driven with fetch from this process, so the server's memory (VmRSS,
 * VmHWM from /proc) is its own.
 */
import { createServer } from 'node:net';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { migrateLibsql, openLibsql } from '../src/runtime/libsql.ts';
import { MIGRATIONS_DIR } from '../src/runtime/node.ts';
import { check, now, procMemory, repeat, seedPending, tempDb, type TempDb } from './lib.ts';
import { loopStats, runNaive, runSlots, type Driver, type LoopResult } from './worker-loop.ts';

export interface HttpSizes {
  runs: number;
  singleRequests: number;
  bulkTotal: number;
  bulkPerRequest: number;
  cycleJobs: number;
  naiveJobs: number;
  /** Each timed loop also stops after this long (whichever comes first). */
  maxSeconds: number;
}

const BIN = join(import.meta.dirname, '..', 'bin', 'leasehold.js');
export const QUEUE = 'bench';
const WORKER = 'bench-worker';

interface Server {
  url: string;
  child: ChildProcess;
  tmp: TempDb;
  stop(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** `databaseUrl`: serve that database (e.g. a remote libSQL server) instead of a fresh temp file. */
export async function startServer(label: string, seedJobs = 0, options: { databaseUrl?: string } = {}): Promise<Server> {
  const tmp = tempDb(`http-${label}`);
  if (seedJobs > 0) {
    // Migrate and fill the file before the server opens it (untimed).
    const opened = await openLibsql(tmp.url);
    try {
      await migrateLibsql(opened, MIGRATIONS_DIR);
      await seedPending(opened.client, QUEUE, seedJobs);
    } finally {
      opened.close();
    }
  }
  // The real CLI, as an operator runs it (its in-process reaper included).
  // A free port chosen here: at log level warn the server does not print its
  // listening line, so readiness is asked of /healthz instead.
  const port = await freePort();
  const child = spawn(process.execPath, [BIN, 'serve', '--host', '127.0.0.1', '--port', String(port), '--database-url', options.databaseUrl ?? tmp.url], {
    // warn: the per-request log lines (info) are not what this measures, and earlier results had none.
    env: { ...process.env, LEASEHOLD_WORKER_TOKEN: '', LEASEHOLD_ADMIN_TOKEN: '', LEASEHOLD_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    tmp.remove();
  };
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`server did not start in 30 s:\n${output}`)), 30_000);
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        const match = /leasehold listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]!);
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      const poll = async () => {
        while (child.exitCode === null) {
          const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false);
          if (ok) {
            clearTimeout(timer);
            return resolve(`http://127.0.0.1:${port}`);
          }
          await new Promise((r) => setTimeout(r, 50));
        }
      };
      void poll();
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`server exited with ${code} before listening:\n${output}`));
      });
    });
    return { url, child, tmp, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

async function post(url: string, body: unknown): Promise<any> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(30_000) });
  const json = (await res.json()) as any;
  check(res.ok, `POST ${url} -> ${res.status} ${JSON.stringify(json).slice(0, 300)}`);
  return json;
}

function driver(url: string): Driver {
  return {
    async claim(limit) {
      const { jobs } = await post(`${url}/api/v1/queues/${QUEUE}/claim`, { workerId: WORKER, limit });
      return (jobs as { id: string; lockToken: string }[]).map((j) => ({ id: j.id, lockToken: j.lockToken }));
    },
    async complete(leases) {
      const { results } = await post(`${url}/api/v1/completions`, { workerId: WORKER, results: leases.map((l) => ({ id: String(l.id), lockToken: l.lockToken })) });
      return (results as { ok: boolean }[]).filter((r) => r.ok).length;
    },
  };
}

const loopStatsWithMemory = (r: LoopResult, server: Server) => ({
  ...loopStats(r),
  serverPeakRssMb: procMemory(server.child.pid!).peakRssMb,
});

async function withServer<T>(label: string, fn: (s: Server) => Promise<T>, seedJobs = 0): Promise<T> {
  const server = await startServer(label, seedJobs);
  try {
    return await fn(server);
  } finally {
    await server.stop();
  }
}

export async function benchHttp(s: HttpSizes, log: (line: string) => void) {
  const enqueueSingle = await repeat(s.runs, (run) =>
    withServer('single', async (server) => {
      const url = `${server.url}/api/v1/queues/${QUEUE}/jobs`;
      await post(url, { payload: { warmup: run } });
      // One client, one request at a time.
      let t0 = now();
      let deadline = t0 + (s.maxSeconds / 2) * 1000;
      let sent = 0;
      while (sent < s.singleRequests && now() < deadline) {
        await post(url, { payload: { n: sent } });
        sent++;
      }
      const sequential = sent / ((now() - t0) / 1000);
      // Independent clients at once, each sending its own one-job requests
      // (the server batches the requests it reads in one turn into one transaction).
      const concurrent = async (clients: number) => {
        let next = 0;
        let done = 0;
        const start = now();
        const end = start + (s.maxSeconds / 4) * 1000;
        await Promise.all(
          Array.from({ length: clients }, async () => {
            while (next < s.singleRequests && now() < end) {
              next++;
              await post(url, { payload: { n: next } });
              done++;
            }
          }),
        );
        return done / ((now() - start) / 1000);
      };
      const concurrent8 = await concurrent(8);
      const concurrent32 = await concurrent(32);
      return { sequentialJobsPerSec: sequential, concurrent8JobsPerSec: concurrent8, concurrent32JobsPerSec: concurrent32, serverPeakRssMb: procMemory(server.child.pid!).peakRssMb };
    }),
  );
  log(
    `  http enqueue single (1 client): ${enqueueSingle.runs.map((r) => r.sequentialJobsPerSec.toFixed(0)).join(', ')} jobs/s; ` +
      `(8 clients): ${enqueueSingle.runs.map((r) => r.concurrent8JobsPerSec.toFixed(0)).join(', ')}; (32 clients): ${enqueueSingle.runs.map((r) => r.concurrent32JobsPerSec.toFixed(0)).join(', ')}`,
  );

  const enqueueBulk = await repeat(s.runs, () =>
    withServer('bulk', async (server) => {
      const url = `${server.url}/api/v1/queues/${QUEUE}/jobs`;
      const bodies = Array.from({ length: Math.ceil(s.bulkTotal / s.bulkPerRequest) }, (_, b) =>
        JSON.stringify({ jobs: Array.from({ length: s.bulkPerRequest }, (_, i) => ({ payload: { n: b * s.bulkPerRequest + i } })) }),
      );
      const t0 = now();
      const deadline = t0 + s.maxSeconds * 1000;
      let inserted = 0;
      for (const body of bodies) {
        if (now() >= deadline) break;
        const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(30_000) });
        check(res.status === 201, `bulk enqueue -> ${res.status}`);
        inserted += ((await res.json()) as { jobs: unknown[] }).jobs.length;
      }
      const seconds = (now() - t0) / 1000;
      return { jobs: inserted, jobsPerSec: inserted / seconds, serverPeakRssMb: procMemory(server.child.pid!).peakRssMb };
    }),
  );
  log(`  http enqueue bulk: ${enqueueBulk.runs.map((r) => r.jobsPerSec.toFixed(0)).join(', ')} jobs/s`);

  const cycle = (label: string, jobs: number, run: (d: Driver) => Promise<LoopResult>) =>
    repeat(s.runs, () =>
      withServer(label, async (server) => loopStatsWithMemory(await run(driver(server.url)), server), jobs),
    );
  const slots8 = await cycle('slots8', s.cycleJobs, (d) => runSlots(d, { total: s.cycleJobs, slots: 8, maxClaim: 50, maxSeconds: s.maxSeconds }));
  log(`  http claim+complete, 8 slots: ${slots8.runs.map((r) => r.jobsPerSec.toFixed(0)).join(', ')} jobs/s`);
  const slots50 = await cycle('slots50', s.cycleJobs, (d) => runSlots(d, { total: s.cycleJobs, slots: 50, maxClaim: 50, maxSeconds: s.maxSeconds }));
  log(`  http claim+complete, 50 slots: ${slots50.runs.map((r) => r.jobsPerSec.toFixed(0)).join(', ')} jobs/s`);
  const naive = await cycle('naive', s.naiveJobs, (d) => runNaive(d, { total: s.naiveJobs, loops: 8, maxSeconds: s.maxSeconds }));
  log(`  http naive claim 1 / complete 1 (8 loops): ${naive.runs.map((r) => r.jobsPerSec.toFixed(0)).join(', ')} jobs/s`);

  const peakRssMb = Math.max(
    ...[enqueueSingle, enqueueBulk, slots8, slots50, naive].flatMap((r) => r.runs.map((x) => x.serverPeakRssMb)),
  );
  return { enqueueSingle, enqueueBulk, slots8, slots50, naive, serverPeakRssMb: peakRssMb };
}
