/**
 * Claim: pending -> running.
 *
 * Precondition (in the WHERE): the job is pending, in this queue, due
 * (`available_at <= now`), and the queue is not paused. (Held jobs and jobs
 * waiting for dependencies are never due, their available_at being far in
 * the future; and the database refuses to start one whatever the statement,
 * trigger jobs_unclaimable_never_running.) With the queue's
 * max_running set, the LIMIT is also at most max_running minus the queue's
 * running jobs, counted inside the same statement: SQLite runs one writer at
 * a time, so no two claims (from any worker or server) can both see the
 * same free slots. With a rate limit, it is also at most what is left of the
 * current window's claims, which the claim's tally (claimTallyStatement, the
 * next statement of the same batch) adds to. Of those jobs, in claim
 * order, it takes the longest run whose payloads and checkpoints fit in
 * `maxBytes`, and always the first: one answer cannot grow past the budget
 * (except by one job larger than the budget, taken alone), and a job left out
 * stays pending, untouched, for the next claim.
 * Postcondition: up to `limit` jobs, in order of priority (highest first), then
 * due time, then id, are running with a new random 128-bit lock token, one
 * more attempt, the next fencing token, a lease of `leaseMs` from now, and a
 * deadline of now + the job's timeout, else its queue's, else the server's:
 * every claim has one. The answer's timeout_ms is that effective timeout.
 * No rows back means nothing was ready. One UPDATE ... WHERE id IN (SELECT ...
 * LIMIT n) RETURNING: two claimers can never take the same job.
 * With a claim id, a claim sent again answers the jobs it already took
 * (claimReplayStatement, at the end of this file).
 */
import { sql, type SQL } from 'drizzle-orm';
import type { Now } from '../../core/clock.ts';
import { DEFAULT_MAX_CLAIM_BYTES, type QueueDefaults } from '../../core/config.ts';
import { batchList, type Db } from '../db.ts';
import { byteLengthSql, newLockTokenSql, nowSql, queueSettingSql } from '../sql.ts';
import { queueRateWaitStatement, toRateWait } from './read.ts';
import { slidingRateUsedSql } from './rate-window.ts';
import { workerTouch } from './workers.ts';
import { longestSilenceSet, renewalSet } from './lease.ts';
import { claimWaitStatement } from './attempt-stats.ts';
import type { ClaimParams, Claimed, ClaimedWithRateWait } from './port-types.ts';

/**
 * The heartbeat interval a claim tells its claimer: the queue's interval, at
 * most a third of the lease granted. The dashboard shows a running job's
 * interval with the same expression, so it says what the worker was told.
 */
export const claimHeartbeatSql = (queueHeartbeatMs: SQL, leaseMs: SQL) => sql`min(${queueHeartbeatMs}, ${leaseMs} / 3)`;

/**
 * The claim UPDATE, for a batch of its own or one shared with completions.
 * `claimKey` marks the jobs it takes (claim_id): the worker's claim id, so a
 * claim sent again finds them, or one made for this claim; the claim's
 * counts read its jobs back by it (claimWaitStatement). Each job also keeps
 * how long it waited to be claimed since it was due (waited_ms).
 */
function claimStatement(db: Db, p: Omit<ClaimParams, 'workerId'> & { workerId: string; claimKey: string }) {
  const now = nowSql(p.now);
  const queue = sql`${p.queue}`;
  const lease = sql`coalesce(${p.leaseMs ?? null}, ${queueSettingSql('lease_ms', queue, p.defaults.leaseMs)})`;
  const heartbeat = queueSettingSql('heartbeat_ms', queue, p.defaults.heartbeatMs);
  return db.all<Claimed>(sql`UPDATE jobs SET
      status = 'running', lock_token = ${newLockTokenSql}, locked_by = ${p.workerId}, locked_by_instance = ${p.instanceId ?? null},
      attempt_count = attempt_count + 1, lease_epoch = lease_epoch + 1,
      lease_ms = ${lease}, started_at = ${now}, last_heartbeat_at = ${now}, lease_expires_at = ${now} + ${lease},
      deadline_at = ${now} + coalesce(timeout_ms, ${queueSettingSql('timeout_ms', queue, p.defaults.timeoutMs)}),
      progress = NULL, progressed_at = NULL, reaper_deferrals = 0, updated_at = ${now},
      waited_ms = max(0, ${now} - max(available_at, created_at, coalesce(last_heartbeat_at, 0))),
      last_event = 'claimed', last_event_reason = NULL, last_event_actor = ${p.workerId},
      claim_id = ${p.claimKey}, finished_token = NULL, finished_write = NULL
    WHERE status = 'pending' AND id IN (${claimedIdsSql(p, now)})
      ${unlessReplayedSql(p)}
    RETURNING id, queue_name, payload, priority, attempt_count, max_attempts, lease_epoch, lease_ms, lease_expires_at,
      lock_token, idempotency_key, checkpoint, progress, deadline_at - started_at AS timeout_ms, deadline_at, available_at, trace_parent, trace_state, group_key, snoozes,
      ${claimHeartbeatSql(heartbeat, sql`lease_ms`)} AS heartbeat_ms`);
}

