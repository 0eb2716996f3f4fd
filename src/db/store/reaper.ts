/**
 * The reaper's statements.
 *
 * - candidates: running jobs whose lease expired more than the queue's grace
 *   ago, or whose deadline passed; oldest expiry first. Read as two lists of
 *   at most `limit` each: those the reaper will take, and those it will defer
 *   (owner alive, still inside maxReapDeferMs). Deferrals cost no slot of the
 *   batch, so a dead owner's job behind many live owners' late jobs is taken
 *   in the same pass.
 * - take back: running -> pending (with backoff) or -> failed. The guard is
 *   the token the reaper read and, for an expired lease, the expiry it read:
 *   a heartbeat that lands between the read and the write moves the expiry,
 *   so the write finds no row and the job stays with its owner.
 *   A requeue of a job whose onLost is 'hold' holds it for a person instead
 *   (held.ts): pending, out of every claim's reach, event `held`.
 * - defer: no state change; a `reap_deferred` event says why, under the same guard.
 * - hold (after a server's gap, src/db/store/reaper-hold.ts): no state
 *   change; a `reap_held` event. Every take of an expired lease restates "no
 *   hold in force" in its WHERE, so a hold begun after the read still wins.
 * - prune: finished jobs past retention, with their events and effects.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { QueueDefaults } from '../../core/config.ts';
import type { ReapDecision } from '../../core/reaper.ts';
import { batchList, type Db } from '../db.ts';
import { backoffSql } from '../sql.ts';
import { CLEAR_LEASE } from './owned.ts';
import { heldSetSql } from './held.ts';
import { ownerLastSeenSql, ownerProcessSql } from './workers.ts';
import { noHoldInForceSql, reaperHoldColumns } from './reaper-hold.ts';
import type { ReapCandidateParams, ReapCandidateRow, ReapWrite } from './port-types.ts';

/** The candidate's columns, read from `jobs j LEFT JOIN queues q` (the reaper's read and the operator's requeue share them). */
export const reapCandidateColumns = (defaults: QueueDefaults) => sql`j.id AS id, j.queue_name AS queueName, j.lock_token AS lockToken, j.locked_by AS lockedBy,
    j.attempt_count AS attemptCount, j.max_attempts AS maxAttempts, j.lost_attempts AS lostAttempts,
    coalesce(q.max_lost_attempts, ${defaults.maxLostAttempts}) AS maxLostAttempts,
    j.lease_expires_at AS leaseExpiresAt, coalesce(q.grace_ms, ${defaults.graceMs}) AS graceMs,
    j.deadline_at AS deadlineAt, j.started_at AS startedAt, ${ownerLastSeenSql('j')} AS ownerLastSeenAt, ${reaperHoldColumns()},
    j.last_heartbeat_at AS lastHeartbeatAt, coalesce(j.on_lost, q.on_lost, 'retry') AS onLost,
    j.locked_by_instance AS lockedByInstance, ${ownerProcessSql('j', 'host')} AS ownerHost, ${ownerProcessSql('j', 'pid')} AS ownerPid`;

/**
 * The candidates the reaper will take (at most `limit`), then those it will
 * defer (at most `limit`), in one batch. The split restates decideReap's
 * deferral rule in SQL only to sort the rows: decideReap still decides each.
 */
