/**
 * How long the upgrade from the 2026-12-05 release (drizzle/0037) to this
 * one takes on a large database, and how long each migration holds the
 * write lock (each is one transaction: nothing else writes meanwhile).
 *
 *   npx tsx bench/upgrade.ts [jobs=1000000]
 *
 * A fresh file migrated to 0037 is seeded with raw SQL: 90% completed jobs,
 * 8% pending (a tenth of them in 1,000 groups, a tenth delayed an hour), 1%
 * failed and 1% running under live leases. Then each newer migration is
 * applied on its own by the real runner, and timed.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrateLibsql, openLibsql } from '../src/runtime/libsql.ts';
import { MIGRATIONS_DIR } from '../src/runtime/node.ts';
import { now } from './lib.ts';

const JOBS = Number(process.argv[2] ?? 1_000_000);
const FROM = '0037';
const dir = mkdtempSync(join(tmpdir(), 'leasehold-upgrade-'));

interface Entry {
  tag: string;
}
const journal = JSON.parse(readFileSync(join(MIGRATIONS_DIR, 'meta', '_journal.json'), 'utf8')) as { entries: Entry[] };

/** A migrations folder holding the journal's entries up to `last` (by tag). */
function folderUpTo(last: string): string {
  const folder = join(dir, `upto-${last}`);
  cpSync(MIGRATIONS_DIR, folder, { recursive: true });
  writeFileSync(join(folder, 'meta', '_journal.json'), JSON.stringify({ ...journal, entries: journal.entries.filter((e) => e.tag.slice(0, 4) <= last.slice(0, 4)) }));
  return folder;
}

try {
  const opened = await openLibsql(`file:${join(dir, 'big.db')}`);
  await migrateLibsql(opened, folderUpTo(FROM));
  const T = Date.UTC(2030, 0, 1);
  const seed0 = now();
  await opened.client.execute({ sql: `INSERT INTO queues (name, created_at, updated_at) VALUES ('big', ?1, ?1), ('grouped', ?1, ?1)`, args: [T] });
  for (let done = 0; done < JOBS; done += 50_000) {
    await opened.client.execute({
      sql: `INSERT INTO jobs (queue_name, payload, status, max_attempts, attempt_count, available_at, started_at, completed_at, failed_at, finished_at,
              lock_token, locked_by, lease_ms, lease_expires_at, last_heartbeat_at, deadline_at, group_key, last_event_actor, created_at, updated_at)
            WITH RECURSIVE s(i) AS (SELECT ?2 UNION ALL SELECT i + 1 FROM s WHERE i < ?3),
              k(i, kind) AS (SELECT i, CASE WHEN i % 100 < 90 THEN 'completed' WHEN i % 100 < 98 THEN 'pending' WHEN i % 100 = 98 THEN 'failed' ELSE 'running' END FROM s)
            SELECT CASE WHEN kind = 'pending' AND i % 10 = 0 THEN 'grouped' ELSE 'big' END, json_object('n', i), kind, 3, CASE WHEN kind = 'pending' THEN 0 ELSE 1 END,
              CASE WHEN kind = 'pending' AND i % 10 = 1 THEN ?1 + 3600000 ELSE ?1 END,
              CASE WHEN kind <> 'pending' THEN ?1 END, CASE WHEN kind = 'completed' THEN ?1 END, CASE WHEN kind = 'failed' THEN ?1 END,
              CASE WHEN kind IN ('completed', 'failed') THEN ?1 END,
              CASE WHEN kind = 'running' THEN lower(hex(randomblob(16))) END, CASE WHEN kind = 'running' THEN 'live-worker' END,
              CASE WHEN kind = 'running' THEN 3600000 END, CASE WHEN kind = 'running' THEN ?1 + 3600000 END, CASE WHEN kind = 'running' THEN ?1 END,
              CASE WHEN kind = 'running' THEN ?1 + 7200000 END,
              CASE WHEN kind = 'pending' AND i % 10 = 0 THEN 'tenant-' || (i % 1000) END, 'bench', ?1, ?1
            FROM k`,
      args: [T, done + 1, Math.min(JOBS, done + 50_000)],
    });
  }
  const seedMs = now() - seed0;
  const newer = journal.entries.filter((e) => e.tag.slice(0, 4) > FROM);
  console.log(`${JOBS.toLocaleString()} jobs seeded at ${FROM} in ${(seedMs / 1000).toFixed(1)} s; applying ${newer.length} migrations one at a time`);
  let total = 0;
  for (const e of newer) {
    const t0 = now();
    await migrateLibsql(opened, folderUpTo(e.tag));
    const ms = now() - t0;
    total += ms;
    console.log(`  ${e.tag.padEnd(40)} ${ms.toFixed(0).padStart(7)} ms (one transaction: the write lock held this long)`);
  }
  console.log(`  ${'total'.padEnd(40)} ${total.toFixed(0).padStart(7)} ms`);
  opened.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
