/**
 * Turns the peers runs into medians, the issue's ratios and a markdown block
 * (tables + ratio lines) to paste into docs/benchmarks.md as printed.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fmt, machineInfo, median } from '../lib.ts';
import type { PeerRun, PeersSizes } from './workload.ts';

export type SystemName =
  | 'leasehold-sdk'
  | 'bullmq'
  | 'leasehold in-process'
  | 'plainjob'
  | 'leasehold-sdk bulk enqueue'
  | 'bullmq bulk enqueue'
  | 'leasehold-sdk latency'
  | 'bullmq latency';

type Metric = keyof PeerRun;
type Stat = { median: number; min: number; max: number };

export interface Ratio {
  goal: string;
  leasehold: number;
  peer: number;
  ratio: number;
  roundsMin: number;
  roundsMax: number;
  target: string;
  met: boolean;
}

export interface PeersReport {
  date: string;
  sizes: PeersSizes;
  skipped: Partial<Record<SystemName, string>>;
  stats: Partial<Record<SystemName, Partial<Record<Metric, Stat>>>>;
  ratios: Ratio[];
  markdown: string;
}

const HOW: Record<SystemName, string> = {
  'leasehold-sdk': '`client.enqueue` (8 in flight); `createWorker` + `httpTransport`, concurrency 8, SDK defaults; `leasehold serve` child process',
  bullmq: '`Queue.add` (8 in flight); `Worker`, concurrency 8, defaults',
  'leasehold in-process': '`openLeasehold().enqueue` (8 in flight); `lh.createWorker` (in-process transport), concurrency 8, defaults',
  plainjob: '`queue.add`; 8 `defineWorker` loops, quiet logger',
  'leasehold-sdk bulk enqueue': '`client.enqueueMany`, chunks of 1,000',
  'bullmq bulk enqueue': '`Queue.addBulk`, chunks of 1,000',
  'leasehold-sdk latency': 'one job at a time, idle worker, SDK defaults, `client.enqueue`',
  'bullmq latency': 'one job at a time, idle `Worker`, defaults, `Queue.add`',
};

function version(pkg: string): string {
  try {
    return (JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'not installed';
  }
}

function statOf(xs: number[]): Stat | undefined {
  return xs.length ? { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) } : undefined;
}

export function summarize(input: {
  started: Date;
  sizes: PeersSizes;
  runs: Partial<Record<SystemName, PeerRun[]>>;
  skipped: Partial<Record<SystemName, string>>;
  redis: string | undefined;
  loadBefore: number[];
  loadAfter: number[];
}): PeersReport {
  const { sizes, runs, skipped } = input;
  const stats: PeersReport['stats'] = {};
  for (const [name, rs] of Object.entries(runs) as [SystemName, PeerRun[]][]) {
    const s: Partial<Record<Metric, Stat>> = {};
    for (const m of ['enqueuePerSec', 'processPerSec', 'totalSeconds', 'p50Ms', 'p90Ms', 'serverPeakRssMb'] as Metric[]) {
      const st = statOf(rs.flatMap((r) => (r[m] === undefined ? [] : [r[m]])));
      if (st) s[m] = st;
    }
    stats[name] = s;
  }

  const ratios: Ratio[] = [];
  const lines: string[] = [];
  // Paired by round: each round's ratio comes from two systems measured minutes apart at most.
  const ratio = (goal: string, ours: SystemName, peer: SystemName, metric: Metric, atLeast: number) => {
    const a = runs[ours]?.map((r) => r[metric]!);
    const b = runs[peer]?.map((r) => r[metric]!);
    if (!a?.length || !b?.length) {
      lines.push(`- ${goal}: n/a (${skipped[peer] ? `${peer} skipped` : `${ours} skipped`})`);
      return;
    }
    const perRound = a.map((x, i) => x / b[i]!);
    const r: Ratio = { goal, leasehold: median(a), peer: median(b), ratio: median(a) / median(b), roundsMin: Math.min(...perRound), roundsMax: Math.max(...perRound), target: `>= ${atLeast.toFixed(1)}`, met: median(a) / median(b) >= atLeast };
    ratios.push(r);
    lines.push(`- ${goal}: leasehold / peer = ${fmt(r.ratio, 2)} (goal ≥ ${atLeast.toFixed(1)}) ${r.met ? 'met' : 'MISSED'}; ${fmt(r.leasehold)} vs ${fmt(r.peer)} jobs/s; per round ${fmt(r.roundsMin, 2)}–${fmt(r.roundsMax, 2)}`);
  };
  // The goals of docs/benchmarks.md ("Goals"), as ratios in the same run.
  ratio('SDK processing vs BullMQ Worker', 'leasehold-sdk', 'bullmq', 'processPerSec', 1.5);
  ratio('client single enqueue vs Queue.add', 'leasehold-sdk', 'bullmq', 'enqueuePerSec', 0.5);
  ratio('bulk enqueue (enqueueMany) vs addBulk', 'leasehold-sdk bulk enqueue', 'bullmq bulk enqueue', 'enqueuePerSec', 2);
  ratio('in-process processing vs plainjob', 'leasehold in-process', 'plainjob', 'processPerSec', 3);
  const lat = stats['leasehold-sdk latency']?.p50Ms;
  const peerLat = stats['bullmq latency']?.p50Ms;
  if (lat) {
    const peer = peerLat ? `; BullMQ p50 ${fmt(peerLat.median, 1)} ms, leasehold / peer = ${fmt(lat.median / peerLat.median, 2)}` : `; BullMQ: ${skipped['bullmq latency'] ?? 'n/a'}`;
    // The goal is BullMQ's own p50 in the same run; without BullMQ, nothing to judge by.
    const met = peerLat !== undefined && lat.median <= peerLat.median;
    lines.push(`- enqueue-to-handler-start latency p50: leasehold ${fmt(lat.median, 1)} ms (goal ≤ BullMQ's p50) ${peerLat ? (met ? 'met' : 'MISSED') : 'n/a'}${peer}`);
    ratios.push({ goal: "latency p50 (ms; goal: BullMQ's p50 or less)", leasehold: lat.median, peer: peerLat?.median ?? NaN, ratio: peerLat ? lat.median / peerLat.median : NaN, roundsMin: lat.min, roundsMax: lat.max, target: '<= 1.0 x BullMQ', met });
  }
  const rss = stats['leasehold-sdk']?.serverPeakRssMb;
  if (rss) lines.push(`- leasehold server peak RSS (VmHWM, max over rounds): ${fmt(rss.max)} MB (goal < 200 MB) ${rss.max < 200 ? 'met' : 'MISSED'}`);

  const date = input.started.toISOString();
  const m = machineInfo();
  const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
  const cell = (s: Stat | undefined, digits = 0) => (s ? `${fmt(s.median, digits)} [${fmt(s.min, digits)}–${fmt(s.max, digits)}]` : '');
  const rowOf = (name: SystemName, cols: (s: Partial<Record<Metric, Stat>>) => string[], blanks: number) => {
    const s = stats[name];
    return `| ${name} | ${HOW[name]} | ${s ? cols(s).join(' | ') : `skipped: ${skipped[name] ?? 'not run'}${' |'.repeat(blanks - 1)}`} |`;
  };
  const throughput: SystemName[] = ['leasehold-sdk', 'bullmq', 'leasehold in-process', 'plainjob', 'leasehold-sdk bulk enqueue', 'bullmq bulk enqueue'];
  const md = [
    `Started ${date.slice(0, 16).replace('T', ' ')} UTC, ${m.nproc} cpus (${m.cpu}), node ${m.node}; load average ${load(input.loadBefore)} before, ${load(input.loadAfter)} after.`,
    `${fmt(sizes.jobs)} jobs, concurrency 8, median [min–max] of ${sizes.rounds} interleaved round(s); latency over ${sizes.latencyJobs} jobs per round.`,
    `${input.redis ?? 'no Redis'}; bullmq ${version('bullmq')}, ioredis ${version('ioredis')}, plainjob ${version('plainjob')}, better-sqlite3 ${version('better-sqlite3')}.`,
    '',
    '| system | how | enqueue jobs/s | process jobs/s | total s |',
    '|---|---|---:|---:|---:|',
    ...throughput.map((n) => rowOf(n, (s) => [cell(s.enqueuePerSec), cell(s.processPerSec), cell(s.totalSeconds, 2)], 3)),
    '',
    '| system | how | enqueue → handler start p50 ms | p90 ms |',
    '|---|---|---:|---:|',
    ...(['leasehold-sdk latency', 'bullmq latency'] as const).map((n) => rowOf(n, (s) => [cell(s.p50Ms, 1), cell(s.p90Ms, 1)], 2)),
    '',
    ...lines,
  ].join('\n');
  return { date, sizes, skipped, stats, ratios, markdown: md };
}