export async function jobsGetReapCandidates(db: Db, p: ReapCandidateParams): Promise<{ take: ReapCandidateRow[]; defer: ReapCandidateRow[]; inGrace?: ReapCandidateRow[] }> {
  const columns = sql`${reapCandidateColumns(p.defaults)}
    FROM jobs j LEFT JOIN queues q ON q.name = j.queue_name`;
  // Index range scans only (expired leases; passed deadlines), so the pass
  // costs the same with a million finished rows as with none.
  const expired = sql`SELECT ${columns} WHERE j.status = 'running' AND j.lease_expires_at < ${p.now}
    AND j.lease_expires_at < ${p.now} - coalesce(q.grace_ms, ${p.defaults.graceMs})`;
  const deadlinePassed = sql`(deadlineAt IS NOT NULL AND deadlineAt <= ${p.now})`;
  const deferrable = sql`(ownerLastSeenAt IS NOT NULL AND ownerLastSeenAt >= ${p.now - p.rules.workerAliveMs}
    AND ${p.now} - leaseExpiresAt - graceMs < ${p.rules.maxReapDeferMs} AND NOT ${deadlinePassed})`;
  const reads = [
    db.all<ReapCandidateRow>(sql`SELECT * FROM (
        SELECT * FROM (${expired}) WHERE NOT ${deferrable}
        UNION
        SELECT ${columns} WHERE j.status = 'running' AND j.deadline_at IS NOT NULL AND j.deadline_at <= ${p.now}
      ) ORDER BY leaseExpiresAt, id LIMIT ${p.limit}`),
    db.all<ReapCandidateRow>(sql`SELECT * FROM (${expired}) WHERE ${deferrable} ORDER BY leaseExpiresAt, id LIMIT ${p.limit}`),
  ] as const;
  if (!p.inGrace) {
    const [take, defer] = await db.batch(reads);
    return { take, defer };
  }
  const inGrace = db.all<ReapCandidateRow>(sql`SELECT ${columns} WHERE j.status = 'running' AND j.lease_expires_at < ${p.now}
      AND j.lease_expires_at >= ${p.now} - coalesce(q.grace_ms, ${p.defaults.graceMs}) AND (j.deadline_at IS NULL OR j.deadline_at > ${p.now})
    ORDER BY j.lease_expires_at, j.id LIMIT ${p.limit}`);
  const [take, defer, graced] = await db.batch([...reads, inGrace]);
  return { take, defer, inGrace: graced };
}

/** One statement per decision, all in one batch; returns which ids were taken back. */
export async function jobsReapIfUnchanged(db: Db, p: { now: number; writes: readonly ReapWrite[]; defaults: QueueDefaults }): Promise<Set<number>> {
  const writes = p.writes.filter((w): w is { candidate: ReapCandidateRow; decision: Exclude<ReapDecision, { action: 'none' | 'hold' }> } => w.decision.action !== 'hold');
  if (writes.length === 0) return new Set();
  const statements = writes.map(({ candidate: c, decision: d }) => {
    const guard = sql`id = ${c.id} AND status = 'running' AND lock_token = ${c.lockToken}`;
    const leaseGuard =
      d.action !== 'defer' && d.cause === 'deadline'
        ? sql`AND deadline_at = ${c.deadlineAt}`
        : d.action === 'defer'
          ? sql`AND lease_expires_at = ${c.leaseExpiresAt}`
          : sql`AND lease_expires_at = ${c.leaseExpiresAt} AND ${noHoldInForceSql(p.now)}`;
    if (d.action === 'defer') {
      return db.all<{ id: number }>(sql`UPDATE jobs SET reaper_deferrals = reaper_deferrals + 1 WHERE ${guard} ${leaseGuard} RETURNING id`);
    }
    if (d.action === 'requeue' && d.held) {
      // onLost 'hold': the job waits for a person; a lost attempt held is
      // not counted toward maxLostAttempts (a deadline's still counts as errored).
      const counted = d.cause === 'deadline' ? sql`errored_attempts = errored_attempts + 1, ` : sql``;
      const hold = heldSetSql({ now: p.now, reason: d.cause === 'deadline' ? 'deadline_held' : 'lost_attempt_held', why: d.why, worker: c.lockedBy, lastHeartbeatAt: c.lastHeartbeatAt });
      return db.all<{ id: number }>(sql`UPDATE jobs SET ${hold}, ${counted}${CLEAR_LEASE}, updated_at = ${p.now}, last_event_actor = 'reaper'
        WHERE ${guard} ${leaseGuard} RETURNING id`);
    }
    const counted = d.cause === 'lost' ? sql`lost_attempts = lost_attempts + 1` : sql`errored_attempts = errored_attempts + 1`;
    const error = d.action === 'fail' ? d.message : d.why;
    const next: SQL =
      d.action === 'requeue'
        ? sql`status = 'pending', available_at = ${p.now} + ${backoffSql(sql`attempt_count`, sql`queue_name`, p.defaults)}`
        : sql`status = 'failed', failed_at = ${p.now}, finished_at = ${p.now}`;
    return db.all<{ id: number }>(sql`UPDATE jobs SET ${next}, ${counted}, ${CLEAR_LEASE}, last_error = ${error}, updated_at = ${p.now},
        last_event = 'reaped', last_event_reason = ${d.reason}, last_event_actor = 'reaper'
      WHERE ${guard} ${leaseGuard} RETURNING id`);
  });
  // Deferrals leave an event too, written only if the guard still held.
  const deferEvents = writes
    .filter((w) => w.decision.action === 'defer')
    .map(({ candidate: c, decision: d }) =>
      db.run(sql`INSERT INTO events (job_id, queue_name, type, from_status, to_status, reason, message, actor, worker_id, attempt, at)
        SELECT id, queue_name, 'reap_deferred', status, status, 'owner_alive',
          ${`lease overdue by ${d.action === 'defer' ? d.overdueMs : 0} ms past grace, but ${d.why}`},
          'reaper', locked_by, attempt_count, ${p.now}
        FROM jobs WHERE id = ${c.id} AND status = 'running' AND lock_token = ${c.lockToken} AND lease_expires_at = ${c.leaseExpiresAt}`),
    );
  const results = await batchList(db, [...deferEvents, ...statements]);
  const taken = new Set<number>();
  (results.slice(deferEvents.length) as unknown as { id: number }[][]).forEach((rows, i) => {
    if (rows.length > 0 && writes[i]!.decision.action !== 'defer') taken.add(writes[i]!.candidate.id);
  });
  return taken;
}