/** Claim order: priority (highest first), then due time, then id; jobs_claim_idx holds it. */
const CLAIM_ORDER = sql.raw('priority DESC, available_at, id');

/**
 * Fair order across groups: jobs without a group first, in claim order (as
 * a claim without groups takes them); then each group's first job (its
 * turn 1), least recently served group first, then each one's second, and
 * so on. Within a turn, claim order.
 */
const FAIR_ORDER = sql.raw('turn, served, priority DESC, available_at, id');

/**
 * The ids a claim takes: its candidates (claimCandidatesSql) in fair order,
 * at most its budget (claimLimitSql, read once). Each job's size is its
 * payload's and checkpoint's bytes (byteLengthSql; of at most twice the
 * budget's rows, most of them answered anyway). Then
 * the running sum of sizes in that order keeps the first job and every one
 * after it while the sum stays within the budget: a prefix, as the sum only
 * grows. One sort, of at most twice the budget's rows.
 */
function claimedIdsSql(p: Pick<ClaimParams, 'queue' | 'limit' | 'maxBytes'>, now: SQL) {
  return sql`SELECT id FROM (
      SELECT id, row_number() OVER in_order AS n, sum(bytes) OVER in_order AS bytes_so_far, budget
      FROM (${claimCandidatesSql(p.queue, p.limit, now)})
      WINDOW in_order AS (ORDER BY ${FAIR_ORDER} ROWS UNBOUNDED PRECEDING))
    WHERE n <= budget AND (n = 1 OR bytes_so_far <= ${p.maxBytes ?? DEFAULT_MAX_CLAIM_BYTES})`;
}

const jobBytes = (j: string) => sql.raw(`${byteLengthSql(`${j}.payload`)} + coalesce(${byteLengthSql(`${j}.checkpoint`)}, 0)`);

/**
 * The jobs a claim may take now, each with the claim's budget: at most the
 * budget of jobs without a group and at most the budget of jobs with one,
 * of which the fair order keeps the first budget (claimedIdsSql).
 * - Jobs without a group: the first ones in claim order from jobs_claim_idx,
 *   looked for only while the queue has more pending jobs than grouped ones
 *   (live_counts against queues.grouped_pending), so a queue whose jobs all
 *   carry a group never walks jobs_claim_idx past them.
 * - Jobs with a group: the round (groupRoundSql) gives the groups that may
 *   start a job now, least recently served first, each with its first due
 *   job; the walk then takes turns: every group's next job in claim order
 *   (three index seeks of jobs_group_claim_idx: the same priority and due
 *   time, the same priority, a lower one), a turn at a time, until the
 *   group's own limits stop it or the budget is reached. So it reads about
 *   as many rows as it takes, however many groups or jobs the queue holds,
 *   and never visits a group whose jobs are all delayed.
 * A queue without a grouped job pending reads its queue row there and no
 * group.
 */
