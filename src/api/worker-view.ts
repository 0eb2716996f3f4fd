/** A worker as GET /workers answers it: liveness, what it reports, and what the database says it holds. */
import { iso } from '../core/job-record.ts';
import type { WorkerRecord } from '../db/store/port.ts';

/** A worker as GET /workers answers it (its schema: src/api/view-schemas.ts). */
export type WorkerView = ReturnType<typeof workerView>;

export function workerView(w: WorkerRecord, now: number, aliveMs: number, held: { held: number; expired: number } | undefined) {
  let queues: string[] | null = null;
  try {
    const parsed: unknown = w.queues === null ? null : JSON.parse(w.queues);
    if (Array.isArray(parsed)) queues = parsed.filter((x): x is string => typeof x === 'string');
  } catch {
    queues = null;
  }
  return {
    id: w.id,
    alive: w.last_seen_at >= now - aliveMs,
    lastSeenAt: iso(w.last_seen_at),
    lastSeenAgoMs: Math.max(0, now - w.last_seen_at),
    startedAt: iso(w.started_at),
    queues,
    host: w.host,
    pid: w.pid,
    version: w.version,
    // Restarts under the same id, once the registry counts them (null until then).
    restarts: w.restarts,
    /** What the worker last reported running. */
    runningCount: w.running_count,
    /** Running jobs the database says it holds, and how many of those leases have expired. */
    heldJobs: held?.held ?? 0,
    expiredLeases: held?.expired ?? 0,
    // What the process reported with its last beat, since it started; null:
    // an SDK that does not report them. Event-loop blocks on a live worker
    // mean it is hung (CPU-bound handler), not dead.
    counters:
      w.event_loop_blocks === null && w.longest_event_loop_block_ms === null && w.heartbeat_failures === null && w.leases_lost === null
        ? null
        : {
            eventLoopBlocks: w.event_loop_blocks,
            longestEventLoopBlockMs: w.longest_event_loop_block_ms,
            heartbeatFailures: w.heartbeat_failures,
            leasesLost: w.leases_lost,
          },
  };
}
