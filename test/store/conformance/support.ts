/**
 * What every store conformance file shares: the backend a run is given, a
 * fixed clock, the settings the suite runs with, and a fresh bundle per test
 * (a store, its database and row factories). Runs in Node and in workerd:
 * nothing here may import node: modules.
 */
import { afterEach, beforeEach } from 'vitest';
import { manualClock, type ManualClock } from '../../../src/core/clock.ts';
import type { Db } from '../../../src/db/db.ts';
import { createStore, type JobStore } from '../../../src/db/store/create-store.ts';
import { factories, type Factories } from './factories.ts';
import { T0 } from './settings.ts';

export { DEFAULTS, RULES, RULES_AND_DEFAULTS, T0 } from './settings.ts';

/** One backend the suite runs against: a fresh, migrated, empty database per call. */
export interface StoreBackend {
  name: string;
  open(): Promise<{ db: Db; close(): Promise<void> | void }>;
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
    bundle = { store: createStore(opened.db), db: opened.db, clock, ...factories(opened.db, clock) };
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