function claimCandidatesSql(queue: string, limit: number, now: SQL) {
  const budget = sql`(SELECT n FROM budget)`;
  const ungroupedLimit = sql`CASE WHEN coalesce((SELECT jobs FROM live_counts WHERE queue_name = ${queue} AND status = 'pending'), 0)
      > coalesce((SELECT grouped_pending FROM queues WHERE name = ${queue}), 0) THEN ${budget} ELSE 0 END`;
  const ungrouped = sql`SELECT id, priority, available_at, ${jobBytes('jobs')} AS bytes, 0 AS turn, -1 AS served
      FROM jobs
      WHERE ${claimableSql(queue, now)} AND group_key IS NULL
      ORDER BY ${CLAIM_ORDER}
      LIMIT ${ungroupedLimit}`;
  const inGroup = (g: string) => sql`x.queue_name = ${queue} AND x.group_key = ${sql.raw(g)}.group_key AND x.status = 'pending' AND x.available_at <= ${now}`;
  const next = sql`coalesce(
      (SELECT x.id FROM jobs x WHERE ${inGroup('w')} AND x.priority = w.priority AND x.available_at = w.available_at AND x.id > w.id ORDER BY x.id LIMIT 1),
      (SELECT x.id FROM jobs x WHERE ${inGroup('w')} AND x.priority = w.priority AND x.available_at > w.available_at ORDER BY x.available_at, x.id LIMIT 1),
      (SELECT x.id FROM jobs x WHERE ${inGroup('w')} AND x.priority < w.priority ORDER BY x.priority DESC, x.available_at, x.id LIMIT 1))`;
  return sql`WITH RECURSIVE budget(n) AS MATERIALIZED (SELECT ${claimLimitSql(queue, limit, now)}),
      round AS (${groupRoundSql(queue, limit, now, budget)}),
      walk(group_key, served, take, turn, id, priority, available_at) AS (
        SELECT gr.group_key, gr.served, gr.take, 1, j.id, j.priority, j.available_at FROM round gr JOIN jobs j ON j.id = gr.first_id
        UNION ALL
        SELECT w.group_key, w.served, w.take, w.turn + 1, j.id, j.priority, j.available_at
          FROM walk w JOIN jobs j ON j.id = ${next} WHERE w.turn < w.take
        LIMIT ${budget})
    SELECT id, priority, available_at, bytes, turn, served, ${budget} AS budget FROM (
      ${ungrouped})
    UNION ALL
    SELECT w.id, w.priority, w.available_at, ${jobBytes('j')}, w.turn, w.served, ${budget} FROM walk w JOIN jobs j ON j.id = w.id`;
}

/**
 * The claim's round over the queue's groups: those that can start a job now,
 * least recently served first (never served first), each with `take`, how
 * many jobs it may start now (under the queue's groupMaxRunning and the
 * starts left in the group's sliding rate window), and its first due job in
 * claim order (first_id). It stops at `limit` groups (each gives at least
 * one job), or at none when the claim's budget is 0 (nothing due, the queue
 * paused, its limits reached).
 * A group whose pending jobs are all delayed is not visited: job_groups says
 * when each group can run (delayed_until, kept by the triggers of
 * drizzle/0039), and the round reads two sets, merged in served order:
 * - the groups that had a due job at the last change of their jobs
 *   (job_groups_ready_idx, in served order, read only as far as the round
 *   goes);
 * - the groups whose delay has run out since (job_groups_delayed_idx, up to
 *   now, at most `limit` of them, earliest due first), until a change of
 *   their jobs moves them to the first set.
 * So the round reads about as many groups as it gives turns to, however
 * many groups wait on delayed jobs. A group passed over costs a seek or two:
 * one at its running cap or its rate limit (its first due job is still
 * looked up, in the first set).
 */
