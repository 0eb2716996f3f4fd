/**
 * Applies the migrations of drizzle/ that a libSQL database has not applied
 * yet, in the journal's order, in one transaction, keeping drizzle's own
 * bookkeeping table (`__drizzle_migrations`: a row per migration, its hash
 * and its journal `when` as created_at).
 *
 * Why not drizzle's migrator: it applies only the migrations whose `when` is
 * later than the last one applied. A migration written today with a `when`
 * below an older one's (drizzle-kit stamps the time it ran; several of ours
 * were stamped by hand) would be skipped for good on every database that
 * already has the older one, and the server would start on a schema it does
 * not know. Here a migration counts as applied when its `when` is in the
 * table, so each one is applied exactly once whatever its `when`. A database
 * migrated by drizzle's migrator has the same rows, so either one can take
 * over from the other. (D1 is migrated by wrangler, by file name.)
 */
import { sql } from 'drizzle-orm';
import { readMigrationFiles } from 'drizzle-orm/migrator';
import type { LibSQLDatabase } from 'drizzle-orm/libsql';

export async function applyMigrations(db: LibSQLDatabase<Record<string, unknown>>, folder: string): Promise<{ applied: number }> {
  const migrations = readMigrationFiles({ migrationsFolder: folder });
  await db.run(sql`CREATE TABLE IF NOT EXISTS __drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)`);
  const done = new Set((await db.all<{ created_at: number | string }>(sql`SELECT created_at FROM __drizzle_migrations`)).map((r) => Number(r.created_at)));
  const pending = migrations.filter((m) => !done.has(m.folderMillis));
  if (pending.length === 0) return { applied: 0 };
  const statements = pending.flatMap((m) => [
    ...m.sql.filter((s) => s.trim() !== '').map((s) => db.run(sql.raw(s))),
    db.run(sql`INSERT INTO __drizzle_migrations (hash, created_at) VALUES (${m.hash}, ${m.folderMillis})`),
  ]);
  // The client's migrate runs them in one transaction with foreign keys off, as drizzle's migrator does.
  await (db as unknown as { session: { migrate(s: unknown[]): Promise<unknown> } }).session.migrate(statements);
  return { applied: pending.length };
}
