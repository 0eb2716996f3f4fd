/**
 * The oldest SQLite leasehold runs on, and the check every start makes.
 *
 * The embedded client brings its own SQLite, but a remote libSQL server (sqld,
 * or a server built on a distribution's SQLite) runs whatever it was built
 * with, and a statement that uses a newer function fails only when it runs:
 * a 500 for every claim. So each start (serve, migrate, doctor, the embedded
 * library) reads `sqlite_version()` first and refuses below the minimum in
 * one line.
 *
 * MIN_SQLITE_VERSION is the oldest SQLite the test suite runs the migrations
 * and the store conformance suite's statements on (Debian 12's SQLite, 3.40.1:
 * test/store/conformance/libsql.test.ts). SQL_FEATURES lists
 * what the statements use that SQLite added after 3.30, with the version that
 * added it, and test/store/sqlite-version.test.ts fails on a use of a function
 * newer than the minimum (so octet_length, 3.43, is not used: byteLengthSql).
 */
import { sql } from 'drizzle-orm';
import type { Db } from './db.ts';

export const MIN_SQLITE_VERSION = '3.40.0';

/** SQL functions and syntax added after SQLite 3.30, with the version that added each. */
export const SQL_FEATURES: Readonly<Record<string, string>> = {
  'iif()': '3.32.0',
  'UPDATE ... FROM': '3.33.0',
  'RETURNING': '3.35.0',
  'AS MATERIALIZED': '3.35.0',
  'ALTER TABLE ... DROP COLUMN': '3.35.0',
  'math functions (ceil(), floor(), pow(), ...)': '3.35.0',
  'STRICT tables': '3.37.0',
  '->, ->>': '3.38.0',
  'unixepoch()': '3.38.0',
  'format()': '3.38.0',
  'IS [NOT] DISTINCT FROM': '3.39.0',
  'RIGHT / FULL JOIN': '3.39.0',
  'unhex()': '3.41.0',
  "'subsec' modifier": '3.42.0',
  'json_error_position()': '3.42.0',
  'octet_length()': '3.43.0',
  'timediff()': '3.43.0',
  'concat(), concat_ws(), string_agg()': '3.44.0',
  'jsonb functions': '3.45.0',
  'json_pretty()': '3.46.0',
  'if()': '3.48.0',
};

/** -1, 0 or 1 as `a` is older than, the same as or newer than `b` (dotted numbers). */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map((n) => Number.parseInt(n, 10) || 0);
  const pb = b.split('.').map((n) => Number.parseInt(n, 10) || 0);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return 0;
}

/** Why a database on SQLite `found` cannot be used, or undefined when it can. */
export function sqliteVersionRefusal(found: string, minimum = MIN_SQLITE_VERSION): string | undefined {
  if (!/^\d+\.\d+(\.\d+)*$/.test(found)) return `SQLite version ${JSON.stringify(found)} is not a version number; leasehold needs SQLite ${minimum} or later`;
  return compareVersions(found, minimum) < 0 ? `SQLite ${found} is older than ${minimum}, the oldest leasehold runs on` : undefined;
}

/** The database's `sqlite_version()` (the server's, for a remote libSQL database). */
export async function readSqliteVersion(db: Db): Promise<string> {
  const [row] = await db.all<{ v: string }>(sql`SELECT sqlite_version() AS v`);
  return String(row?.v ?? '');
}

/** Thrown by requireSqliteVersion: the message is the refusal (see sqliteVersionRefusal). */
export class SqliteTooOld extends Error {
  override readonly name = 'SqliteTooOld';
  constructor(
    readonly found: string,
    readonly minimum: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Reads the database's SQLite version and throws SqliteTooOld below the
 * minimum; returns the version. `read` is the version read (tests give an
 * older one than the embedded client has).
 */
export async function requireSqliteVersion(db: Db, read: (db: Db) => Promise<string> = readSqliteVersion): Promise<string> {
  const found = await read(db);
  const refusal = sqliteVersionRefusal(found);
  if (refusal) throw new SqliteTooOld(found, MIN_SQLITE_VERSION, refusal);
  return found;
}
