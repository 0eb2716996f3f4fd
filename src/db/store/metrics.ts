/**
 * Numbers for /metrics, GET /api/v1/metrics, alerts and tuning, computed from
 * the database so they hold on stateless runtimes. All-time totals come from
 * the counters table (drizzle/0006: counted by a trigger as each event is
 * written, never pruned), so they never go down across pruning and restarts;
 * the 5-minute and hour windows are counted from the retained events.
 *
 * Costs (one batch of twelve statements, one round trip; a second only for suspect jobs):
 * - jobs by status: queuesHealth (finished_counts, kept by triggers; pending and running by partial index).
 * - running: rows with status = 'running' only (jobs_lease_expiry_idx, a partial index).
 * - rare events: events_rare_type_at_idx only (the three per-job types are not in it);
 *   every retained rare event is read once and bucketed into all-time / last hour / last 5 min.
 * - finished in the last hour: the newest RECENT_SAMPLE of a jobs_finished_idx range
 *   (finished_at >= now - 1h), materialised once for attempts and runtimes.
 * - runtime percentiles: the same sample (one materialised read for both),
 *   each queue's completed runtimes as one comma-separated list, sorted in JS.
 * - running jobs' owners: one primary-key lookup of workers per running job
 *   (ownerLastSeenSql: alive, gone, or restarted since the claim); the late
 *   jobs' ids in a second scan that looks up owners only for late jobs.
 * - workers: the whole workers table (small: one row per live-ish worker),
 *   and the queues each live one reports (json_each of its queues list).
 * - counters: the whole counters table (a few rows per queue).
 * - histograms: the whole histogram_buckets table (at most 44 rows per queue,
 *   only the buckets something fell in).
 * - the last maintenance pass: one primary-key row (maintenance_state).
 * - suspect jobs (src/core/suspect.ts): only when a queue's oldest running
 *   job is past its threshold, one more statement over the live running jobs
 *   (suspects.ts); otherwise nothing.
 */
import { sql, type SQL } from 'drizzle-orm';
import { HISTOGRAMS, HISTOGRAM_NAMES, toHistogram, type HistogramBucketRow, type HistogramName } from '../../core/histograms.ts';
import { ALERT_THRESHOLD_LIMITS, DEFAULT_ALERT_THRESHOLDS, effectiveAlertThresholds, type AlertThresholds } from '../../core/alerts.ts';
import { suspectThreshold } from '../../core/suspect.ts';
import { REAP_REASONS } from '../../core/reaper.ts';
import { DEFAULT_MAX_SNOOZES } from '../../core/snooze.ts';
import type { Now } from '../../core/clock.ts';
import type { QueueDefaults } from '../../core/config.ts';
import type { Db } from '../db.ts';
import { counters, histogramBuckets } from '../schema.ts';
import { nowSql } from '../sql.ts';
import { METRIC_WINDOWS, type MetricsSnapshot, type QueueHealth, type QueueMetrics, type WindowCount } from '../../core/metrics-snapshot.ts';
import { maintenancePassSql, toPassRow } from './maintenance-state.ts';
import { queuesHealthSql, toQueueHealth } from './read.ts';
import { percentiles, recentFinishedSql } from './runtime-sample.ts';
import { stalledByQueueSql } from './stalls.ts';
import { suspectsByQueue } from './suspects.ts';
import { ownerLastSeenSql } from './workers.ts';
import { OUTSIDE_ANY_QUEUE, OWNER_CHECK_REFUSED } from './owner-check-counts.ts';

/** Upper bounds of the heartbeat lag histogram, in ms (+Inf is implied). */
const HEARTBEAT_LAG_BUCKETS_MS = [1_000, 5_000, 15_000, 30_000, 60_000] as const;
/** The late jobs named per queue (worst first): enough to act on, bounded however many there are. */
const LATE_IDS_NAMED = 10;
/** The suspect jobs named per queue (longest running first). */
const SUSPECT_IDS_NAMED = 10;

const zero = (): WindowCount => ({ total: 0, lastHour: 0, last5m: 0 });
const num = (v: unknown) => (v === null || v === undefined ? 0 : Number(v));
const numOrNull = (v: unknown) => (v === null || v === undefined ? null : Number(v));

