/**
 * Keeping a lease: running -> running.
 *
 * Precondition: the owner's guard (see owned.ts).
 * Postcondition: heartbeat renews the lease to now + the claim's lease, and
 * stores progress when given; extend (a heartbeat with `leaseMs`) pushes the
 * expiry to now + leaseMs once, before a long step, without changing the
 * length later heartbeats renew by. A renewal never moves the expiry earlier.
 * Checkpoint stores state for the next attempt and renews the lease too. A
 * change of progress or checkpoint sets progressed_at (stall detection). Past
 * the attempt's deadline all three are refused (`lease_lost`, cause
 * `deadline_exceeded`): a hung handler's heartbeats cannot keep its job. These
 * write no event: they are not transitions. No row back: `lease_lost` (or `not_found`).
 * Heartbeats may carry the worker's liveness beat (workers.ts), recorded in
 * the same batch whether or not the leases are accepted.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db.ts';
import { nowSql } from '../sql.ts';
import { ownedWrite, returning } from './owned.ts';
import { workerBeat } from './lost-claims.ts';
import type { CheckpointParams, HeartbeatParams, OwnedOutcome } from './port-types.ts';

/**
 * The claim's longest silence (time without a renewal) after a renewal at
 * `now`, for the SET of a renewal: what-if tuning's evidence (drizzle/0029),
 * kept in the statement that renews, so the hot path runs no trigger for it.
 * A value left by an earlier claim does not count: a claim sets
 * last_heartbeat_at = started_at, so its first renewal starts afresh.
 */
export const longestSilenceSet = (now: SQL) =>
  sql`longest_silence_ms = max(${now} - jobs.last_heartbeat_at, CASE WHEN jobs.last_heartbeat_at > jobs.started_at THEN coalesce(jobs.longest_silence_ms, 0) ELSE 0 END)`;

/**
 * A renewal's lease end and the row's other times, for its SET, rebased when
 * the clock stepped back since the previous renewal (src/db/store/clock-step.ts):
 * a previous renewal later than now says by how much, and the old end and
 * deadline move back by that much before `max` keeps the later end. So no
 * lease counts as ending later than its last renewal plus what it granted,
 * measured on the clock as it is now; on a clock that only moves forward the
 * shift is 0 and the end is `max(old end, now + lease)` as before.
 */
export function renewalSet(now: SQL, lease: SQL): SQL {
  const shift = sql`max(0, jobs.last_heartbeat_at - ${now})`;
  return sql`lease_expires_at = max(jobs.lease_expires_at - ${shift}, ${now} + ${lease}), deadline_at = jobs.deadline_at - ${shift},
    started_at = jobs.started_at - ${shift}, progressed_at = jobs.progressed_at - ${shift}, last_heartbeat_at = ${now}`;
}

export async function jobsHeartbeatIfOwned(db: Db, p: HeartbeatParams): Promise<OwnedOutcome[]> {
  if (p.leases.length === 0) {
    if (p.beat) await workerBeat(db, { ...p.beat, id: p.workerId, now: p.now });
    return [];
  }
  const now = nowSql(p.now);
  const lease = sql`coalesce(${p.leaseMs ?? null}, jobs.lease_ms)`;
  return ownedWrite(db, { refs: p.leases, workerId: p.workerId, write: p.leaseMs ? 'extend' : 'heartbeat', now: p.now, beforeDeadline: true, beat: p.beat }, (v, guard) =>
    sql`UPDATE jobs SET ${longestSilenceSet(now)}, ${renewalSet(now, lease)},
        progress = coalesce(v.data, jobs.progress),
        progressed_at = CASE WHEN v.data IS NOT NULL AND v.data IS NOT jobs.progress THEN ${now} ELSE jobs.progressed_at END
      FROM ${v} AS v WHERE ${guard} RETURNING ${returning(false)}`,
  );
}

export function jobCheckpointIfOwned(db: Db, p: CheckpointParams): Promise<OwnedOutcome[]> {
  const now = nowSql(p.now);
  return ownedWrite(
    db,
    { refs: [{ id: p.id, lockToken: p.lockToken, data: p.checkpoint }], workerId: p.workerId, write: 'checkpoint', now: p.now, beforeDeadline: true },
    (v, guard) => sql`UPDATE jobs SET checkpoint = v.data, ${longestSilenceSet(now)}, ${renewalSet(now, sql`jobs.lease_ms`)},
        progressed_at = CASE WHEN v.data IS NOT jobs.checkpoint THEN ${now} ELSE jobs.progressed_at END
      FROM ${v} AS v WHERE ${guard} RETURNING ${returning(false)}`,
  );
}
