/**
 * The metrics snapshot (src/db/store/metrics.ts) and the hour's per-minute
 * activity that the metrics, alerts and tuning pages and the overview show,
 * built once per app so that they share one read.
 */
import type { AppDeps } from '../api/deps.ts';
import { DB_CLOCK } from '../core/clock.ts';
import { activityLastHour, type QueueActivity } from './charts.ts';
import { sharedRead } from './shared-read.ts';
import type { MetricsSnapshot } from '../db/store/port.ts';

/** How long one metrics read serves every dashboard poll (see shared-read.ts). */
const SHARED_READ_TTL_MS = 1_000;

export interface MetricsRead {
  snapshotAndActivity(): Promise<{ m: MetricsSnapshot; activity: QueueActivity[] }>;
  snapshot(): Promise<MetricsSnapshot>;
}

export function metricsRead(deps: Pick<AppDeps, 'store' | 'config' | 'clock'>): MetricsRead {
  const { store, config, clock } = deps;
  const read = async () => {
    // The snapshot reads the database clock itself and says what it was (m.now).
    const m = await store.metricsSnapshot({ now: clock.now(), config });
    return { m, activity: await activityLastHour(store, { now: m.now }) };
  };
  // On the database clock (every real server) polls share one read a second;
  // a manual clock (tests) reads afresh each time, so what a test just wrote shows.
  const snapshotAndActivity = clock.now() === DB_CLOCK ? sharedRead(read, SHARED_READ_TTL_MS) : read;
  const snapshot = async () => (await snapshotAndActivity()).m;
  return { snapshotAndActivity, snapshot };
}