/**
 * Everything the metrics, alerts and tuning views need, in one pass.
 * `config` supplies the defaults queues fall back to and `workerAliveMs`.
 */
export async function metricsSnapshot(db: Db, p: { now: Now; config: QueueDefaults & { workerAliveMs: number } }): Promise<MetricsSnapshot> {
  const config = p.config;
  const now = nowSql(p.now);
  const { shortMs, longMs } = METRIC_WINDOWS;
  const bucketCols = sql.join(
    HEARTBEAT_LAG_BUCKETS_MS.map((b, i) => sql`sum(hb_lag <= ${b}) AS ${sql.raw(`b${i}`)}`),
    sql`, `,
  );
  const alive = sql`${now} - ${config.workerAliveMs}`;
  // When a running job of each queue counts as late: its heartbeat interval
  // x its heartbeatLagFactor, worked out once per queue (not per job).
  const lateAfter = sql`qt AS MATERIALIZED (SELECT name, coalesce(heartbeat_ms, ${config.heartbeatMs}) * ${thresholdSql(sql`alert_thresholds`, 'heartbeatLagFactor')} AS late_after,
    coalesce(grace_ms, ${config.graceMs}) AS grace FROM queues)`;
  const defaultLateAfter = config.heartbeatMs * DEFAULT_ALERT_THRESHOLDS.heartbeatLagFactor;
  const hbLag = sql`(${now} - coalesce(j.last_heartbeat_at, j.started_at))`;
  const ownerAlive = sql`coalesce(${ownerLastSeenSql('j')} >= ${alive}, 0)`;
  // Every running job with its lag and whether its owner looks alive (one
  // workers lookup per job), read once (MATERIALIZED) for the sums.
  // INDEXED BY (the partial index of running jobs): left alone, SQLite
  // walked jobs_queue_status_id_idx end to end for the GROUP BY (~70 ms at
  // 1M finished jobs).
  const runningJobs = sql`rj AS MATERIALIZED (SELECT j.queue_name AS queue_name, j.locked_by AS locked_by,
      j.started_at AS started_at, j.lease_expires_at AS lease_expires_at, ${hbLag} AS hb_lag, ${ownerAlive} AS owner_alive, coalesce(qt.late_after, ${defaultLateAfter}) AS late_after,
      coalesce(qt.grace, ${config.graceMs}) AS grace
    FROM jobs j INDEXED BY jobs_lease_expiry_idx LEFT JOIN qt ON qt.name = j.queue_name WHERE j.status = 'running')`;
  const recentFinished = recentFinishedSql(now);
  const [clock, running, late, events, recent, workers, serving, healthRows, stalledRows, counterRows, passRows, histogramRows, cascadeRows] = await db.batch([
    db.all<{ now: number }>(sql`SELECT ${now} AS now`),
    db.all<Record<string, number | string | null>>(
      sql`WITH ${lateAfter}, ${runningJobs}
        SELECT queue_name AS queue, count(*) AS count, sum(lease_expires_at < ${now}) AS expired,
          sum(lease_expires_at + grace < ${now}) AS expiredPastGrace, min(started_at) AS oldestStartedAt,
          max(hb_lag) AS maxLag, sum(hb_lag) AS sumLag, ${bucketCols},
          sum(started_at >= ${now} - ${shortMs}) AS started5m, sum(started_at >= ${now} - ${longMs}) AS startedHour,
          count(DISTINCT locked_by) AS busyWorkers,
          sum(owner_alive) AS ownerAlive, max(CASE WHEN owner_alive THEN hb_lag END) AS maxOwnerAliveLag,
          sum(owner_alive AND hb_lag > late_after) AS late,
          json_group_array(DISTINCT CASE WHEN owner_alive THEN locked_by END) AS aliveHolders
        FROM rj GROUP BY queue_name`,
    ),
    db.all<{ queue: string; id: number }>(
      // The late jobs' ids: the owner is looked up only for jobs already late.
      sql`WITH ${lateAfter}
        SELECT queue, id FROM (SELECT j.queue_name AS queue, j.id AS id, row_number() OVER (PARTITION BY j.queue_name ORDER BY ${hbLag} DESC, j.id) AS rn
          FROM jobs j INDEXED BY jobs_lease_expiry_idx LEFT JOIN qt ON qt.name = j.queue_name
          WHERE j.status = 'running' AND ${hbLag} > coalesce(qt.late_after, ${defaultLateAfter}) AND ${ownerAlive})
        WHERE rn <= ${LATE_IDS_NAMED} ORDER BY queue, rn`,
    ),
    db.all<{ queue: string; type: string; reason: string | null; total: number; lastHour: number; last5m: number }>(
      sql`SELECT queue_name AS queue, type, reason, count(*) AS total,
          sum(at >= ${now} - ${longMs}) AS lastHour, sum(at >= ${now} - ${shortMs}) AS last5m
        FROM events
        WHERE type IN ('stale_write_rejected', 'deduplicated', 'reaped', 'reap_deferred', 'duplicate_execution', 'duplicate_reported', 'effect_skipped', 'effect_rerun')
          AND type NOT IN ('enqueued', 'claimed', 'completed') -- lets SQLite use events_rare_type_at_idx
        GROUP BY queue_name, type, reason`,
    ),
    // Attempts and runtimes from one read of the sample (its index lookups
    // are most of the cost): a JSON row per queue x attempts ('attempts'),
    // and per queue its completed jobs' runtimes as one comma-separated list
    // ('runtime'), sorted here: a window function ranking them in SQL took
    // ~20 ms more for 5,000 jobs.
    db.all<{ kind: 'attempts' | 'runtime'; queue: string; data: string }>(
      sql`WITH s AS MATERIALIZED ${recentFinished}
        SELECT 'attempts' AS kind, queue_name AS queue, json_object('attempts', attempt_count, 'count', count(*),
          'errored', sum(errored_attempts), 'lost', sum(lost_attempts),
          'withErrors', sum(errored_attempts > 0), 'withLost', sum(lost_attempts > 0),
          'claimedHour', sum(started_at IS NOT NULL),
          'claimed5m', sum(started_at IS NOT NULL AND finished_at >= ${now} - ${shortMs})) AS data
        FROM s GROUP BY queue_name, attempt_count
        UNION ALL
        SELECT 'runtime', queue_name, group_concat(completed_at - started_at)
        FROM s WHERE status = 'completed' AND started_at IS NOT NULL GROUP BY queue_name`,
    ),
    db.all<{ total: number; active: number | null }>(
      sql`SELECT count(*) AS total, sum(last_seen_at >= ${alive}) AS active FROM workers`,
    ),
    // Live workers per queue they report in their beats (the workers table is small).
    db.all<{ queue: string; workers: string }>(
      sql`SELECT je.value AS queue, json_group_array(DISTINCT w.id) AS workers
        FROM workers w, json_each(CASE WHEN json_valid(w.queues) THEN w.queues ELSE '[]' END) je
        WHERE w.last_seen_at >= ${alive} GROUP BY je.value`,
    ),
    // Counts and health per queue, in the same batch (one round trip for the whole snapshot).
    db.all<Record<string, number | string | null>>(queuesHealthSql({ now: p.now })),
    db.all<{ queue: string; count: number; ids: string }>(stalledByQueueSql(now)),
    db.select({ queue: counters.queueName, name: counters.name, label: counters.label, value: counters.value }).from(counters),
    // The last completed maintenance pass (one primary-key row).
    db.all<{ lastStartedAt: number | null; lastCompletedAt: number | null; passes: number }>(maintenancePassSql()),
    // The durable histograms (drizzle/0022): stored per bucket, added up below.
    db
      .select({ queue: histogramBuckets.queueName, name: histogramBuckets.name, leMs: histogramBuckets.leMs, count: histogramBuckets.count, sumMs: histogramBuckets.sumMs })
      .from(histogramBuckets),
    // Failure cascades still owed (a small table: only cascades in progress).
    db.all<{ owed: number }>(sql`SELECT count(*) AS owed FROM dependency_cascades`),
  ]);
  const at = clock[0]!.now;
  const finished: Record<string, number | string | null>[] = [];
  const runtimes = new Map<string, NonNullable<QueueMetrics['runtime']>>();
  for (const row of recent) {
    if (row.kind === 'attempts') finished.push({ queue: row.queue, ...JSON.parse(row.data) });
    else runtimes.set(row.queue, percentiles(row.data.split(',').map(Number)));
  }
  const health = toQueueHealth(healthRows, config);
  const suspects = await suspectsOf(db, at, health, runtimes, running);

  // Counts by status come from queuesHealth; every job's queue has a queues
  // row, created by its enqueue.
  // Rows grouped by queue once: a scan of every row per queue made 2,000 queues take seconds.
  const runningOf = byQueue(running);
  const eventsOf = byQueue(events);
  const countersOf = byQueue(counterRows);
  const finishedOf = byQueue(finished);
  const lateOf = byQueue(late);
  const stalledOfQueue = byQueue(stalledRows);
  const servingOf = byQueue(serving);
  const histogramsOf = byQueue(histogramRows);
  const queues: QueueMetrics[] = health.map((h) => {
    const name = h.name;
    const counts = { ...h.counts };
    const r = runningOf.get(name)?.[0];
    const ev = eventsOf.get(name) ?? [];
    const own = countersOf.get(name) ?? [];
    const counter = (counterName: string, label?: string) =>
      own.reduce((s, c) => s + (c.name === counterName && (label === undefined || c.label === label) ? num(c.value) : 0), 0);
    // The windows from the retained events of `type`; the total from its counter.
    const sumOf = (type: string, counterName: string, reason?: string) => {
      const w = zero();
      for (const e of ev) {
        if (e.type !== type || (reason !== undefined && (e.reason ?? 'unknown') !== reason)) continue;
        w.lastHour += num(e.lastHour);
        w.last5m += num(e.last5m);
      }
      w.total = counter(counterName, reason);
      return w;
    };
    const reasons = new Set<string>(REAP_REASONS);
    for (const c of own) if (c.name === 'reaped') reasons.add(c.label);
    for (const e of ev) if (e.type === 'reaped') reasons.add(e.reason ?? 'unknown');
    const reaped: Record<string, WindowCount> = {};
    for (const reason of [...reasons].sort()) reaped[reason] = sumOf('reaped', 'reaped', reason);
    const reapedTotal = sumOf('reaped', 'reaped');
    const fin = finishedOf.get(name) ?? [];
    const rt = runtimes.get(name);
    const oldestStartedAt = r ? numOrNull(r.oldestStartedAt) : null;
    const oldestReady = h.oldestReadyAvailableAt;
    const runningCount = r ? num(r.count) : 0;
    return {
      queue: name,
      paused: h.paused,
      settings: h.settings,
      alertOverrides: h.alertOverrides,
      stallMs: h.stallMs,
      maxRunning: h.maxRunning,
      rateLimit: h.rateLimit,
      rateUsed: h.rateUsed,
      rateLimitedUntil: h.rateLimitedUntil,
      onLost: h.onLost ?? 'retry',
      held: h.held,
      deadLetterQueue: h.deadLetterQueue,
      maxSnoozes: h.maxSnoozes ?? DEFAULT_MAX_SNOOZES,
      counts,
      ready: h.ready,
      oldestReadyAvailableAt: oldestReady,
      oldestReadyAgeMs: oldestReady === null ? null : Math.max(0, at - oldestReady),
      running: {
        count: runningCount,
        expiredLeases: r ? num(r.expired) : 0,
        oldestStartedAt,
        oldestAgeMs: oldestStartedAt === null ? null : Math.max(0, at - oldestStartedAt),
        maxHeartbeatLagMs: r ? numOrNull(r.maxLag) : null,
        heartbeatLagBuckets: [
          ...HEARTBEAT_LAG_BUCKETS_MS.map((leMs, i) => ({ leMs, count: r ? num(r[`b${i}`]) : 0 })),
          { leMs: null, count: runningCount },
        ],
        heartbeatLagSumMs: r ? num(r.sumLag) : 0,
        busyWorkers: r ? num(r.busyWorkers) : 0,
        ownerAliveJobs: r ? num(r.ownerAlive) : 0,
        ownerGoneJobs: r ? runningCount - num(r.ownerAlive) : 0,
        maxOwnerAliveLagMs: r ? numOrNull(r.maxOwnerAliveLag) : null,
        lateJobs: r ? num(r.late) : 0,
        lateJobIds: (lateOf.get(name) ?? []).map((x) => String(x.id)),
        stalled: stalledOf(stalledOfQueue.get(name)?.[0]),
        expiredPastGrace: r ? num(r.expiredPastGrace) : 0,
        suspect: suspects.get(name) ?? { count: 0, ids: [], afterMs: null, basis: null },
      },
      jobsTotal: {
        enqueued: counter('enqueued'),
        claimed: counter('claimed'),
        completed: counter('completed'),
        failed: counter('failed'),
        cancelled: counter('cancelled'),
        retried: counter('retried'),
        requeuedExpired: counter('requeued', 'expired'),
        requeuedForced: counter('requeued', 'forced'),
        deadLettered: counter('dead_lettered'),
        snoozed: counter('snoozed'),
        redriven: counter('redriven'),
        replaced: counter('enqueue_replaced', 'replace'),
        debounced: counter('enqueue_replaced', 'debounce'),
      },
      // Those that report the queue, and those that hold one of its jobs (a
      // worker that never beats still claims), each counted once.
      servingWorkers: new Set([...jsonIds(servingOf.get(name)?.[0]?.workers), ...jsonIds(r?.aliveHolders)]).size,
      reaped,
      reapedTotal,
      reapDeferred: sumOf('reap_deferred', 'reap_deferred'),
      staleWritesRejected: sumOf('stale_write_rejected', 'stale_write_rejected'),
      enqueueDeduplicated: sumOf('deduplicated', 'enqueue_deduplicated'),
      duplicateExecutions: sumOf('duplicate_execution', 'duplicate_execution'),
      duplicatesReported: sumOf('duplicate_reported', 'duplicate_reported'),
      effectsSkipped: sumOf('effect_skipped', 'effect_skipped'),
      effectsRerun: sumOf('effect_rerun', 'effect_rerun'),
      claimsApprox: {
        lastHour: (r ? num(r.startedHour) : 0) + fin.reduce((s, f) => s + num(f.claimedHour), 0) + reapedTotal.lastHour,
        last5m: (r ? num(r.started5m) : 0) + fin.reduce((s, f) => s + num(f.claimed5m), 0) + reapedTotal.last5m,
      },
      attempts: {
        finished: fin.reduce((s, f) => s + num(f.count), 0),
        histogram: fin.map((f) => ({ attempts: num(f.attempts), count: num(f.count) })).sort((a, b) => a.attempts - b.attempts),
        erroredAttempts: fin.reduce((s, f) => s + num(f.errored), 0),
        lostAttempts: fin.reduce((s, f) => s + num(f.lost), 0),
        jobsWithErrors: fin.reduce((s, f) => s + num(f.withErrors), 0),
        jobsWithLost: fin.reduce((s, f) => s + num(f.withLost), 0),
      },
      runtime: rt ?? null,
      histograms: histogramsFrom(histogramsOf.get(name) ?? []),
    };
  });

  return {
    now: at,
    windows: METRIC_WINDOWS,
    workers: { total: num(workers[0]?.total), active: num(workers[0]?.active), aliveMs: config.workerAliveMs },
    queues,
    health,
    maintenance: toPassRow(passRows[0]),
    ownerCheckRefused: Object.fromEntries(
      (countersOf.get(OUTSIDE_ANY_QUEUE) ?? []).filter((c) => c.name === OWNER_CHECK_REFUSED).map((c) => [c.label, num(c.value)]),
    ),
    cascadesOwed: num(cascadeRows[0]?.owed),
  };
}

