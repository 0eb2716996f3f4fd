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

/** Wraps a client so that every statement it is given (execute, batch, migrate) is added to `into`. */
export function recordStatements(client: Client, into: Set<string>): void {
  const text = (s: InStatement) => (typeof s === 'string' ? s : s.sql);
  const execute = client.execute.bind(client);
  const batch = client.batch.bind(client);
  const migrate = client.migrate.bind(client);
  Object.assign(client, {
    execute: (s: InStatement, args?: unknown) => (into.add(text(s)), (execute as (s: InStatement, a?: unknown) => ReturnType<Client['execute']>)(s, args)),
    batch: (ss: InStatement[], mode?: Parameters<Client['batch']>[1]) => (ss.forEach((s) => into.add(text(s))), batch(ss, mode)),
    migrate: (ss: InStatement[]) => (ss.forEach((s) => into.add(text(s))), migrate(ss)),
  });
}
