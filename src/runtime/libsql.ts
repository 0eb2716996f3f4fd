/**
 * Opens a libSQL database (embedded file, or a remote libSQL / Turso server)
 * for the Node, Deno and Bun entries, and applies the migrations.
 */
import { createClient, type Client } from '@libsql/client';
import { drizzle } from 'drizzle-orm/libsql';
import type { Db } from '../db/db.ts';
import * as schema from '../db/schema.ts';
import { checkDatabaseFile } from './database-file.ts';
import { filePath } from './file-url.ts';
import { applyMigrations } from './migrate.ts';
import { requireSqliteVersion } from '../db/sqlite-version.ts';
import { createEmbeddedClient, type Synchronous } from './embedded-client.ts';

export interface OpenedDb {
  db: Db;
  client: Client;
  close(): void;
}

/**
 * A `file:` URL opens the embedded client (one connection, cached statements,
 * WAL; `readOnly`: neither writes nor changes the journal mode); any other
 * URL (libsql://, http(s)://) goes to @libsql/client.
 */
export async function openLibsql(url: string, authToken?: string, options: { synchronous?: Synchronous; busyTimeoutMs?: number; readOnly?: boolean } = {}): Promise<OpenedDb> {
  let client: Client;
  if (url.startsWith('file:')) {
    checkDatabaseFile(filePath(url));
    client = createEmbeddedClient({ path: filePath(url), ...options });
  } else {
    client = createClient({ url, ...(authToken ? { authToken } : {}) });
  }
  const db = drizzle({ client, schema }) as unknown as Db;
  return { db, client, close: () => client.close() };
}


/**
 * Applies the committed migrations in `folder` (drizzle/) not applied yet
 * (src/runtime/migrate.ts). Safe to run on every start. First it checks the
 * database's SQLite version (src/db/sqlite-version.ts): below the minimum it
 * throws SqliteTooOld and changes nothing.
 */
export async function migrateLibsql(opened: OpenedDb, folder: string): Promise<void> {
  await requireSqliteVersion(opened.db);
  await applyMigrations(drizzle({ client: opened.client, schema }), folder);
}