/**
 * Suspect jobs per queue (src/core/suspect.ts), from this snapshot's runtimes
 * and settings. The threshold is never under the queue's lease, so a queue
 * whose oldest running job is younger than its threshold has none: the
 * count is read (one more statement) only for queues whose oldest job is
 * past it, which is also when long_running fires.
 */
async function suspectsOf(
  db: Db,
  at: number,
  health: QueueHealth[],
  runtimes: Map<string, NonNullable<QueueMetrics['runtime']>>,
  running: Record<string, number | string | null>[],
): Promise<Map<string, QueueMetrics['running']['suspect']>> {
  const oldest = new Map(running.map((r) => [r.queue, numOrNull(r.oldestStartedAt)]));
  const thresholds = health.map((h) => {
    const t = suspectThreshold({ runtime: runtimes.get(h.name) ?? null, leaseMs: h.settings.leaseMs, thresholds: effectiveAlertThresholds(h.alertOverrides) });
    return { queue: h.name, afterMs: t.afterMs, basis: t.basis };
  });
  const out = new Map<string, QueueMetrics['running']['suspect']>(thresholds.map((t) => [t.queue, { count: 0, ids: [], afterMs: t.afterMs, basis: t.basis }]));
  const past = thresholds.filter((t) => {
    const started = oldest.get(t.queue);
    return started !== null && started !== undefined && at - started > t.afterMs;
  });
  if (past.length === 0) return out;
  for (const [queue, found] of await suspectsByQueue(db, { now: at, thresholds: past, idsPerQueue: SUSPECT_IDS_NAMED })) {
    out.set(queue, { ...out.get(queue)!, ...found });
  }
  return out;
}