function groupRoundSql(queue: string, limit: number, now: SQL, budget: SQL) {
  const rateUsed = slidingRateUsedSql(queue, sql`g.group_key`, sql`q.group_rate_window_ms`, now);
  const take = sql`min(${limit},
      CASE WHEN q.group_max_running IS NULL THEN ${limit} ELSE q.group_max_running - g.running END,
      CASE WHEN q.group_rate_max IS NULL THEN ${limit} ELSE q.group_rate_max - ${rateUsed} END)`;
  const firstDue = sql`(SELECT x.id FROM jobs x WHERE x.queue_name = ${queue} AND x.group_key = g.group_key AND x.status = 'pending' AND x.available_at <= ${now}
      ORDER BY x.priority DESC, x.available_at, x.id LIMIT 1)`;
  const turn = sql`g.group_key, g.served, ${take} AS take, ${firstDue} AS first_id`;
  // A queue with no grouped job pending (queues.grouped_pending) reads no group at all.
  const open = sql`${budget} > 0 AND q.grouped_pending > 0 AND (q.group_max_running IS NULL OR g.running < q.group_max_running)`;
  const ready = sql`SELECT ${turn}
      FROM job_groups g INDEXED BY job_groups_ready_idx JOIN queues q ON q.name = ${queue}
      WHERE g.queue_name = ${queue} AND g.pending > 0 AND g.delayed_until IS NULL AND ${open}
      ORDER BY g.served`;
  const cameDue = sql`SELECT ${turn}
      FROM job_groups g INDEXED BY job_groups_delayed_idx JOIN queues q ON q.name = ${queue}
      WHERE g.queue_name = ${queue} AND g.delayed_until <= ${now} AND ${open}
      ORDER BY g.delayed_until`;
  return sql`SELECT group_key, served, take, first_id FROM (${ready}) WHERE take > 0 AND first_id IS NOT NULL
    UNION ALL
    SELECT group_key, served, take, first_id FROM (SELECT * FROM (${cameDue}) WHERE take > 0 AND first_id IS NOT NULL LIMIT ${limit})
    ORDER BY served
    LIMIT ${limit}`;
}

/** A job a claim on `queue` may take now: pending, due, its queue not paused (jobs_claim_idx). */
const claimableSql = (queue: string, now: SQL) => sql`queue_name = ${queue} AND status = 'pending' AND available_at <= ${now}
        AND NOT EXISTS (SELECT 1 FROM queues WHERE name = ${queue} AND paused = 1)`;

/**
 * Whether the queue has any pending job due now, read from jobs_claim_idx a
 * priority at a time: the highest priority pending, one seek for a due job
 * in it (its entries are in due order), then the next lower priority, and so
 * on until one has a due job. It sits in the LIMIT (claimLimitSql), which
 * SQLite evaluates once before the search and which, at 0, skips the search
 * (in the WHERE it was evaluated once but after the search began, which
 * saved nothing). Without it a claim (or a
 * waiting claim's look) on a queue with nothing due walked every not yet due
 * pending job, as the index leads with priority: 35-45 ms at 100,000 delayed
 * jobs. Now it costs two seeks per distinct priority of the pending jobs,
 * and stops at the first priority with a due job.
 */
const anyDueSql = (queue: string, now: SQL) => sql`EXISTS (WITH RECURSIVE tiers(priority) AS (
      SELECT max(priority) FROM jobs WHERE queue_name = ${queue} AND status = 'pending'
      UNION ALL
      SELECT (SELECT max(priority) FROM jobs WHERE queue_name = ${queue} AND status = 'pending' AND priority < tiers.priority) FROM tiers WHERE tiers.priority IS NOT NULL)
    SELECT 1 FROM tiers WHERE EXISTS (SELECT 1 FROM jobs WHERE queue_name = ${queue} AND status = 'pending' AND priority = tiers.priority AND available_at <= ${now}))`;

/**
 * How many jobs a claim on the queue could take now, counting at most
 * `cap`: the claim statement's own conditions and limits (max_running, the
 * rate window), read without writing. What claims waiting on the queue look
 * at, once per interval for all of them, so that waiting costs a read rather
 * than a claim (a write) per waiting request.
 */
export async function queueClaimableCount(db: Db, p: { queue: string; cap: number; now: Now }): Promise<number> {
  const now = nowSql(p.now);
  const [row] = await db.all<{ n: number }>(sql`SELECT count(*) AS n FROM (${claimCandidatesSql(p.queue, Math.max(1, Math.floor(p.cap)), now)})`);
  return Number(row?.n ?? 0);
}

/**
 * How many jobs this claim may take: the asked-for limit, capped by the
 * queue's free running slots and what is left of its rate window; none when
 * nothing in the queue is due (anyDueSql). A negative LIMIT means "no limit" in SQLite,
 * hence the max(0, ...).
 */
