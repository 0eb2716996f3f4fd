/**
 * A consistent copy of a live database. `VACUUM INTO` reads the whole
 * database inside one read transaction, so the copy is one moment's snapshot
 * even while the server keeps writing (in WAL mode readers never block
 * writers, and writers never block this reader); the copy is also compacted.
 */
import { sql } from 'drizzle-orm';
import type { Db } from './db.ts';

export async function backupInto(db: Db, path: string): Promise<void> {
  await db.run(sql`VACUUM INTO ${path}`);
}
