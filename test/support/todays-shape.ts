/**
 * Replaying "an old server's life" through today's app on a database
 * migrated only part way: today's statements name tables and columns that
 * later migrations add. `lendTodaysShape` adds whatever tables and columns
 * today's schema has and the old one lacks (empty, with their defaults, no
 * constraints beyond NOT NULL with a default) and the indexes today's
 * statements name (INDEXED BY, ON CONFLICT targets; one a later migration
 * redefined is swapped for today's), and the function it answers takes them away
 * again, so the migration under test then runs on the schema the old server
 * really had. Views and triggers are left to each test: a real tally view
 * changes what the replay writes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@libsql/client';
import { migrateLibsql, openLibsql } from '../../src/runtime/libsql.ts';
import { MIGRATIONS } from './helpers.ts';

interface Column {
  name: string;
  type: string;
  notnull: number;
  dflt_value: string | null;
}

async function tablesOf(client: Client): Promise<Map<string, string>> {
  const rows = (await client.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '__drizzle%'")).rows;
  return new Map(rows.map((r) => [String(r.name), String(r.sql)]));
}

const columnsOf = async (client: Client, table: string) => (await client.execute(`PRAGMA table_info(${JSON.stringify(table)})`)).rows as unknown as Column[];

export async function lendTodaysShape(old: Client): Promise<() => Promise<void>> {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-todays-shape-'));
  const today = await openLibsql(`file:${join(dir, 'today.db')}`);
  const added: { table: string; column?: string; index?: string; restore?: string }[] = [];
  try {
    await migrateLibsql(today, MIGRATIONS);
    const oldTables = await tablesOf(old);
    for (const [table, createSql] of await tablesOf(today.client)) {
      if (!oldTables.has(table)) {
        await old.execute(createSql);
        added.push({ table });
        continue;
      }
      const have = new Set((await columnsOf(old, table)).map((c) => c.name));
      for (const c of await columnsOf(today.client, table)) {
        if (have.has(c.name)) continue;
        const dflt = c.dflt_value === null ? '' : ` DEFAULT ${c.dflt_value}`;
        const notNull = c.notnull && c.dflt_value !== null ? ' NOT NULL' : '';
        await old.execute(`ALTER TABLE ${JSON.stringify(table)} ADD ${JSON.stringify(c.name)} ${c.type}${dflt}${notNull}`);
        added.push({ table, column: c.name });
      }
    }
    const oldIndexes = new Map((await old.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index'")).rows.map((r) => [String(r.name), r.sql === null ? null : String(r.sql)]));
    const indexes = (await today.client.execute("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")).rows;
    for (const i of indexes) {
      const oldSql = oldIndexes.get(String(i.name));
      if (oldSql === String(i.sql)) continue;
      // An index a later migration redefined (its conflict target changed,
      // as 0036 did to jobs_active_key_idx) is lent in today's form and given
      // back in the old one.
      if (oldSql) await old.execute(`DROP INDEX ${JSON.stringify(String(i.name))}`);
      await old.execute(String(i.sql));
      added.push({ table: String(i.tbl_name), index: String(i.name), ...(oldSql ? { restore: oldSql } : {}) });
    }
  } finally {
    today.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return async () => {
    for (const a of added.reverse()) {
      if (a.index) {
        await old.execute(`DROP INDEX IF EXISTS ${JSON.stringify(a.index)}`);
        if (a.restore) await old.execute(a.restore);
      }
      else if (a.column) await old.execute(`ALTER TABLE ${JSON.stringify(a.table)} DROP COLUMN ${JSON.stringify(a.column)}`);
      else await old.execute(`DROP TABLE ${JSON.stringify(a.table)}`);
    }
  };
}
