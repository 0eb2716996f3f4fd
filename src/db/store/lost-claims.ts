/**
 * A claim whose answer did not reach its worker (a dropped connection, a
 * timeout), and that the worker gave up on.
 *
 * A claim request may carry an id its worker chose (`claimId`), stored on
 * every job it claims (jobs.claim_id, with the worker as locked_by). Sent
 * again, it gets its jobs back (claim.ts, claimReplayStatement). Given up: a
 * worker that stopped waiting for a claim's answer (it is shutting down, or
 * retried it for a whole lease) names the id in its next beat
 * (`lostClaims`). Its jobs still running under that worker and id go back to
 * the queue at once, in their old place, the attempt given back and no
 * attempt counted lost (nobody ran them), event `released` with reason
 * `claim_answer_lost`, at the database's time. Only the worker can say this:
 * it never received those lock tokens and has promised never to act on that
 * claim, so no process can be running those jobs. The server infers nothing
 * on its own: a claim the worker still waits for, or whose answer may still
 * be on its way, is never named, so its jobs are never released.
 * The release runs in the batch of the beat that carries it (on its own, or
 * with the worker's heartbeats): one transaction, judged inside it.
 */
import { sql } from 'drizzle-orm';
import type { Now } from '../../core/clock.ts';
import { batchList, type Db } from '../db.ts';
import { CLEAR_LEASE, nowSql } from '../sql.ts';
import { workerBeatStatement } from './workers.ts';
import type { WorkerBeat } from './port-types.ts';

/** The reason a given-up claim's jobs are released with. */
export const CLAIM_ANSWER_LOST = 'claim_answer_lost';

/** Gives back the jobs of the claims a worker says it lost (see above). */
export function lostClaimsReleaseStatement(db: Db, p: { workerId: string; instanceId?: string | undefined; claimIds: readonly string[]; now: Now }) {
  const now = nowSql(p.now);
  // A worker that names its process releases only that process's claims.
  const instance = p.instanceId === undefined ? sql`` : sql`AND locked_by_instance IS ${p.instanceId}`;
  // INDEXED BY: without statistics (nothing runs ANALYZE) SQLite would walk
  // every running job by jobs_status_id_idx for the claim ids' IN list
  // (test/store/query-plans.test.ts).
  return db.run(sql`UPDATE jobs INDEXED BY jobs_claim_id_idx SET status = 'pending', attempt_count = attempt_count - 1, ${CLEAR_LEASE}, updated_at = ${now},
      last_event = 'released', last_event_reason = ${CLAIM_ANSWER_LOST}, last_event_actor = ${p.workerId}
    WHERE claim_id IN (SELECT value FROM json_each(${JSON.stringify(p.claimIds)})) AND locked_by = ${p.workerId} AND status = 'running' ${instance}`);
}

/** A worker's beat, and the release of the claims it says it lost, for one batch. */
export function beatStatements(db: Db, w: WorkerBeat) {
  const beat = workerBeatStatement(db, w);
  if (!w.lostClaims?.length) return [beat];
  return [beat, lostClaimsReleaseStatement(db, { workerId: w.id, instanceId: w.instanceId, claimIds: w.lostClaims, now: w.now })];
}

/** A worker's own liveness beat (and the claims it lost): one batch. */
export async function workerBeat(db: Db, w: WorkerBeat): Promise<void> {
  await batchList(db, beatStatements(db, w));
}
