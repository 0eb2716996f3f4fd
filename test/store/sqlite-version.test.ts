/**
 * The oldest SQLite leasehold runs on (src/db/sqlite-version.ts): the SQL
 * in src/db and drizzle/ uses nothing newer (a list of the functions and
 * syntax that SQLite added after 3.30, each with its version), and every
 * start refuses an older database in one line naming both versions: serve,
 * doctor and the embedded openLeasehold. The embedded client's SQLite is
 * newer than the minimum, so the version the gate reads is set here
 * (`reported`); the database itself is real. That the statements really
 * compile on 3.40 is test/store/conformance/libsql.test.ts.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test, vi } from 'vitest';
import { defaultConfig } from '../../src/core/config.ts';
import { StartupError } from '../../src/core/startup-error.ts';
import { compareVersions, MIN_SQLITE_VERSION, SQL_FEATURES, sqliteVersionRefusal } from '../../src/db/sqlite-version.ts';
import { openLeasehold } from '../../src/embedded/leasehold.ts';
import { doctorCommand } from '../../src/cli/doctor.ts';
import { openLibsql } from '../../src/runtime/libsql.ts';
import { startServer } from '../../src/runtime/node.ts';

const reported = vi.hoisted(() => ({ version: undefined as string | undefined }));
vi.mock('../../src/db/sqlite-version.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/db/sqlite-version.ts')>();
  return {
    ...real,
    // The real gate, reading the version set by the test instead of the embedded client's.
    requireSqliteVersion: (db: Parameters<typeof real.requireSqliteVersion>[0]) => real.requireSqliteVersion(db, async (d) => reported.version ?? (await real.readSqliteVersion(d))),
    readSqliteVersion: async (d: Parameters<typeof real.readSqliteVersion>[0]) => reported.version ?? (await real.readSqliteVersion(d)),
  };
});

const dirs: string[] = [];
afterEach(() => {
  reported.version = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function newFileUrl(): string {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-sqlite-version-'));
  dirs.push(dir);
  return `file:${join(dir, 'x.db')}`;
}
const ROOT = join(import.meta.dirname, '..', '..');

/** How each feature of SQL_FEATURES shows in our SQL (TypeScript's own `if (` and Math.ceil are not SQL: those two only in .sql files). */
const PATTERNS: Record<string, { re: RegExp; sqlFilesOnly?: boolean }> = {
  'iif()': { re: /\biif\s*\(/i },
  'UPDATE ... FROM': { re: /\bUPDATE\s+\S+\s+SET\b[^;`]*?\bFROM\s+(?!json_each)\w+\s+\w*\s*WHERE\b[^;`]*?\bRETURNING\b/i, sqlFilesOnly: true },
  RETURNING: { re: /\bRETURNING\b/ },
  'AS MATERIALIZED': { re: /\bAS\s+MATERIALIZED\b/ },
  'ALTER TABLE ... DROP COLUMN': { re: /\bDROP\s+COLUMN\b/i, sqlFilesOnly: true },
  'math functions (ceil(), floor(), pow(), ...)': { re: /\b(ceil|ceiling|floor|pow|power|sqrt|ln|log2|log10|exp|trunc|mod|pi)\s*\(/i, sqlFilesOnly: true },
  'STRICT tables': { re: /\)\s*STRICT\b/ },
  '->, ->>': { re: /\s->>?\s/ },
  'unixepoch()': { re: /\bunixepoch\s*\(/i },
  'format()': { re: /\bformat\s*\(\s*'/i },
  'IS [NOT] DISTINCT FROM': { re: /\bIS\s+(NOT\s+)?DISTINCT\s+FROM\b/i },
  'RIGHT / FULL JOIN': { re: /\b(RIGHT|FULL)\s+(OUTER\s+)?JOIN\b/i },
  'unhex()': { re: /\bunhex\s*\(/i },
  "'subsec' modifier": { re: /'subsec'/i },
  'json_error_position()': { re: /\bjson_error_position\s*\(/i },
  'octet_length()': { re: /\boctet_length\s*\(/i },
  'timediff()': { re: /\btimediff\s*\(/i },
  'concat(), concat_ws(), string_agg()': { re: /\b(concat|concat_ws|string_agg)\s*\(/i },
  'jsonb functions': { re: /\bjsonb(_\w+)?\s*\(/i },
  'json_pretty()': { re: /\bjson_pretty\s*\(/i },
  'if()': { re: /\bif\s*\(/i, sqlFilesOnly: true },
};

function files(dir: string, ext: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path, ext) : name.endsWith(ext) ? [path] : [];
  });
}

/** Code, without comments (they name functions we do not call: "not octet_length"). */
const code = (path: string) => readFileSync(path, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|\s)\/\/.*$/gm, '$1').replace(/^\s*--(?!>).*$/gm, '');

test('the SQL in src/db and drizzle/ uses no function or syntax newer than the minimum SQLite', () => {
  expect(Object.keys(PATTERNS).sort()).toEqual(Object.keys(SQL_FEATURES).sort());
  const sources = [...files(join(ROOT, 'src', 'db'), '.ts').filter((p) => !p.endsWith('sqlite-version.ts')).map((p) => ({ p, sqlFile: false })), ...files(join(ROOT, 'drizzle'), '.sql').map((p) => ({ p, sqlFile: true }))];
  const used = new Map<string, string[]>();
  for (const { p, sqlFile } of sources) {
    const text = code(p);
    for (const [feature, { re, sqlFilesOnly }] of Object.entries(PATTERNS)) {
      if (sqlFilesOnly && !sqlFile) continue;
      if (re.test(text)) used.set(feature, [...(used.get(feature) ?? []), p.slice(ROOT.length + 1)]);
    }
  }
  const newer = [...used].filter(([f]) => compareVersions(SQL_FEATURES[f]!, MIN_SQLITE_VERSION) > 0).map(([f, where]) => `${f} (SQLite ${SQL_FEATURES[f]}) in ${where.join(', ')}`);
  expect(newer, `the minimum is SQLite ${MIN_SQLITE_VERSION}`).toEqual([]);
  // The scan sees what is there: these are used, and each is old enough.
  expect([...used.keys()]).toEqual(expect.arrayContaining(['RETURNING', 'AS MATERIALIZED', '->, ->>']));
});

test('versions compare by number, and a version below the minimum (or no version) is refused in words that name both', () => {
  expect([compareVersions('3.40.1', '3.40.0'), compareVersions('3.9.0', '3.40.0'), compareVersions('3.40', '3.40.0'), compareVersions('3.45.1', '3.40.0')]).toEqual([1, -1, 0, 1]);
  expect(sqliteVersionRefusal('3.40.1')).toBeUndefined();
  expect(sqliteVersionRefusal(MIN_SQLITE_VERSION)).toBeUndefined();
  expect(sqliteVersionRefusal('3.37.2')).toBe(`SQLite 3.37.2 is older than ${MIN_SQLITE_VERSION}, the oldest leasehold runs on`);
  expect(sqliteVersionRefusal('')).toMatch(/is not a version number; leasehold needs SQLite 3\.40\.0 or later/);
});

const REFUSAL = /^leasehold: cannot use the database at file:\S+: SQLite 3\.37\.2 is older than 3\.40\.0, the oldest leasehold runs on$/;

/** Tables in the file: an older database is refused before any migration runs. */
async function tables(url: string): Promise<number> {
  const o = await openLibsql(url);
  try {
    return Number((await o.client.execute("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'")).rows[0]!.n);
  } finally {
    o.close();
  }
}

test('openLeasehold refuses a database on an older SQLite in one line, and migrates nothing', async () => {
  reported.version = '3.37.2';
  const url = newFileUrl();
  const err = await openLeasehold({ databaseUrl: url }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StartupError);
  expect((err as Error).message).toMatch(REFUSAL);
  expect(await tables(url)).toBe(0);
  // At the minimum it opens.
  reported.version = '3.40.1';
  const lh = await openLeasehold({ databaseUrl: url });
  lh.close();
});

test('serve refuses it too, in the same line (the CLI prints a StartupError as it is and exits 1)', async () => {
  reported.version = '3.37.2';
  const url = newFileUrl();
  const err = await startServer(defaultConfig({ databaseUrl: url, port: 0 }), { reaper: false }).then(
    async (s) => (await s.close(), undefined),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StartupError);
  expect((err as Error).message).toMatch(REFUSAL);
  expect(await tables(url)).toBe(0);
});

test('doctor names the version it found: a fail line below the minimum (exit 1), an ok line otherwise', async () => {
  const url = newFileUrl();
  (await openLeasehold({ databaseUrl: url })).close();
  const lines: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((line: string) => void lines.push(line));
  try {
    reported.version = '3.37.2';
    expect(await doctorCommand(defaultConfig({ databaseUrl: url }), new Map())).toBe(1);
    expect(lines.join('\n')).toMatch(/^fail\s+sqlite\s+SQLite 3\.37\.2 is older than 3\.40\.0, the oldest leasehold runs on$/m);
    lines.length = 0;
    reported.version = '3.40.1';
    expect(await doctorCommand(defaultConfig({ databaseUrl: url }), new Map())).toBe(0);
    expect(lines.join('\n')).toMatch(/^ok\s+sqlite\s+SQLite 3\.40\.1 \(leasehold needs 3\.40\.0 or later\)$/m);
  } finally {
    log.mockRestore();
  }
});
