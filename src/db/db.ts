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
