/**
 * The store conformance suite on libSQL: a fresh, migrated file per test.
 * Every statement the suite sends is also recorded, and after it each one is
 * compiled on the oldest SQLite leasehold supports, where the machine has it
 * (Debian 12's `sqlite3`, 3.40), and every test's calls run again, in order
 * and with their arguments, on that SQLite through Python's sqlite3: a
 * function or syntax newer than that fails here, not as a 500 from a remote
 * libSQL server built on it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect } from 'vitest';
import { createStore } from '../../../src/db/store/create-store.ts';
import { MIN_SQLITE_VERSION, sqliteVersionRefusal } from '../../../src/db/sqlite-version.ts';
import { migrateLibsql, openLibsql } from '../../../src/runtime/libsql.ts';
import { MIGRATIONS } from '../../support/helpers.ts';
import { recordStatements, replayOnSystemSqlite, sqliteCli, systemSqliteVersion, type RecordedCall } from '../../support/sqlite-cli.ts';
import { defineStoreConformance } from './suite.ts';

const statements = new Set<string>();
/** Every test's calls, in order (one list per database the suite opened). */
const sequences: RecordedCall[][] = [];

defineStoreConformance({
  name: 'libSQL file',
  async open() {
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-conformance-'));
    const opened = await openLibsql(`file:${join(dir, 'test.db')}`);
    await migrateLibsql(opened, MIGRATIONS);
    const calls: RecordedCall[] = [];
    sequences.push(calls);
    recordStatements(opened.client, statements, calls);
    return {
      store: createStore(opened.db),
      db: opened.db,
      close() {
        opened.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
});

afterAll(() => {
  const cli = sqliteCli();
  // No sqlite3 command here (apt-get install sqlite3), or one too new to tell anything.
  if (!cli || sqliteVersionRefusal(cli.version) !== undefined) return;
  const migrated = cli.migrate(MIGRATIONS);
  try {
    expect(migrated.errors, `the migrations on SQLite ${cli.version}`).toBe('');
    // Statements about schema the suite made itself (indexed fields) refer to objects the new file lacks.
    const refused = cli.refused(migrated.path, statements).filter((r) => !/^no such (index|table): (jobs_field_|probe)|already exists/.test(r.error));
    expect(refused.map((r) => `${r.error}: ${r.sql.slice(0, 200)}`), `statements that SQLite ${cli.version} (the minimum is ${MIN_SQLITE_VERSION}) cannot compile`).toEqual([]);
    expect(statements.size).toBeGreaterThan(0);
    // And run: each test's calls again, with their arguments, in order, on the system's SQLite (Python's sqlite3).
    const system = systemSqliteVersion();
    if (system && sqliteVersionRefusal(system) === undefined) {
      const failed = replayOnSystemSqlite(migrated.path, sequences).filter((r) => !/^no such (index|table): (jobs_field_|probe)/.test(r.error));
      expect(failed.map((r) => `${r.error}: ${r.sql.slice(0, 200)}`), `statements that failed on SQLite ${system}`).toEqual([]);
    }
  } finally {
    migrated.close();
  }
});
