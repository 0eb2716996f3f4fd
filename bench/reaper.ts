/**
 * Reaper pass time over a table with few vs many finished jobs. The finished
 * rows are inside retention, so a pass should only do index range scans and
 * cost the same however many there are.
 */
import { DB_CLOCK } from '../src/core/clock.ts';
import { defaultConfig } from '../src/core/config.ts';
import { runMaintenancePass } from '../src/maintenance/pass.ts';
import { check, median, now, openTempDb } from './lib.ts';

export interface ReaperSizes {
  finishedSmall: number;
  finishedLarge: number;
  expired: number;
  healthy: number;
  passes: number;
}

const config = defaultConfig();
const HOUR = 3_600_000;


async function scenario(finished: number, s: ReaperSizes, log: (line: string) => void) {
  const db = await openTempDb(`reaper-${finished}`);
  try {
    const c = db.client;
    const t = Date.now();
    // Bulk load: since drizzle/0015 a row inserted writes no enqueue event (only its counters).
    const l0 = now();
    const CHUNK = 100_000;
    for (let done = 0; done < finished; done += CHUNK) {
      const n = Math.min(CHUNK, finished - done);
      // Finished within the last day: well inside the 7-day retention.
      await c.execute({
        sql: `INSERT INTO jobs (queue_name, payload, status, max_attempts, attempt_count, available_at, started_at,
                completed_at, finished_at, last_event, last_event_actor, created_at, updated_at)
              WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?2),
                r(i, at) AS (SELECT i, ?1 - 86400000 + (i * 7919) % 86400000 FROM s)
              SELECT 'q' || (i % 4), json_object('n', i), 'completed', 5, 1, at, at, at + 5, at + 5, 'completed', 'bench', at, at + 5
              FROM r`,
        args: [t, n],
      });
      await c.execute('PRAGMA wal_checkpoint(TRUNCATE)');
    }
    // Running jobs: `expired` that will be made overdue later, and healthy ones.
    const running = (n: number, worker: string) =>
      c.execute({
        sql: `INSERT INTO jobs (queue_name, payload, status, max_attempts, attempt_count, lease_epoch, available_at, started_at,
                last_heartbeat_at, lease_ms, lease_expires_at, locked_by, lock_token, last_event, last_event_actor, created_at, updated_at)
              WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?3)
              SELECT 'q' || (i % 4), '{}', 'running', 5, 1, 1, ?1 - 60000, ?1 - 60000, ?1, 30000, ?1 + ${HOUR}, ?2,
                lower(hex(randomblob(16))), 'claimed', ?2, ?1 - 60000, ?1
              FROM s`,
        args: [t, worker, n],
      });
    await running(s.expired, 'bench-dead-worker');
    await running(s.healthy, 'bench-live-worker');
    await c.execute({ sql: `INSERT INTO workers (id, started_at, last_seen_at) VALUES ('bench-live-worker', ?1, ?1)`, args: [t] });
    await c.execute('PRAGMA wal_checkpoint(TRUNCATE)');
    const loadSeconds = (now() - l0) / 1000;
    const [counts] = (await c.execute(`SELECT count(*) AS n, sum(status = 'running') AS r FROM jobs`)).rows;
    check(Number(counts?.n) === finished + s.expired + s.healthy && Number(counts?.r) === s.expired + s.healthy, 'reaper table load');
    log(`  reaper: loaded ${finished.toLocaleString('en-US')} finished rows in ${loadSeconds.toFixed(1)} s`);

    // Passes with nothing to do: only index range scans.
    await runMaintenancePass(db.db, DB_CLOCK, config); // warm-up
    const idleMs: number[] = [];
    for (let i = 0; i < s.passes; i++) {
      const p0 = now();
      const report = await runMaintenancePass(db.db, DB_CLOCK, config);
      idleMs.push(now() - p0);
      check(report.requeued.length + report.failed.length + report.deferred.length + report.pruned === 0, 'idle pass did something');
    }

    const [dead] = (await c.execute(`SELECT min(id) AS lo, max(id) AS hi FROM jobs WHERE locked_by = 'bench-dead-worker'`)).rows;
    check(Number(dead?.hi) - Number(dead?.lo) + 1 === s.expired, 'expired jobs are not contiguous');
    // Passes that take back `expired` jobs whose owner is gone.
    const reapMs: number[] = [];
    for (let i = 0; i < s.passes; i++) {
      await c.execute({
        sql: `UPDATE jobs SET status = 'running', lock_token = lower(hex(randomblob(16))), locked_by = 'bench-dead-worker',
                lease_ms = 30000, lease_expires_at = ?1 - ${HOUR}, last_heartbeat_at = ?1 - ${2 * HOUR}, started_at = ?1 - ${2 * HOUR},
                attempt_count = 1, lost_attempts = 0, errored_attempts = 0, failed_at = NULL, finished_at = NULL, last_error = NULL
              WHERE id BETWEEN ?2 AND ?3`,
        args: [Date.now(), Number(dead?.lo), Number(dead?.hi)],
      });
      const p0 = now();
      const report = await runMaintenancePass(db.db, DB_CLOCK, config);
      reapMs.push(now() - p0);
      check(report.requeued.length === Math.min(s.expired, config.reaperBatchSize), `reap pass requeued ${report.requeued.length} of ${s.expired}`);
    }
    return { finished, loadSeconds, idlePassMs: median(idleMs), reapPassMs: median(reapMs), idleRunsMs: idleMs, reapRunsMs: reapMs };
  } finally {
    db.done();
  }
}

export async function benchReaper(s: ReaperSizes, log: (line: string) => void) {
  const small = await scenario(s.finishedSmall, s, log);
  log(`  reaper ${s.finishedSmall} finished: idle ${small.idlePassMs.toFixed(2)} ms, reaping ${s.expired}: ${small.reapPassMs.toFixed(2)} ms`);
  const large = await scenario(s.finishedLarge, s, log);
  log(`  reaper ${s.finishedLarge} finished: idle ${large.idlePassMs.toFixed(2)} ms, reaping ${s.expired}: ${large.reapPassMs.toFixed(2)} ms`);
  return { small, large, idleRatio: large.idlePassMs / small.idlePassMs, reapRatio: large.reapPassMs / small.reapPassMs };
}
