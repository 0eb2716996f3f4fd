/**
 * The files the single binary carries inside itself: the migrations
 * (drizzle/*.sql and drizzle/meta/_journal.json) and public/.
 *
 * src/runtime/bun-server.ts imports these functions as Bun macros
 * (`with { type: 'macro' }`): Bun runs them when it bundles (or transpiles)
 * bun-server.ts and inlines the returned values, so the compiled binary needs no
 * drizzle/ or public/ folder on disk. Run directly (not as a macro) they read
 * the same files, which is what the tests compare against.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** One migration file, named as in the journal; `sql` is the file's text, unchanged. */
export interface EmbeddedMigration {
  tag: string;
  sql: string;
}

export interface EmbeddedMigrations {
  /** drizzle/meta/_journal.json, as text. */
  journal: string;
  files: EmbeddedMigration[];
}

/** drizzle/meta/_journal.json and every .sql file it lists. */
export function embeddedMigrations(): EmbeddedMigrations {
  const folder = join(ROOT, 'drizzle');
  const journal = readFileSync(join(folder, 'meta', '_journal.json'), 'utf8');
  const entries = (JSON.parse(journal) as { entries: { tag: string }[] }).entries;
  return { journal, files: entries.map(({ tag }) => ({ tag, sql: readFileSync(join(folder, `${tag}.sql`), 'utf8') })) };
}

/** Every file under public/ (htmx, the dashboard's CSS, favicon, robots.txt), keyed by its path with `/`, as base64. */
export function embeddedPublicFiles(): Record<string, string> {
  const folder = join(ROOT, 'public');
  const out: Record<string, string> = {};
  if (!existsSync(folder)) return out;
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else out[relative(folder, path).split(sep).join('/')] = readFileSync(path).toString('base64');
    }
  };
  walk(folder);
  return out;
}
