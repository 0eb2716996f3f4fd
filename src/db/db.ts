/**
 * The database handle the core takes: a Drizzle SQLite database of the async
 * kind with `batch`, which is what both libSQL and D1 give. The runtime entry
 * picks the concrete client; nothing under src/db or src/core does.
 */
import type { BatchItem, BatchResponse } from 'drizzle-orm/batch';
import type { BaseSQLiteDatabase } from 'drizzle-orm/sqlite-core';
import type * as schema from './schema.ts';

export type Schema = typeof schema;

export type Db = BaseSQLiteDatabase<'async', unknown, Schema> & {
  batch<U extends BatchItem<'sqlite'>, T extends Readonly<[U, ...U[]]>>(batch: T): Promise<BatchResponse<T>>;
};

/** `db.batch` over a list built at run time (one transaction, one round trip). */
export async function batchList(db: Db, items: readonly BatchItem<'sqlite'>[]): Promise<unknown[]> {
  if (items.length === 0) return [];
  return (await db.batch(items as unknown as [BatchItem<'sqlite'>, ...BatchItem<'sqlite'>[]])) as unknown[];
}

/**
 * Most jobs one statement inserts (the store's enqueue chunk: each chunk is
 * one transaction, all or none). The database calls are synchronous, so one
 * statement of 10,000 jobs held the event loop for 0.45-0.9 s (heartbeats,
 * /healthz and every other request waited); 500 take about 25 ms.
 */
export const ENQUEUE_CHUNK = 500;
