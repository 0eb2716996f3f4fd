/**
 * Debian's `sqlite3` command (3.40.1 on Debian 12, the oldest SQLite leasehold
 * supports) as a second SQLite to check statements against: the migrations
 * run through it, and every statement a test recorded is compiled there with
 * EXPLAIN (SQLite resolves functions, operators and `INDEXED BY` when it
 * prepares a statement, so "no such function" shows up without running it).
 * Absent the command, `sqliteCli()` says so and the caller skips.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client, InStatement } from '@libsql/client';

export interface SqliteCli {
  /** sqlite_version() of the command, e.g. 3.40.1. */
  version: string;
  /** Runs every migration of `folder` on a new file through the command: what it printed on error (empty: all applied). */
  migrate(folder: string): { path: string; errors: string; close(): void };
  /** Compiles each statement on `path` with EXPLAIN: the ones the command refused, with its message. */
  refused(path: string, statements: Iterable<string>): { sql: string; error: string }[];
}

export function sqliteCli(bin = 'sqlite3'): SqliteCli | undefined {
  const probe = spawnSync(bin, ['-batch', ':memory:', 'SELECT sqlite_version()'], { encoding: 'utf8' });
  if (probe.status !== 0 || !probe.stdout) return undefined;
  const version = probe.stdout.trim();
  return {
    version,
    migrate(folder) {
      const dir = mkdtempSync(join(tmpdir(), 'leasehold-sqlite-cli-'));
      const path = join(dir, 'cli.db');
      const entries = (JSON.parse(readFileSync(join(folder, 'meta', '_journal.json'), 'utf8')) as { entries: { tag: string }[] }).entries;
      const script = entries.map((e) => readFileSync(join(folder, `${e.tag}.sql`), 'utf8').replaceAll('--> statement-breakpoint', '')).join(';\n');
      const run = spawnSync(bin, ['-batch', '-bail', path], { input: script, encoding: 'utf8' });
      return { path, errors: run.status === 0 ? '' : run.stderr.trim() || `exit ${run.status}`, close: () => rmSync(dir, { recursive: true, force: true }) };
    },
    refused(path, statements) {
      const list = [...new Set(statements)].map((s) => s.trim()).filter((s) => s !== '' && !/^(BEGIN|COMMIT|ROLLBACK|PRAGMA)\b/i.test(s));
      // One statement a line, so the command's "near line N" names it.
      const lines = list.map((s) => `EXPLAIN ${s.replace(/\s*\n\s*/g, ' ').replace(/;\s*$/, '')};`);
      const run = spawnSync(bin, ['-batch', path], { input: ['.output /dev/null', ...lines].join('\n'), encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
      // A statement the command read wrong also spoils the one after it: each one named is compiled again alone, with the one before it.
      const suspects = new Set<number>();
      for (const m of run.stderr.matchAll(/near line (\d+):/g)) suspects.add(Number(m[1]) - 2).add(Number(m[1]) - 3);
      const out: { sql: string; error: string }[] = [];
      for (const i of [...suspects].filter((i) => i >= 0).sort((a, b) => a - b)) {
        const alone = spawnSync(bin, ['-batch', path], { input: `.output /dev/null\n${lines[i]}`, encoding: 'utf8' });
        const error = /near line \d+: (.*)/.exec(alone.stderr)?.[1] ?? (alone.status !== 0 ? alone.stderr.trim() : undefined);
        if (error) out.push({ sql: list[i]!, error });
      }
      return out;
    },
  };
}

/** One call a client was given: its statements with their arguments, and whether it succeeded there. */
export interface RecordedCall {
  batch: boolean;
  statements: { sql: string; args: unknown }[];
  ok: boolean;
}

/**
 * Wraps a client so that every call it is given (execute, batch, migrate) is
 * recorded in order, with its arguments: the texts go to `texts` (for
 * compiling), the calls to `calls` (for running again, replayOnSystemSqlite).
 */
export function recordStatements(client: Client, texts: Set<string>, calls?: RecordedCall[]): void {
  const stmt = (s: InStatement, args?: unknown) => (typeof s === 'string' ? { sql: s, args: args ?? [] } : { sql: s.sql, args: s.args ?? [] });
  const record = <T>(batch: boolean, ss: { sql: string; args: unknown }[], run: () => Promise<T>): Promise<T> => {
    for (const s of ss) texts.add(s.sql);
    const call: RecordedCall = { batch, statements: ss, ok: true };
    calls?.push(call);
    return run().catch((err: unknown) => {
      call.ok = false;
      throw err;
    });
  };
  const execute = client.execute.bind(client) as (s: InStatement, a?: unknown) => ReturnType<Client['execute']>;
  const batch = client.batch.bind(client);
  const migrate = client.migrate.bind(client);
  Object.assign(client, {
    execute: (s: InStatement, args?: unknown) => record(false, [stmt(s, args)], () => execute(s, args)),
    batch: (ss: InStatement[], mode?: Parameters<Client['batch']>[1]) => record(true, ss.map((s) => stmt(s)), () => batch(ss, mode)),
    migrate: (ss: InStatement[]) => record(true, ss.map((s) => stmt(s)), () => migrate(ss)),
  });
}

const REPLAY = join(import.meta.dirname, 'replay-sqlite.py');

/** Python's sqlite3 module, which runs on the system's SQLite (Debian 12: 3.40.1); undefined without python3. */
export function systemSqliteVersion(): string | undefined {
  const probe = spawnSync('python3', ['-c', 'import sqlite3; print(sqlite3.sqlite_version)'], { encoding: 'utf8' });
  return probe.status === 0 ? probe.stdout.trim() : undefined;
}

/**
 * Runs each sequence of calls again, in order, on its own copy of the
 * database at `path` (migrated by the sqlite3 command), through Python's
 * sqlite3 on the system's SQLite: a batch as one transaction. Returns the
 * statements that failed there while their call had succeeded on libSQL.
 */
export function replayOnSystemSqlite(path: string, sequences: RecordedCall[][]): { sql: string; error: string }[] {
  const encode = (v: unknown): unknown =>
    typeof v === 'bigint' ? { $int: v.toString() } : v instanceof Uint8Array || v instanceof ArrayBuffer ? { $blob: Buffer.from(v as Uint8Array).toString('base64') } : typeof v === 'boolean' ? (v ? 1 : 0) : v;
  const args = (a: unknown) => (Array.isArray(a) ? a.map(encode) : a && typeof a === 'object' ? Object.fromEntries(Object.entries(a).map(([k, v]) => [k.replace(/^[@$:]/, ''), encode(v)])) : []);
  const input = JSON.stringify({ path, sequences: sequences.map((calls) => calls.map((c) => ({ batch: c.batch, ok: c.ok, statements: c.statements.map((s) => ({ sql: s.sql, args: args(s.args) })) }))) });
  const run = spawnSync('python3', [REPLAY], { input, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (run.status !== 0) throw new Error(`replay-sqlite.py failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as { sql: string; error: string }[];
}
