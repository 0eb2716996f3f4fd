import type { Db } from '../../src/db/db.ts';

/**
 * Counts transactions on a real database handle: every write the store makes
 * is one `db.batch` (one transaction, one commit), and the store holds this
 * same handle, so a counter wrapped around the handle's `batch`, forwarding
 * every call to it, counts commits without faking anything.
 */
export function countTransactions(db: Db): () => number {
  const real = db.batch.bind(db);
  let count = 0;
  (db as { batch: unknown }).batch = (queries: Parameters<typeof real>[0]) => {
    count++;
    return real(queries);
  };
  return () => count;
}
