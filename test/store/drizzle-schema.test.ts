/**
 * schema.ts is the one description of the tables, and the migrations agree
 * with it: drizzle-kit, run on a clean copy of drizzle/, finds nothing to
 * generate (the newest snapshot is the schema: `npm run db:snapshot` after a
 * hand-written migration), and a database migrated from drizzle/ has exactly
 * the tables, columns, NULL rules and indexes schema.ts declares.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { getTableConfig, type SQLiteTable } from 'drizzle-orm/sqlite-core';
import { afterAll, expect, test } from 'vitest';
import * as schema from '../../src/db/schema.ts';
import { migrateLibsql, openLibsql, type OpenedDb } from '../../src/runtime/libsql.ts';
import { MIGRATIONS_DIR } from '../../src/runtime/node.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const tables = (Object.values(schema) as unknown[]).filter((v): v is SQLiteTable => typeof v === 'object' && v !== null && Symbol.for('drizzle:IsDrizzleTable') in v);

let opened: OpenedDb | undefined;
afterAll(() => opened?.close());

test('drizzle-kit generate on a clean copy of drizzle/ has nothing to do', { timeout: 60_000 }, () => {
  const scratch = mkdtempSync(join(tmpdir(), 'leasehold-drizzle-kit-'));
  cpSync(MIGRATIONS_DIR, join(scratch, 'drizzle'), { recursive: true });
  const out = execFileSync(process.execPath, [join(ROOT, 'node_modules', 'drizzle-kit', 'bin.cjs'), 'generate', '--dialect', 'sqlite', '--schema', relative(scratch, join(ROOT, 'src', 'db', 'schema.ts')), '--out', 'drizzle'], {
    cwd: scratch,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  expect(out, 'schema.ts and the newest snapshot differ: write the migration, then npm run db:snapshot').toContain('No schema changes');
  expect(readdirSync(join(scratch, 'drizzle')).filter((f) => f.endsWith('.sql')).sort()).toEqual(readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith('.sql')).sort());
});

test('a database migrated from drizzle/ has the tables, columns and indexes schema.ts declares', async () => {
  opened = await openLibsql(`file:${join(mkdtempSync(join(tmpdir(), 'leasehold-schema-')), 'x.db')}`);
  await migrateLibsql(opened, MIGRATIONS_DIR);
  const rows = async (q: string) => (await opened!.client.execute(q)).rows as unknown as Record<string, unknown>[];
  expect(tables.length).toBeGreaterThan(10);
  for (const table of tables) {
    const config = getTableConfig(table);
    const columns = await rows(`SELECT name, "notnull" AS not_null FROM pragma_table_info('${config.name}') ORDER BY name`);
    expect(columns.map((c) => `${c.name}${Number(c.not_null) ? ' NOT NULL' : ''}`), config.name).toEqual(
      config.columns.map((c) => `${c.name}${c.notNull || c.primary ? ' NOT NULL' : ''}`).sort(),
    );
    const indexes = await rows(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = '${config.name}' AND sql IS NOT NULL ORDER BY name`);
    expect(indexes.map((i) => i.name), `${config.name} indexes`).toEqual(config.indexes.map((i) => i.config.name).sort());
  }
});
