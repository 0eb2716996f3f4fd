/**
 * The migrations as a database sees them: each one applied exactly once,
 * whatever its journal `when` (drizzle-kit stamps the time it ran, and our
 * older entries carry later stamps than that), and the text of every landed
 * migration fixed: a database that applied it never sees an edit, so an edit
 * would leave it on a schema that no migration describes.
 */
import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { MIGRATIONS_DIR } from '../../src/runtime/node.ts';
import { migrateLibsql, openLibsql, type OpenedDb } from '../../src/runtime/libsql.ts';

const LANDED = JSON.parse(readFileSync(join(import.meta.dirname, 'landed-migrations.json'), 'utf8')) as Record<string, string>;
const journal = () => JSON.parse(readFileSync(join(MIGRATIONS_DIR, 'meta', '_journal.json'), 'utf8')) as { entries: { idx: number; tag: string; when: number; breakpoints: boolean }[] };

const opened: OpenedDb[] = [];
afterEach(() => {
  for (const o of opened.splice(0)) o.close();
});

async function freshDatabase(): Promise<OpenedDb> {
  const o = await openLibsql(`file:${join(mkdtempSync(join(tmpdir(), 'leasehold-migrations-')), 'x.db')}`);
  opened.push(o);
  return o;
}

test('every landed migration keeps the text it landed with', () => {
  const changed = Object.entries(LANDED).filter(([tag, hash]) => createHash('sha256').update(readFileSync(join(MIGRATIONS_DIR, `${tag}.sql`))).digest('hex') !== hash);
  expect(changed.map(([tag]) => `${tag}.sql changed after it landed: write a new migration instead`)).toEqual([]);
});

test('every migration in the journal is in the landed list (add its hash in the commit that adds it)', () => {
  const missing = journal().entries.filter((e) => !(e.tag in LANDED));
  const hint = missing.map((e) => `"${e.tag}": "${createHash('sha256').update(readFileSync(join(MIGRATIONS_DIR, `${e.tag}.sql`))).digest('hex')}"`);
  expect(hint, 'add these to test/store/landed-migrations.json').toEqual([]);
});

test('journal entries have distinct whens and file numbers in order', () => {
  const entries = journal().entries;
  expect(new Set(entries.map((e) => e.when)).size).toBe(entries.length);
  const numbers = entries.map((e) => Number(e.tag.slice(0, 4)));
  expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
  expect(entries.map((e) => e.idx)).toEqual(numbers);
});

test('a migration stamped earlier than the last one applied is still applied, once', async () => {
  const folder = mkdtempSync(join(tmpdir(), 'leasehold-drizzle-'));
  cpSync(MIGRATIONS_DIR, folder, { recursive: true });
  const db = await freshDatabase();
  await migrateLibsql(db, folder);
  const j = journal();
  const earliest = Math.min(...j.entries.map((e) => e.when));
  // As drizzle-kit writes one: the next file number, stamped with "now", which is before our latest entries.
  j.entries.push({ idx: 9999, tag: '9999_probe', when: earliest - 1, breakpoints: true });
  writeFileSync(join(folder, 'meta', '_journal.json'), JSON.stringify(j));
  writeFileSync(join(folder, '9999_probe.sql'), 'CREATE TABLE `probe` (`n` integer);\n--> statement-breakpoint\nINSERT INTO `probe` VALUES (1);');
  await migrateLibsql(db, folder);
  await migrateLibsql(db, folder);
  expect((await db.client.execute('SELECT count(*) AS n FROM probe')).rows[0]!.n).toBe(1);
  const rows = (await db.client.execute('SELECT count(*) AS n FROM __drizzle_migrations')).rows[0]!.n;
  expect(Number(rows)).toBe(j.entries.length);
});
