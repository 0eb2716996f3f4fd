/**
 * The store conformance suite on D1 in workerd: the same test files as
 * test/store/conformance/libsql.test.ts, over the Worker's own D1 adapter (d1Db).
 * Storage is isolated per test file, not per test, so each test starts by
 * emptying every table of the migrated database: as fresh as a new file.
 */
import { env } from 'cloudflare:test';
import { sql } from 'drizzle-orm';
import { batchList, type Db } from '../../../src/db/db.ts';
import { createStore } from '../../../src/db/store/create-store.ts';
import { d1Db } from '../../../src/runtime/cloudflare.ts';
import { defineStoreConformance } from '../../store/conformance/suite.ts';

async function emptyEveryTable(db: Db): Promise<void> {
  const rows = await db.all<{ name: string }>(
    sql`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name <> 'd1_migrations'`,
  );
  // jobs first: its delete trigger writes finished_counts, emptied after it.
  const tables = rows.map((r) => r.name).sort((a, b) => Number(b === 'jobs') - Number(a === 'jobs'));
  await batchList(db, tables.map((t) => db.run(sql.raw(`DELETE FROM "${t}"`))));
}

defineStoreConformance({
  name: 'D1 (workerd)',
  async open() {
    const db = d1Db(env.DB);
    await emptyEveryTable(db);
    return { store: createStore(db), db, close() {} };
  },
});
