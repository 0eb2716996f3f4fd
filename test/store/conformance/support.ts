/**
 * What every store conformance file shares: the backend a run is given, a
 * fixed clock, the settings the suite runs with, and a fresh bundle per test
 * (a store, its database and row factories). Runs in Node and in workerd:
 * nothing here may import node: modules.
 */
import { afterEach, beforeEach } from 'vitest';
import { manualClock, type ManualClock } from '../../../src/core/clock.ts';
import type { Db } from '../../../src/db/db.ts';
import type { JobStore } from '../../../src/db/store/port.ts';
import { factories, type Factories } from './factories.ts';
import { T0 } from './settings.ts';

export { DEFAULTS, RULES, RULES_AND_DEFAULTS, T0 } from './settings.ts';

/**
 * One backend the suite runs against: per call, a fresh, migrated, empty
 * database and the backend's `JobStore` over it. The tests act through the
 * store (the port) only; `db` is the same database, for the row factories'
 * arranging inserts and the checks that read a table the port does not show.
 */
export interface StoreBackend {
  name: string;
  open(): Promise<{ store: JobStore; db: Db; close(): Promise<void> | void }>;
}

export interface Bundle extends Factories {
  store: JobStore;
  db: Db;
  /** Starts at T0 for every test; tests move it. */
  clock: ManualClock;
}

/**
 * Call once at the top of a describe: each test gets a fresh database from
 * `backend` and a clock at T0. Read the bundle inside the test (`t()`).
 */
export function useBundle(backend: StoreBackend): () => Bundle {
  let bundle: Bundle | undefined;
  let close: (() => Promise<void> | void) | undefined;
  beforeEach(async () => {
    const opened = await backend.open();
    close = opened.close;
    const clock = manualClock(T0);
    bundle = { store: opened.store, db: opened.db, clock, ...factories(opened.db, clock) };
  });
  afterEach(async () => {
    await close?.();
    bundle = undefined;
  });
  return () => {
    if (!bundle) throw new Error('useBundle: read the bundle inside a test');
    return bundle;
  };
}
