/**
 * Several migration runners on one database at once, in one process over
 * separate connections: every runner succeeds, and each migration is applied
 * and recorded once. Two kinds of connection: the embedded client (what a
 * `file:` URL opens: BEGIN IMMEDIATE, a busy timeout) and @libsql/client's
 * own (a DEFERRED transaction and no busy timeout, as a remote libSQL server
 * runs the migrate batch), whose lost races show up as SQLITE_BUSY.
 * test/e2e/first-start-race.test.ts starts real processes.
 */
import { createClient } from '@libsql/client';
import { drizzle } from 'drizzle-orm/libsql';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { MIGRATIONS_DIR } from '../../src/runtime/node.ts';
import { migrateLibsql, openLibsql, type OpenedDb } from '../../src/runtime/libsql.ts';
import { applyMigrations } from '../../src/runtime/migrate.ts';

const journal = (folder: string) => JSON.parse(readFileSync(join(folder, 'meta', '_journal.json'), 'utf8')) as { entries: { idx: number; tag: string; when: number; breakpoints: boolean }[] };

const cleanup: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanup.splice(0).reverse()) c();
});

function freshFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-migration-race-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'x.db');
}

async function embedded(path: string): Promise<OpenedDb> {
  const o = await openLibsql(`file:${path}`);
  cleanup.push(() => o.close());
  return o;
}

/** What the database recorded: rows per migration `when`. */
async function recorded(o: OpenedDb): Promise<Map<number, number>> {
  const rows = (await o.client.execute('SELECT created_at, count(*) AS n FROM __drizzle_migrations GROUP BY created_at')).rows;
  return new Map(rows.map((r) => [Number(r.created_at), Number(r.n)]));
}

const ROUNDS = 5;
const RUNNERS = 3;

test(`${RUNNERS} embedded connections migrating a new file at once all succeed, each migration recorded once (${ROUNDS} rounds)`, async () => {
  const whens = journal(MIGRATIONS_DIR).entries.map((e) => e.when);
  for (let round = 0; round < ROUNDS; round++) {
    const path = freshFile();
    const runners = await Promise.all(Array.from({ length: RUNNERS }, () => embedded(path)));
    const results = await Promise.allSettled(runners.map((o) => migrateLibsql(o, MIGRATIONS_DIR)));
    expect(results.map((r) => (r.status === 'rejected' ? String(r.reason) : 'ok'))).toEqual(runners.map(() => 'ok'));
    const rows = await recorded(runners[0]!);
    expect([...rows.keys()].sort()).toEqual([...whens].sort());
    expect([...rows.values()].every((n) => n === 1)).toBe(true);
    // The schema is whole: a table of the first migration and one of the last are there.
    expect((await runners[1]!.client.execute("SELECT count(*) AS n FROM sqlite_master WHERE name IN ('jobs', 'effects')")).rows[0]!.n).toBe(2);
  }
});

test(`${RUNNERS} @libsql/client connections (deferred transactions, no busy timeout: a remote server's way) migrating at once all succeed (${ROUNDS} rounds)`, async () => {
  const whens = journal(MIGRATIONS_DIR).entries.map((e) => e.when);
  for (let round = 0; round < ROUNDS; round++) {
    const path = freshFile();
    const clients = Array.from({ length: RUNNERS }, () => createClient({ url: `file:${path}` }));
    cleanup.push(() => clients.forEach((c) => c.close()));
    const results = await Promise.allSettled(clients.map((client) => applyMigrations(drizzle({ client }), MIGRATIONS_DIR)));
    expect(results.map((r) => (r.status === 'rejected' ? String(r.reason) : 'ok'))).toEqual(clients.map(() => 'ok'));
    // Exactly one runner applied them.
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value.applied : -1)).sort()).toEqual([...Array(RUNNERS - 1).fill(0), whens.length].sort());
    const o = await embedded(path);
    const rows = await recorded(o);
    expect([...rows.keys()].sort()).toEqual([...whens].sort());
    expect([...rows.values()].every((n) => n === 1)).toBe(true);
  }
});

test('a migration that would not fail if run twice (a data change) is still applied once when runners race for it', async () => {
  const folder = mkdtempSync(join(tmpdir(), 'leasehold-drizzle-'));
  cleanup.push(() => rmSync(folder, { recursive: true, force: true }));
  cpSync(MIGRATIONS_DIR, folder, { recursive: true });
  const path = freshFile();
  const first = await embedded(path);
  await migrateLibsql(first, folder);
  await first.client.execute('CREATE TABLE probe (n integer)');
  // The next migration only inserts: nothing in it fails when it runs again.
  const j = journal(folder);
  j.entries.push({ idx: 9999, tag: '9999_probe', when: Math.max(...j.entries.map((e) => e.when)) + 1, breakpoints: true });
  writeFileSync(join(folder, 'meta', '_journal.json'), JSON.stringify(j));
  writeFileSync(join(folder, '9999_probe.sql'), 'INSERT INTO `probe` VALUES (1);');
  const runners = await Promise.all(Array.from({ length: RUNNERS }, () => embedded(path)));
  await Promise.all(runners.map((o) => migrateLibsql(o, folder)));
  expect((await first.client.execute('SELECT count(*) AS n FROM probe')).rows[0]!.n).toBe(1);
  expect((await recorded(first)).get(j.entries.at(-1)!.when)).toBe(1);
});

test('a migration recorded twice by an older leasehold (its runners raced) is recorded once after the next start, which starts', async () => {
  const path = freshFile();
  const o = await embedded(path);
  await migrateLibsql(o, MIGRATIONS_DIR);
  // As an older runner left it: no unique index, the last migration's row twice.
  await o.client.execute('DROP INDEX __drizzle_migrations_once');
  await o.client.execute('INSERT INTO __drizzle_migrations (hash, created_at) SELECT hash, created_at FROM __drizzle_migrations ORDER BY created_at DESC LIMIT 1');
  await migrateLibsql(o, MIGRATIONS_DIR);
  const rows = await recorded(o);
  expect([...rows.values()].every((n) => n === 1)).toBe(true);
  expect(rows.size).toBe(journal(MIGRATIONS_DIR).entries.length);
});
