#!/usr/bin/env node
/**
 * `npm run db:snapshot`: after writing a migration by hand (triggers, data
 * moves and other statements drizzle-kit does not write), records schema.ts
 * as the snapshot of the newest migration, so that `drizzle-kit generate`
 * compares the next change of schema.ts with what the migrations already do
 * instead of writing them again.
 *
 * It runs `drizzle-kit generate` in a scratch copy, keeps only the snapshot
 * it writes (renamed to the newest migration's number and chained to the
 * snapshot before it), and drops the SQL it wrote. Check that the newest
 * migration really does what schema.ts says: test/store/drizzle-schema.test.ts
 * compares a database migrated from drizzle/ with the schema.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const DRIZZLE = join(ROOT, 'drizzle');
const journal = JSON.parse(readFileSync(join(DRIZZLE, 'meta', '_journal.json'), 'utf8'));
const newest = journal.entries.at(-1);
const number = newest.tag.slice(0, 4);

const scratch = mkdtempSync(join(tmpdir(), 'leasehold-snapshot-'));
try {
  cpSync(DRIZZLE, join(scratch, 'drizzle'), { recursive: true });
  // Older snapshots of this migration's number would be the base otherwise.
  rmSync(join(scratch, 'drizzle', 'meta', `${number}_snapshot.json`), { force: true });
  const kit = join(ROOT, 'node_modules', 'drizzle-kit', 'bin.cjs');
  // drizzle-kit takes paths relative to where it runs.
  const out = execFileSync(process.execPath, [kit, 'generate', '--dialect', 'sqlite', '--schema', relative(scratch, join(ROOT, 'src', 'db', 'schema.ts')), '--out', 'drizzle'], { cwd: scratch, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (!/No schema changes|Your SQL migration file/.test(out)) throw new Error(`drizzle-kit generate did not say what it did:\n${out}`);
  const written = readdirSync(join(scratch, 'drizzle', 'meta')).filter((f) => f.endsWith('_snapshot.json') && !readdirSync(join(DRIZZLE, 'meta')).includes(f));
  if (written.length === 0) {
    console.log(`schema.ts matches the snapshot of ${newest.tag} already: nothing to do`);
  } else {
    const snapshot = JSON.parse(readFileSync(join(scratch, 'drizzle', 'meta', written[0]), 'utf8'));
    writeFileSync(join(DRIZZLE, 'meta', `${number}_snapshot.json`), JSON.stringify(snapshot, null, 2) + '\n');
    console.log(`${out.trim().split('\n').at(-1)}\nkept its snapshot as drizzle/meta/${number}_snapshot.json (for ${newest.tag}); the SQL it wrote was dropped`);
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
