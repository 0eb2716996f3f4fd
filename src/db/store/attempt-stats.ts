/**
 * What a claim and an owner's completion count besides the job rows, once
 * per statement for the whole batch instead of once per job by a trigger.
 *
 * - Claim: the queue-wait histogram (claimWaitStatement), read back from the
 *   jobs the claim statement just took. The claim's counters, live counts and
 *   rate window are claim.ts's claimTallyStatement.
 * - Owner's completion (completionTallyStatement): one read of the batch,
 *   before its UPDATE and under the same guard, grouped by queue and by the
 *   buckets of each job's run time and longest silence; the
 *   completion_tallies view's trigger (drizzle/0038) adds each group, once, to
 *   the completed counter, the finished count, the running live count, the
 *   minute's completions, the run-time histogram and what-if tuning's
 *   silences. A batch of 100 jobs writes a handful of rows, not 400.
 *
 * A renewal's interval stays a trigger (jobs_heartbeat_interval): a
 * heartbeat has no read of its batch to ride on, and a statement of its own
 * cost more per renewed lease (10.9 against 9.3 µs, 200 leases a call) than
 * the trigger's upsert.
 *
 * The bucket bounds are src/core/histograms.ts's, written here into SQL. A
 * silence (the time since the attempt's last renewal, or the longest gap
 * between its renewals, whichever is longer) is counted in 250 ms steps up
 * to a minute, then 5 s steps up to ten minutes, then once past that, as
 * jobs_attempt_evidence counts the other ends of an attempt
 * (src/db/store/tuning-evidence.ts reads both back).
 *
 * Under the database's clock, `now` here is read by its own statement, so it
 * can be a millisecond before the transition's: a job finished in the first
 * millisecond of a minute can be counted in the one before.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { Now } from '../../core/clock.ts';
import { HISTOGRAMS, OVERFLOW_LE_MS, type HistogramName } from '../../core/histograms.ts';
import type { Db } from '../db.ts';
import { nowSql } from '../sql.ts';

/** The bucket (its upper bound, ms) of the value `ms` (a column name) in histogram `name`. */
const bucketSql = (name: HistogramName, ms: string) =>
  sql.raw(`CASE ${HISTOGRAMS[name].boundsMs.map((b) => `WHEN ${ms} <= ${b} THEN ${b}`).join(' ')} ELSE ${OVERFLOW_LE_MS} END`);

/** The silence step of `s` (a column name), as attempt_silences keeps it. */
const silenceStepSql = (s: string) =>
  sql.raw(`CASE WHEN ${s} <= 60000 THEN ((${s} + 249) / 250) * 250 WHEN ${s} <= 600000 THEN ((${s} + 4999) / 5000) * 5000 ELSE ${OVERFLOW_LE_MS} END`);

/**
 * The claim's queue waits: every job the claim statement just took carries
 * its wait in `waited_ms` (claim.ts), and all of them the claim's key and
 * worker (jobs_claim_id_idx). Jobs an earlier claim with the same key left
 * running past their deadline (a claim sent again takes new ones then) were
 * started before this claim: only the latest start is this claim's.
 */
export function claimWaitStatement(db: Db, p: { claimKey: string; workerId: string }) {
  const claimed = sql`FROM jobs WHERE claim_id = ${p.claimKey} AND locked_by = ${p.workerId} AND status = 'running' AND last_event = 'claimed'`;
  return db.all<never>(sql`INSERT INTO histogram_buckets (queue_name, name, le_ms, count, sum_ms)
    SELECT queue_name, 'queue_wait', le_ms, count(*), sum(waited_ms) FROM (
      SELECT queue_name, waited_ms, ${bucketSql('queue_wait', 'waited_ms')} AS le_ms ${claimed} AND started_at = (SELECT max(started_at) ${claimed}))
    GROUP BY queue_name, le_ms
    ON CONFLICT (queue_name, name, le_ms) DO UPDATE SET count = count + excluded.count, sum_ms = sum_ms + excluded.sum_ms`);
}

/**
 * The completion's counts: `refsJoinedUnderGuard` is the FROM and WHERE that
 * select the jobs it is about to complete (the update's refs joined to jobs,
 * under its guard); a job named twice is counted once.
 */
export function completionTallyStatement(db: Db, p: { refsJoinedUnderGuard: SQL; now: Now }) {
  const now = nowSql(p.now);
  return db.all<never>(sql`INSERT INTO completion_tallies (queue_name, jobs, runtime_le_ms, runtime_sum_ms, silence_ms, minute_at)
    SELECT queue_name, count(*), ${bucketSql('runtime', 'runtime')}, sum(runtime), ${silenceStepSql('silence')}, m - m % 60000 FROM (
      SELECT DISTINCT jobs.id, jobs.queue_name, CAST(${now} AS INTEGER) AS m, max(0, ${now} - jobs.started_at) AS runtime,
        CAST(max(0, ${now} - jobs.last_heartbeat_at,
          CASE WHEN jobs.last_heartbeat_at > jobs.started_at THEN coalesce(jobs.longest_silence_ms, 0) ELSE 0 END) AS INTEGER) AS silence
      ${p.refsJoinedUnderGuard})
    GROUP BY 1, 3, 5`);
}