/** Every histogram of one queue from its stored bucket rows (none stored: all zero). */
function histogramsFrom(rows: readonly ({ name: string } & HistogramBucketRow)[]): QueueMetrics['histograms'] {
  const out = {} as QueueMetrics['histograms'];
  for (const name of HISTOGRAM_NAMES) {
    const own = rows.filter((r) => r.name === name).map((r) => ({ leMs: num(r.leMs), count: num(r.count), sumMs: num(r.sumMs) }));
    out[name satisfies HistogramName] = toHistogram(own, HISTOGRAMS[name].boundsMs);
  }
  return out;
}

function stalledOf(row: { count: number; ids: string } | undefined): QueueMetrics['running']['stalled'] {
  if (!row) return { count: 0, ids: [] };
  const ids = (JSON.parse(row.ids) as number[]).sort((a, b) => a - b).slice(0, 20).map(String);
  return { count: num(row.count), ids };
}

/** A JSON array of worker ids from json_group_array, without the NULLs of jobs whose owner is not alive. */
function jsonIds(text: unknown): string[] {
  if (typeof text !== 'string') return [];
  return (JSON.parse(text) as (string | null)[]).filter((x): x is string => x !== null);
}

/**
 * A queue's alert threshold in SQL: its own (from queues.alert_thresholds)
 * when present and within limits, as parseQueueAlertThresholds would read
 * it, else the server's. Lets one statement of the snapshot use per-queue
 * thresholds without a read before the batch.
 */
function thresholdSql(column: SQL, key: keyof AlertThresholds): SQL {
  const limit = ALERT_THRESHOLD_LIMITS[key];
  const path = `$.${key}`;
  const value = sql`json_extract(${column}, ${path})`;
  return sql`coalesce(CASE WHEN json_valid(${column}) AND json_type(${column}, ${path}) IN ('integer', 'real')
    AND ${value} BETWEEN ${limit.min} AND ${limit.max} ${limit.integer ? sql`AND ${value} = CAST(${value} AS INTEGER)` : sql``}
    THEN ${value} END, ${DEFAULT_ALERT_THRESHOLDS[key]})`;
}

/** Rows by their queue, each queue's rows in their original order. */
function byQueue<T extends { queue?: unknown }>(rows: readonly T[]): Map<unknown, T[]> {
  const out = new Map<unknown, T[]>();
  for (const row of rows) {
    const list = out.get(row.queue);
    if (list) list.push(row);
    else out.set(row.queue, [row]);
  }
  return out;
}
