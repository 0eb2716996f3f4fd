/**
 * sampleActivityOnce: the overview's heartbeat lag history. One sample per
 * pass of each queue's worst heartbeat lag, folded into its minute (the worst
 * per minute is kept), so the dashboard can draw the last hour without
 * reading events.
 */
import type { JobStore } from '../db/store/port.ts';

export interface ActivityReport {
  /** Queues with running jobs sampled in this pass. */
  queuesSampled: number;
}

export async function sampleActivityOnce(store: Pick<JobStore, 'queueMinutesSampleHeartbeatLag'>, at: number): Promise<ActivityReport> {
  const sampled = await store.queueMinutesSampleHeartbeatLag({ now: at });
  return { queuesSampled: sampled.length };
}