function claimLimitSql(queue: string, limit: number, now: SQL) {
  // CASE is lazy: the running jobs are counted only for a queue with max_running.
  const freeSlots = sql`CASE WHEN q.max_running IS NULL THEN ${limit}
    ELSE q.max_running - (SELECT count(*) FROM jobs r WHERE r.queue_name = ${queue} AND r.status = 'running') END`;
  const rateLeft = sql`CASE WHEN q.rate_max IS NULL THEN ${limit}
    WHEN q.rate_mode IS NOT 'fixed' THEN q.rate_max - ${slidingRateUsedSql(queue, '', sql`q.rate_window_ms`, now)}
    ELSE q.rate_max - CASE WHEN q.rate_window_start = ${now} - ${now} % q.rate_window_ms THEN q.rate_claims ELSE 0 END END`;
  return sql`CASE WHEN ${anyDueSql(queue, now)} THEN max(0, coalesce((SELECT min(${limit}, ${freeSlots}, ${rateLeft}) FROM queues q WHERE q.name = ${queue}), ${limit})) ELSE 0 END`;
}

/**
 * RETURNING order is unspecified: the claim's answer in the order the claim
 * took its jobs (FAIR_ORDER), which is the order a worker should start them
 * in. Jobs without a group first, in claim order; then a turn at a time, one
 * job of each group per turn, each group's jobs in claim order. Within a
 * turn the groups go in the claim order of their first jobs (which group was
 * served least recently is not in the answer). Sorted by claim order alone,
 * the answer listed one group's backlog before the other groups it was
 * claimed fairly with, and a worker running it in order ran that backlog
 * first. An answer without groups is sorted in claim order and nothing more.
 */
export function inFairOrder(claimed: Claimed[]): Claimed[] {
  claimed.sort((a, b) => b.priority - a.priority || a.available_at - b.available_at || a.id - b.id);
  if (!claimed.some((j) => j.group_key != null)) return claimed;
  const turn = new Map<Claimed, number>();
  const taken = new Map<string, number>();
  const groupRank = new Map<string, number>();
  for (const j of claimed) {
    if (j.group_key == null) continue;
    const n = (taken.get(j.group_key) ?? 0) + 1;
    taken.set(j.group_key, n);
    turn.set(j, n);
    if (!groupRank.has(j.group_key)) groupRank.set(j.group_key, groupRank.size);
  }
  const rank = (j: Claimed) => (j.group_key == null ? -1 : groupRank.get(j.group_key)!);
  // Stable: jobs without a group (turn 0, rank -1) keep their claim order.
  return claimed.sort((a, b) => (turn.get(a) ?? 0) - (turn.get(b) ?? 0) || rank(a) - rank(b));
}

export async function jobsClaimPending(db: Db, p: ClaimParams): Promise<Claimed[]> {
  const [, ...claimed] = (await batchList(db, [workerTouch(db, p.workerId, p.now, p.instanceId), ...claimStatements(db, p)])) as Claimed[][];
  return inFairOrder(claimed.flat());
}

/**
 * jobsClaimPending, and in the same batch (one round trip) whether the
 * queue's rate limit is now holding claims back, read after the claim
 * counted against it: what a worker's claim answers.
 */
export async function jobsClaimPendingWithRateWait(db: Db, p: ClaimParams): Promise<ClaimedWithRateWait> {
  return claimWithRateWaitAnswer(await batchList(db, claimWithRateWaitStatements(db, p)));
}

/** jobsClaimPendingWithRateWait's statements, for its own batch or one it shares (an enqueue's, src/db/store/enqueue.ts): the worker's row, the claim, the rate wait. */
export function claimWithRateWaitStatements(db: Db, p: ClaimParams) {
  return [workerTouch(db, p.workerId, p.now, p.instanceId), ...claimStatements(db, p), queueRateWaitStatement(db, { queue: p.queue, now: p.now })];
}

/** What claimWithRateWaitStatements' results come to. */
export function claimWithRateWaitAnswer(results: readonly unknown[]): ClaimedWithRateWait {
  const claimed = results.slice(1, -1) as Claimed[][];
  return { claimed: inFairOrder(claimed.flat()), rateWait: toRateWait(results.at(-1) as Parameters<typeof toRateWait>[0]) };
}

/**
 * The statements of a claim, for its own batch or one shared with
 * completions: with a claim id, the jobs it already took (a claim sent
 * again), then the claim, which takes nothing when those exist, then its
 * counts (claimTallyStatement, claimWaitStatement), which return no rows.
 * Their rows together are the claim's answer.
 */