/**
 * Expired leases the reaper leaves alone after a gap in its own passes: one
 * `reap_held` event each (reason `server_gap`), under the guard the reaper
 * read, and nothing else changes. A separate event type from `reap_deferred`,
 * which tuning reads as "owners pause longer than lease + grace".
 */
export async function jobsRecordHeld(db: Db, p: { now: number; candidates: readonly ReapCandidateRow[]; why: string }): Promise<void> {
  await batchList(
    db,
    p.candidates.map((c) =>
      db.run(sql`INSERT INTO events (job_id, queue_name, type, from_status, to_status, reason, message, actor, worker_id, attempt, at)
        SELECT id, queue_name, 'reap_held', status, status, 'server_gap', ${p.why}, 'reaper', locked_by, attempt_count, ${p.now}
        FROM jobs WHERE id = ${c.id} AND status = 'running' AND lock_token = ${c.lockToken} AND lease_expires_at = ${c.leaseExpiresAt}`),
    ),
  );
}

/** Deletes up to `limit` finished jobs past their queue's retention, with their events and effects. */
/**
 * The prune's three statements (events, effects, then the jobs, whose
 * RETURNING says how many went), for the caller's batch: the reaper pass
 * sends its housekeeping as one request.
 */
export function jobsPruneFinishedStatements(db: Db, p: { now: number; limit: number; defaults: QueueDefaults }) {
  const retention = p.defaults.retentionMs;
  // The first bound is a constant (the shortest retention of any queue), so
  // the scan is an index range over rows that may be due, not all finished rows.
  const due = sql`SELECT j.id FROM jobs j
    WHERE j.finished_at IS NOT NULL
      AND j.finished_at < ${p.now} - min(${retention}, coalesce((SELECT min(retention_ms) FROM queues), ${retention}))
      AND j.finished_at < ${p.now} - coalesce((SELECT q.retention_ms FROM queues q WHERE q.name = j.queue_name), ${retention})
    ORDER BY j.finished_at, j.id LIMIT ${p.limit}`;
  return [
    db.run(sql`DELETE FROM events WHERE job_id IN (${due})`),
    db.run(sql`DELETE FROM effects WHERE job_id IN (${due})`),
    db.all<{ id: number }>(sql`DELETE FROM jobs WHERE id IN (${due}) RETURNING id`),
  ] as const;
}

/** Forgets workers not seen for longer than `olderThanMs`. */
/** A statement: await it, or put it in a batch. */
export function workersPruneStale(db: Db, p: { now: number; olderThanMs: number }) {
  return db.run(sql`DELETE FROM workers WHERE last_seen_at < ${p.now - p.olderThanMs}`);
}
