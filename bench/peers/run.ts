/**
 * The peers comparison: leasehold through its client, its worker
 * SDK and its embedded API against BullMQ and plainjob, on the same workload
 * in the same process, rounds interleaved so a noisy host hits every system
 * alike. Peers that cannot run here (no Redis, better-sqlite3 not built) are
 * skipped with the reason, never failed.
 */
import { loadavg } from 'node:os';
import { bullmq, bullmqBulk, bullmqLatency } from './bullmq.ts';
import { leaseholdInProcess } from './leasehold-inprocess.ts';
import { leaseholdSdk, leaseholdSdkBulk, leaseholdSdkLatency } from './leasehold-sdk.ts';
import { loadBetterSqlite, plainjob } from './plainjob.ts';
import { findRedis } from './redis.ts';
import { summarize, type PeersReport, type SystemName } from './report.ts';
import type { PeerRun, PeersSizes } from './workload.ts';

/** Sizes from the environment: PEERS_JOBS, PEERS_ROUNDS, PEERS_LATENCY_JOBS override the defaults given. */
export function peersSizes(defaults: PeersSizes): PeersSizes {
  const int = (name: string, d: number) => {
    const v = process.env[name];
    if (v === undefined || v === '') return d;
    const n = Number(v);
    if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got ${v}`);
    return n;
  };
  return { ...defaults, jobs: int('PEERS_JOBS', defaults.jobs), rounds: int('PEERS_ROUNDS', defaults.rounds), latencyJobs: int('PEERS_LATENCY_JOBS', defaults.latencyJobs) };
}

export async function benchPeers(sizes: PeersSizes, log: (line: string) => void): Promise<PeersReport> {
  const started = new Date();
  const loadBefore = loadavg();
  const redis = await findRedis();
  const Database = await loadBetterSqlite();
  const skipped: Partial<Record<SystemName, string>> = {};
  const systems: [SystemName, (() => Promise<PeerRun>) | string][] = [
    ['leasehold-sdk', () => leaseholdSdk(sizes)],
    ['bullmq', 'skip' in redis ? redis.skip : () => bullmq(sizes, redis)],
    ['leasehold in-process', () => leaseholdInProcess(sizes)],
    ['plainjob', 'skip' in Database ? Database.skip : () => plainjob(sizes, Database)],
    ['leasehold-sdk bulk enqueue', () => leaseholdSdkBulk(sizes)],
    ['bullmq bulk enqueue', 'skip' in redis ? redis.skip : () => bullmqBulk(sizes, redis)],
    ['leasehold-sdk latency', () => leaseholdSdkLatency(sizes)],
    ['bullmq latency', 'skip' in redis ? redis.skip : () => bullmqLatency(sizes, redis)],
  ];
  const runs: Partial<Record<SystemName, PeerRun[]>> = {};
  for (const [name, run] of systems) {
    if (typeof run === 'string') {
      skipped[name] = run;
      log(`  ${name}: skipped: ${run}`);
    }
  }
  for (let round = 1; round <= sizes.rounds; round++) {
    for (const [name, run] of systems) {
      if (typeof run === 'string') continue;
      const r = await run();
      (runs[name] ??= []).push(r);
      log(`  round ${round}/${sizes.rounds} ${name}: ${describe(r)}`);
    }
  }
  return summarize({ started, sizes, runs, skipped, redis: 'skip' in redis ? undefined : redis.describe, loadBefore, loadAfter: loadavg() });
}

function describe(r: PeerRun): string {
  const parts: string[] = [];
  if (r.enqueuePerSec !== undefined) parts.push(`enqueue ${Math.round(r.enqueuePerSec)}/s`);
  if (r.processPerSec !== undefined) parts.push(`process ${Math.round(r.processPerSec)}/s`);
  if (r.p50Ms !== undefined) parts.push(`p50 ${r.p50Ms.toFixed(1)} ms, p90 ${r.p90Ms?.toFixed(1)} ms`);
  if (r.serverPeakRssMb !== undefined) parts.push(`server peak RSS ${r.serverPeakRssMb.toFixed(0)} MB`);
  return parts.join(', ');
}
