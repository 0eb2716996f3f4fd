/**
 * What the job pages (jobs list, job page, zombies) read alike, built once
 * per app so they share it: the time a page is drawn at, and the suspect
 * thresholds, one read of which serves every page and poll for a while.
 */
import type { AppDeps } from '../api/deps.ts';
import { DB_CLOCK } from '../core/clock.ts';
import { sharedRead } from './shared-read.ts';
import type { QueueSuspectThreshold } from '../db/store/port.ts';

/** How long one read of the suspect thresholds serves every page and poll (database clock only). */
const SUSPECT_THRESHOLDS_TTL_MS = 10_000;

export interface PageReads {
  /** The test's manual clock, else the database's. */
  now(): Promise<number>;
  /** Shared on the database clock; undefined (each read takes its own) on a manual clock. */
  suspects(): Promise<readonly QueueSuspectThreshold[] | undefined>;
}

export function pageReads(deps: Pick<AppDeps, 'store' | 'config' | 'clock'>): PageReads {
  const { store, config, clock } = deps;
  const now = async () => {
    const n = clock.now();
    return typeof n === 'number' ? n : store.readNow();
  };
  // The suspect thresholds read the hour's runtime sample (~40 ms at a
  // million jobs, only while a live job is past its lease): on the database
  // clock every page and poll shares one read for 10 s (a new suspect may
  // show up to 10 s late); a manual clock (tests) reads afresh.
  const sharedSuspects = sharedRead(async () => store.suspectThresholds({ now: await store.readNow(), defaults: config }), SUSPECT_THRESHOLDS_TTL_MS);
  const suspects = async () => (clock.now() === DB_CLOCK ? sharedSuspects() : undefined);
  return { now, suspects };
}
