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
 *
 * Several runners at once (two servers started together on a new file, a
 * server and `leasehold migrate`, on a local file or a remote libSQL server):
 * what a runner read as applied may be stale by the time its transaction
 * holds the write lock, and a remote server has no interactive transaction
 * in which to read it again. So the transaction re-checks it itself: each
 * migration's bookkeeping row goes in FIRST, before its statements, and
 * created_at is unique (the index below). A runner that lost the race fails
 * on that row, before any statement of the migration ran, and its whole
 * transaction rolls back; it then reads again and applies what is still
 * missing (usually nothing). A transaction that fails for another reason
 * while nobody else applied anything is the migration's own error: thrown.
 */
import { sql } from 'drizzle-orm';
import { readMigrationFiles } from 'drizzle-orm/migrator';
import type { LibSQLDatabase } from 'drizzle-orm/libsql';

/** Rounds of read-then-apply before giving up (each lost race, or a write lock still held past the busy timeout, is one). */
const MAX_ROUNDS = 8;

export async function applyMigrations(db: LibSQLDatabase<Record<string, unknown>>, folder: string): Promise<{ applied: number }> {
  const migrations = readMigrationFiles({ migrationsFolder: folder });
  for (let round = 1; ; round++) {
    let done = new Set<number>();
    try {
      await db.run(sql`CREATE TABLE IF NOT EXISTS __drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)`);
      await ensureRecordedOnce(db);
      done = await appliedWhens(db);
      const pending = migrations.filter((m) => !done.has(m.folderMillis));
      if (pending.length === 0) return { applied: 0 };
      const statements = pending.flatMap((m) => [
        db.run(sql`INSERT INTO __drizzle_migrations (hash, created_at) VALUES (${m.hash}, ${m.folderMillis})`),
        ...m.sql.filter((s) => s.trim() !== '').map((s) => db.run(sql.raw(s))),
      ]);
      // The client's migrate runs them in one transaction with foreign keys off, as drizzle's migrator does.
      await (db as unknown as { session: { migrate(s: unknown[]): Promise<unknown> } }).session.migrate(statements);
      return { applied: pending.length };
    } catch (err) {
      const now = await appliedWhens(db).catch(() => done);
      const someoneElse = [...now].some((w) => !done.has(w));
      if (round >= MAX_ROUNDS || !(someoneElse || isLockBusy(err))) throw err;
      // Another runner holds or just released the write lock: let it finish, then look again.
      if (!someoneElse) await new Promise((r) => setTimeout(r, 20 * round + Math.random() * 50));
    }
  }
}

/**
 * The unique index the re-check inside the transaction relies on (above). An
 * older leasehold's runners that raced on a migration whose statements do not
 * fail when run twice may have recorded it twice: those rows say the same, so
 * one is kept and the index made.
 */
async function ensureRecordedOnce(db: LibSQLDatabase<Record<string, unknown>>): Promise<void> {
  const create = sql`CREATE UNIQUE INDEX IF NOT EXISTS __drizzle_migrations_once ON __drizzle_migrations (created_at)`;
  try {
    await db.run(create);
  } catch (err) {
    if (!causes(err).some((e) => /UNIQUE constraint failed/i.test(e instanceof Error ? e.message : String(e)))) throw err;
    await db.run(sql`DELETE FROM __drizzle_migrations WHERE rowid NOT IN (SELECT min(rowid) FROM __drizzle_migrations GROUP BY created_at)`);
    await db.run(create);
  }
}

async function appliedWhens(db: LibSQLDatabase<Record<string, unknown>>): Promise<Set<number>> {
  const rows = await db.all<{ created_at: number | string }>(sql`SELECT created_at FROM __drizzle_migrations`);
  return new Set(rows.map((r) => Number(r.created_at)));
}

/** SQLITE_BUSY / SQLITE_LOCKED anywhere in the error's causes: another writer held the lock (a client with no busy timeout, or one past it). */
function isLockBusy(err: unknown): boolean {
  return causes(err).some((e) => {
    const code = (e as { code?: unknown }).code;
    return (typeof code === 'string' && /^SQLITE_(BUSY|LOCKED)/.test(code)) || (e instanceof Error && /database is locked|SQLITE_BUSY/i.test(e.message));
  });
}

/** The error and its causes, innermost last. */
function causes(err: unknown): unknown[] {
  const out: unknown[] = [];
  for (let e = err, depth = 0; e && depth < 10; e = (e as { cause?: unknown }).cause, depth++) out.push(e);
  return out;
}
