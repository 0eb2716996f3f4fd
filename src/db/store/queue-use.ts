/**
 * When a queue counts against LEASEHOLD_MAX_QUEUES: while it is in use.
 *
 * A queue row is made by the first enqueue (or setting) and stays after its
 * jobs are pruned, so counting rows let anyone holding the worker token use
 * up the cap for good: make queues, finish their jobs, wait for retention,
 * and no new queue (nor a schedule's new queue) could ever be made again. A
 * queue is in use while it holds something an operator would miss:
 *
 * - a job, in any status (finished ones until retention prunes them);
 * - a setting of its own (an override, a limit, alert thresholds, paused);
 * - a schedule that enqueues to it.
 *
 * An empty row with the server's defaults is the same as no row: it does not
 * count, and an enqueue to it is a new queue again (it must fit under the
 * cap). The rate window's bookkeeping (rate_window_start, rate_claims) and
 * the groups' (grouped_pending, group_serves) are state, not settings.
 *
 * Both probes are index lookups: jobs_queue_status_id_idx, schedules_queue_idx.
 */
import { sql, type SQL } from 'drizzle-orm';

/** The queues columns an operator sets; any of them non-NULL (or paused) keeps the queue in use. */
export const QUEUE_SETTING_COLUMNS = [
  'lease_ms',
  'heartbeat_ms',
  'grace_ms',
  'max_attempts',
  'max_lost_attempts',
  'backoff_base_ms',
  'backoff_max_ms',
  'retention_ms',
  'timeout_ms',
  'stall_ms',
  'max_running',
  'rate_max',
  'rate_window_ms',
  'alert_thresholds',
  'on_lost',
  'rate_mode',
  'group_max_running',
  'group_rate_max',
  'group_rate_window_ms',
  'dead_letter_queue',
  'max_snoozes',
  'indexed_fields',
] as const;

/** True for the queues row aliased `q` when it is in use (see above). */
export function queueInUseSql(q: string): SQL {
  const alias = sql.raw(q);
  const settings = sql.raw(QUEUE_SETTING_COLUMNS.map((c) => `${q}.${c}`).join(', '));
  return sql`(${alias}.paused = 1 OR coalesce(${settings}) IS NOT NULL
    OR EXISTS (SELECT 1 FROM jobs WHERE jobs.queue_name = ${alias}.name)
    OR EXISTS (SELECT 1 FROM schedules WHERE schedules.queue_name = ${alias}.name))`;
}

/** How many queues are in use now. */
export const queuesInUseCountSql = sql`(SELECT count(*) FROM queues q WHERE ${queueInUseSql('q')})`;

/**
 * True when jobs may go into `queue`: it is in use already (it counts), or
 * fewer than maxQueues are. CASE evaluates lazily, so an enqueue to a queue
 * in use never counts the others. Read inside the enqueue's own statement,
 * so two servers racing for the last place are serialised by the database's
 * single writer: the second one's statement counts the first one's queue.
 */
export function queueAdmitsSql(queue: string, maxQueues: number | undefined): SQL {
  if (maxQueues === undefined) return sql`1`;
  return sql`CASE WHEN EXISTS (SELECT 1 FROM queues q WHERE q.name = ${queue} AND ${queueInUseSql('q')}) THEN 1
    ELSE ${queuesInUseCountSql} < ${maxQueues} END`;
}
