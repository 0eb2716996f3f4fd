/** The store conformance suite on libSQL: a fresh, migrated file per test. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createStore } from '../../../src/db/store/create-store.ts';
import { migrateLibsql, openLibsql } from '../../../src/runtime/libsql.ts';
import { MIGRATIONS } from '../../support/helpers.ts';
import { defineStoreConformance } from './suite.ts';

defineStoreConformance({
  name: 'libSQL file',
  async open() {
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-conformance-'));
    const opened = await openLibsql(`file:${join(dir, 'test.db')}`);
    await migrateLibsql(opened, MIGRATIONS);
    return {
      store: createStore(opened.db),
      db: opened.db,
      close() {
        opened.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
});
