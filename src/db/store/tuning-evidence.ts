/**
 * What-if tuning's evidence (drizzle/0029), read for one window: the
 * attempts owners ended, counted by longest silence; the attempts the reaper
 * took, each with what its owner did afterwards (its first refused write to
 * the job, whether its process beat again); the event-loop blocks workers
 * reported, once per queue they serve. The recording is done by the
 * statements themselves (lease.ts keeps a claim's longest silence, triggers
 * write the rest); src/core/what-if.ts replays it. Retention deletes it after
 * EVIDENCE_KEEP_MS.
 */
import { lt, sql } from 'drizzle-orm';
import { MINUTE_MS } from '../../core/clock.ts';
import type { SilenceCount, TakenAttempt, TuningEvidence, WorkerBlock } from '../../core/what-if.ts';
import { batchList, type Db } from '../db.ts';
import { attemptSilences, takenAttempts, workerBlocks } from '../schema.ts';
import type { TuningEvidenceParams } from './port-types.ts';

/** The evidence is kept this long: the longest window a what-if can replay. */
export const EVIDENCE_KEEP_MS = 24 * 3_600_000;

/** At most this many reaped attempts and blocks are read (newest first): a window with more says so by its count. */
export const EVIDENCE_ROW_LIMIT = 5_000;

export async function tuningEvidenceRead(db: Db, p: TuningEvidenceParams): Promise<TuningEvidence> {
  const one = p.queue !== undefined;
  const sinceMinute = p.sinceMs - (p.sinceMs % MINUTE_MS);
  const [silences, taken, blocks] = await batchList(db, [
    db.all<SilenceCount>(sql`SELECT queue_name AS queue, silence_ms AS silenceMs, sum(attempts) AS attempts FROM attempt_silences
      WHERE minute_at >= ${sinceMinute} AND minute_at < ${p.untilMs} ${one ? sql`AND queue_name = ${p.queue}` : sql``}
      GROUP BY queue_name, silence_ms`),
    // The owner's first refused write after the take reads events_job_idx; its
    // liveness row says whether the same process beat after the take.
    db.all<Omit<TakenAttempt, 'ownerSeenAfter'> & { ownerSeenAfter: number | null }>(sql`SELECT t.queue_name AS queue, t.job_id AS jobId, t.attempt, t.worker_id AS workerId,
        t.last_heartbeat_at AS lastHeartbeatAt, t.lease_ms AS leaseMs, t.taken_at AS takenAt, t.reason,
        (SELECT min(e.at) FROM events e WHERE e.job_id = t.job_id AND e.type = 'stale_write_rejected' AND e.worker_id = t.worker_id AND e.at >= t.taken_at) AS ownerBackAt,
        (SELECT w.last_seen_at > t.taken_at FROM workers w WHERE w.id = t.worker_id
          AND (t.instance_id IS NULL OR w.instance_id IS NULL OR w.instance_id = t.instance_id)) AS ownerSeenAfter
      FROM taken_attempts t WHERE t.taken_at >= ${p.sinceMs} AND t.taken_at < ${p.untilMs} ${one ? sql`AND t.queue_name = ${p.queue}` : sql``}
      ORDER BY t.taken_at DESC LIMIT ${EVIDENCE_ROW_LIMIT}`),
    // A block counts for every queue its worker serves; asked for one queue,
    // also the blocks of the workers whose attempts there were taken (a
    // worker that did not say which queues it serves).
    db.all<Omit<WorkerBlock, 'queue'> & { queue: string | null }>(sql`SELECT q.value AS queue, b.worker_id AS workerId, b.reported_at AS reportedAt, b.block_ms AS blockMs
      FROM worker_blocks b LEFT JOIN json_each(CASE WHEN json_valid(b.queues) AND json_type(b.queues) = 'array' THEN b.queues ELSE '[]' END) q
      WHERE b.reported_at >= ${p.sinceMs} AND b.reported_at < ${p.untilMs}
        ${one ? sql`AND (q.value = ${p.queue} OR b.worker_id IN (SELECT worker_id FROM taken_attempts WHERE queue_name = ${p.queue} AND taken_at >= ${p.sinceMs}))` : sql``}
      ORDER BY b.reported_at DESC LIMIT ${EVIDENCE_ROW_LIMIT}`),
  ]);
  return {
    silences: (silences as SilenceCount[]).map((s) => ({ queue: s.queue, silenceMs: Number(s.silenceMs), attempts: Number(s.attempts) })),
    taken: (taken as (Omit<TakenAttempt, 'ownerSeenAfter'> & { ownerSeenAfter: number | null })[]).map((t) => ({
      queue: t.queue,
      jobId: Number(t.jobId),
      attempt: Number(t.attempt),
      workerId: t.workerId,
      lastHeartbeatAt: t.lastHeartbeatAt === null ? null : Number(t.lastHeartbeatAt),
      leaseMs: t.leaseMs === null ? null : Number(t.leaseMs),
      takenAt: Number(t.takenAt),
      reason: t.reason,
      ownerBackAt: t.ownerBackAt === null ? null : Number(t.ownerBackAt),
      ownerSeenAfter: Boolean(t.ownerSeenAfter),
    })),
    blocks: (blocks as (Omit<WorkerBlock, 'queue'> & { queue: string | null })[]).map((b) => ({
      // A block from a worker that named no queue belongs to the queue asked about (it was found through a take there).
      queue: b.queue ?? p.queue ?? '',
      workerId: b.workerId,
      reportedAt: Number(b.reportedAt),
      blockMs: Number(b.blockMs),
    })),
  };
}

/** Retention's deletes of evidence older than EVIDENCE_KEEP_MS (one per table, by its time index). */
export function tuningEvidencePruneStatements(db: Db, p: { now: number }) {
  const before = p.now - EVIDENCE_KEEP_MS;
  return [
    db.delete(attemptSilences).where(lt(attemptSilences.minuteAt, before)),
    db.delete(takenAttempts).where(lt(takenAttempts.takenAt, before)),
    db.delete(workerBlocks).where(lt(workerBlocks.reportedAt, before)),
  ];
}
