/** Shared helpers for the benchmark: temp databases, timing, statistics, machine info. */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { MIGRATIONS_DIR } from '../src/runtime/node.ts';
import type { Client } from '@libsql/client';
import { migrateLibsql, openLibsql, type OpenedDb } from '../src/runtime/libsql.ts';
import { DB_CLOCK } from '../src/core/clock.ts';
import { defaultConfig } from '../src/core/config.ts';
import { jobsClaimPending } from '../src/db/store/claim.ts';
import { jobsCompleteThenClaim } from '../src/db/store/finish.ts';

export interface TempDb {
  dir: string;
  path: string;
  url: string;
  remove(): void;
}

/** A fresh directory in the OS temp dir holding one database file (plus its -wal/-shm). */
export function tempDb(label: string): TempDb {
  const dir = mkdtempSync(join(tmpdir(), `leasehold-bench-${label}-`));
  const path = join(dir, 'bench.db');
  return { dir, path, url: `file:${path}`, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Opens a migrated libSQL database on a fresh temp file; `done()` closes and deletes it. */
export async function openTempDb(label: string): Promise<OpenedDb & { tmp: TempDb; done(): void }> {
  const tmp = tempDb(label);
  const opened = await openLibsql(tmp.url);
  await migrateLibsql(opened, MIGRATIONS_DIR);
  return {
    ...opened,
    tmp,
    done() {
      opened.close();
      tmp.remove();
    },
  };
}

export const now = () => performance.now();

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Nearest-rank percentile (p in 0..100). */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const rank = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[rank]!;
}

/** Runs `fn` `runs` times (each returns one sample) and gives all samples and their median. */
export async function repeat<T extends Record<string, number>>(runs: number, fn: (run: number) => Promise<T>): Promise<{ runs: T[]; median: T }> {
  const samples: T[] = [];
  for (let i = 0; i < runs; i++) samples.push(await fn(i));
  const keys = Object.keys(samples[0] ?? {}) as (keyof T)[];
  const med = Object.fromEntries(keys.map((k) => [k, median(samples.map((s) => s[k] as number))])) as T;
  return { runs: samples, median: med };
}

export function machineInfo() {
  let cpu = 'unknown';
  try {
    cpu = /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? cpu;
  } catch {
    /* not Linux */
  }
  let nproc = 0;
  try {
    nproc = (readFileSync('/proc/cpuinfo', 'utf8').match(/^processor\s*:/gm) ?? []).length;
  } catch {
    /* not Linux */
  }
  return { nproc, cpu, node: process.version, platform: `${process.platform} ${process.arch}` };
}

/** VmRSS and VmHWM (peak) of a process, in MB, from /proc/<pid>/status. */
export function procMemory(pid: number): { rssMb: number; peakRssMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s*(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rssMb: kb('VmRSS') / 1024, peakRssMb: kb('VmHWM') / 1024 };
}

export const fmt = (n: number, digits = 0) =>
  Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : 'n/a';

/** Fails the benchmark loudly instead of reporting a number for work that did not happen. */
export function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`benchmark sanity check failed: ${message}`);
}

/**
 * Puts `n` pending jobs in `queue` with one INSERT ... SELECT per 10,000 (the
 * audit trigger still writes their `enqueued` events), due now by the
 * database clock: the same rows jobsInsert makes, much faster, so seeding
 * does not dominate the run.
 */
export async function seedPending(client: Client, queue: string, n: number): Promise<void> {
  const NOW = `CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)`;
  await client.execute({ sql: `INSERT INTO queues (name, created_at, updated_at) VALUES (?1, ${NOW}, ${NOW}) ON CONFLICT (name) DO NOTHING`, args: [queue] });
  for (let done = 0; done < n; done += 10_000) {
    await client.execute({
      sql: `INSERT INTO jobs (queue_name, payload, max_attempts, available_at, last_event_actor, created_at, updated_at)
            WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?2), t(now) AS (SELECT ${NOW})
            SELECT ?1, json_object('n', ?3 + i), 5, t.now, 'bench', t.now, t.now FROM s, t ORDER BY i`,
      args: [queue, Math.min(10_000, n - done), done],
    });
  }
}

/**
 * The engine's hot transaction, run until the queue is empty: claim `batch`,
 * then complete them and claim the next `batch` in one batch (in-process, as
 * an SDK completion call does). Answers the process's CPU time per job (us)
 * and how many it completed.
 */
export async function drainHotTransaction(db: OpenedDb, queue: string, batch = 100): Promise<{ cpuUsPerJob: number; completed: number }> {
  const defaults = defaultConfig();
  const cpu0 = process.cpuUsage();
  let held = (await jobsClaimPending(db.db, { queue, workerId: 'w', limit: batch, now: DB_CLOCK, defaults })).map((j) => ({ id: j.id, lockToken: j.lock_token! }));
  let completed = 0;
  while (held.length > 0) {
    const r = await jobsCompleteThenClaim(db.db, {
      workerId: 'w',
      results: held.map((l) => ({ id: l.id, lockToken: l.lockToken, data: null })),
      now: DB_CLOCK,
      claim: { queue, limit: batch },
      defaults,
    });
    completed += r.outcomes.filter((o) => o.ok).length;
    held = r.claimed.map((j) => ({ id: j.id, lockToken: j.lock_token! }));
  }
  const cpu = process.cpuUsage(cpu0);
  return { cpuUsPerJob: (cpu.user + cpu.system) / Math.max(1, completed), completed };
}