export function claimStatements(db: Db, p: ClaimParams) {
  const claimKey = p.claimId ?? `server-${crypto.randomUUID()}`;
  const claim = [claimStatement(db, { ...p, claimKey }), claimTallyStatement(db, p), claimWaitStatement(db, { claimKey, workerId: p.workerId })];
  return p.claimId === undefined ? claim : [claimReplayStatement(db, { workerId: p.workerId, claimId: p.claimId, now: p.now, defaults: p.defaults }), ...claim];
}

/**
 * The claim's counts, once for the whole claim: run right after
 * claimStatement in the same batch, `changes()` is the number of jobs that
 * statement moved to running (a trigger's writes are not counted). The
 * claim_tallies view's trigger (drizzle/0026) adds it to the claimed
 * counter, moves it from the queue's pending live count to its running one,
 * and counts it in the rate window of `now`. It returns no rows, so the
 * claim's answer is the claim's rows alone. Under the database's clock this
 * `now` can be a little later than the claim's: a claim at the very end of a
 * window is then counted in the next one, which can only hold claims back,
 * never let more through.
 */
function claimTallyStatement(db: Db, p: Pick<ClaimParams, 'queue' | 'now'>) {
  return db.all<Claimed>(sql`INSERT INTO claim_tallies (queue_name, jobs, at) VALUES (${p.queue}, changes(), ${nowSql(p.now)})`);
}

// A claim sent again: its answer was lost, and the worker sends the same
// request with the same claim id. It gets back the jobs still running under
// that id (with the same tokens), and claims nothing more, so a retried claim
// neither orphans the jobs of the answer that was lost nor holds more than
// the worker asked for. A claim the worker gave up on: lost-claims.ts.

/** Jobs (aliased `alias`) still running under the worker's claim id, before their deadline: what a claim sent again gets back. */
const underClaimSql = (alias: string, p: { workerId: string; claimId: string; now: SQL }) => {
  const j = sql.raw(alias);
  return sql`${j}.claim_id = ${p.claimId} AND ${j}.locked_by = ${p.workerId} AND ${j}.status = 'running'
    AND (${j}.deadline_at IS NULL OR ${j}.deadline_at > ${p.now})`;
};

/**
 * For claimStatement's WHERE: no job is running under this claim id yet (a
 * claim sent again gets its jobs back from claimReplayStatement and takes no
 * more). Empty for a claim without an id (older clients).
 */
export function unlessReplayedSql(p: { workerId: string; claimId?: string | undefined; now: Now }): SQL {
  if (p.claimId === undefined) return sql``;
  return sql`AND NOT EXISTS (SELECT 1 FROM jobs r WHERE ${underClaimSql('r', { workerId: p.workerId, claimId: p.claimId, now: nowSql(p.now) })})`;
}

/**
 * The jobs a claim with this id already took, answered again as the claim
 * answers them: their leases renewed from now, `timeout_ms` the time left
 * before the attempt's deadline (the worker counts it from its request). Run
 * before the claim statement in the same batch.
 */
export function claimReplayStatement(db: Db, p: { workerId: string; claimId: string; now: Now; defaults: QueueDefaults }) {
  const now = nowSql(p.now);
  const heartbeat = queueSettingSql('heartbeat_ms', sql`jobs.queue_name`, p.defaults.heartbeatMs);
  return db.all<Claimed>(sql`UPDATE jobs SET ${longestSilenceSet(now)}, ${renewalSet(now, sql`jobs.lease_ms`)}, updated_at = ${now},
      last_event = 'claim_replayed', last_event_reason = NULL, last_event_actor = ${p.workerId}
    WHERE ${underClaimSql('jobs', { workerId: p.workerId, claimId: p.claimId, now })}
    RETURNING id, queue_name, payload, priority, attempt_count, max_attempts, lease_epoch, lease_ms, lease_expires_at,
      lock_token, idempotency_key, checkpoint, progress, deadline_at - ${now} AS timeout_ms, deadline_at, available_at, trace_parent, trace_state, group_key, snoozes,
      ${claimHeartbeatSql(heartbeat, sql`lease_ms`)} AS heartbeat_ms`);
}

