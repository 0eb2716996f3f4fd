/**
 * Opens a libSQL database (embedded file, or a remote libSQL / Turso server)
 * for the Node, Deno and Bun entries, and applies the migrations.
 */
import { createClient, type Client } from '@libsql/client';
import { drizzle } from 'drizzle-orm/libsql';
import { migrate } from 'drizzle-orm/libsql/migrator';
import type { Db } from '../db/db.js';
import * as schema from '../db/schema.js';

export interface OpenedDb {
  db: Db;
  client: Client;
  close(): void;
}

/** How long a connection waits for another process's write lock before SQLITE_BUSY. */
const BUSY_TIMEOUT_MS = 5_000;

export async function openLibsql(url: string, authToken?: string): Promise<OpenedDb> {
  const isFile = url.startsWith('file:');
  // `timeout` is the busy timeout, passed to every connection the client's
  // pool opens: a PRAGMA would hold only for the connection that ran it.
  const client = createClient({ url, ...(authToken ? { authToken } : {}), ...(isFile ? { timeout: BUSY_TIMEOUT_MS } : {}) });
  if (isFile) {
    // WAL is a property of the file, so setting it once holds for every
    // connection: readers never block the writer. synchronous=FULL (the
    // default) keeps every acknowledged commit across a power cut, not only
    // a process crash.
    await client.execute('PRAGMA journal_mode = WAL');
  }
  const db = drizzle(client, { schema }) as unknown as Db;
  return { db, client, close: () => client.close() };
}

/** Applies the committed migrations in `folder` (drizzle/). Safe to run on every start. */
export async function migrateLibsql(opened: OpenedDb, folder: string): Promise<void> {
  await migrate(drizzle(opened.client, { schema }), { migrationsFolder: folder });
}
