CREATE TABLE `histogram_buckets` (
	`queue_name` text NOT NULL,
	`name` text NOT NULL,
	`le_ms` integer NOT NULL,
	`count` integer NOT NULL,
	`sum_ms` integer NOT NULL,
	PRIMARY KEY(`queue_name`, `name`, `le_ms`)
) WITHOUT ROWID;
--> statement-breakpoint
-- histogram_buckets: the durable histograms of /metrics (src/core/histograms.ts),
-- per queue: 'runtime' (each completion), 'queue_wait' (each claim) and
-- 'heartbeat_interval' (each lease renewal). One row per bucket holds the
-- observations that fell in it (not cumulative: each observation is one
-- upsert of one row) and their sum; le_ms is the bucket's upper bound in ms,
-- 9007199254740991 for +Inf. Counted inside the statement that made the
-- observation, like the counters (drizzle/0006), so several servers on one
-- database count each observation once; retention never prunes it.
-- The claim: the queue's rate window (as jobs_rate_count did, drizzle/0012),
-- and how long the job waited since it became claimable: enqueued, or due
-- after a delay, a retry's backoff or a requeue (available_at, never before
-- its enqueue); a job given back (a release, a claim whose answer was lost)
-- keeps its place in the queue and its available_at, so for it the wait
-- counts from its previous attempt's last lease renewal (last_heartbeat_at,
-- which leaving running keeps). One trigger for both, so a claim runs no
-- more triggers than before.
DROP TRIGGER IF EXISTS `jobs_rate_count`;
--> statement-breakpoint
CREATE TRIGGER `jobs_count_claimed` AFTER UPDATE OF `status` ON `jobs`
  WHEN NEW.`status` = 'running' AND OLD.`status` <> 'running'
BEGIN
  UPDATE `queues` SET
    `rate_claims` = CASE WHEN `rate_window_start` = NEW.`started_at` - NEW.`started_at` % `rate_window_ms` THEN `rate_claims` + 1 ELSE 1 END,
    `rate_window_start` = NEW.`started_at` - NEW.`started_at` % `rate_window_ms`
  WHERE `name` = NEW.`queue_name` AND `rate_max` IS NOT NULL;
  INSERT INTO `histogram_buckets` (`queue_name`, `name`, `le_ms`, `count`, `sum_ms`)
    SELECT NEW.`queue_name`, 'queue_wait',
      CASE WHEN v <= 10 THEN 10 WHEN v <= 50 THEN 50 WHEN v <= 100 THEN 100 WHEN v <= 250 THEN 250 WHEN v <= 500 THEN 500
        WHEN v <= 1000 THEN 1000 WHEN v <= 2500 THEN 2500 WHEN v <= 5000 THEN 5000 WHEN v <= 10000 THEN 10000
        WHEN v <= 30000 THEN 30000 WHEN v <= 60000 THEN 60000 WHEN v <= 300000 THEN 300000 WHEN v <= 900000 THEN 900000
        WHEN v <= 3600000 THEN 3600000 ELSE 9007199254740991 END,
      1, v
    FROM (SELECT max(0, NEW.`started_at` - max(OLD.`available_at`, OLD.`created_at`, coalesce(OLD.`last_heartbeat_at`, 0))) AS v) WHERE v IS NOT NULL
    ON CONFLICT (`queue_name`, `name`, `le_ms`) DO UPDATE SET `count` = `count` + 1, `sum_ms` = `sum_ms` + excluded.`sum_ms`;
END;
--> statement-breakpoint
-- The completion: the counter (as drizzle/0015) and the run time of the
-- attempt that completed, in the same trigger.
DROP TRIGGER IF EXISTS `jobs_count_completed`;
--> statement-breakpoint
CREATE TRIGGER `jobs_count_completed` AFTER UPDATE OF `last_event` ON `jobs`
  WHEN NEW.`last_event` = 'completed' AND OLD.`status` IS NOT NEW.`status`
BEGIN
  INSERT INTO `counters` (`queue_name`, `name`, `label`, `value`) VALUES (NEW.`queue_name`, 'completed', '', 1)
    ON CONFLICT (`queue_name`, `name`, `label`) DO UPDATE SET `value` = `value` + 1;
  INSERT INTO `histogram_buckets` (`queue_name`, `name`, `le_ms`, `count`, `sum_ms`)
    SELECT NEW.`queue_name`, 'runtime',
      CASE WHEN v <= 10 THEN 10 WHEN v <= 50 THEN 50 WHEN v <= 100 THEN 100 WHEN v <= 250 THEN 250 WHEN v <= 500 THEN 500
        WHEN v <= 1000 THEN 1000 WHEN v <= 2500 THEN 2500 WHEN v <= 5000 THEN 5000 WHEN v <= 10000 THEN 10000
        WHEN v <= 30000 THEN 30000 WHEN v <= 60000 THEN 60000 WHEN v <= 300000 THEN 300000 WHEN v <= 900000 THEN 900000
        WHEN v <= 3600000 THEN 3600000 ELSE 9007199254740991 END,
      1, v
    FROM (SELECT max(0, NEW.`completed_at` - NEW.`started_at`) AS v) WHERE v IS NOT NULL
    ON CONFLICT (`queue_name`, `name`, `le_ms`) DO UPDATE SET `count` = `count` + 1, `sum_ms` = `sum_ms` + excluded.`sum_ms`;
END;
--> statement-breakpoint
-- A lease renewal (heartbeat, extend, checkpoint, a claim sent again) of the
-- same claim: the time since its previous renewal, or since the claim (which
-- sets last_heartbeat_at). Heartbeats ran no trigger before: this is one
-- upsert per renewed job, into the page of its queue's row, inside the
-- renewal's own statement. A refused renewal changes no row and counts nothing.
CREATE TRIGGER `jobs_heartbeat_interval` AFTER UPDATE OF `last_heartbeat_at` ON `jobs`
  WHEN OLD.`status` = 'running' AND NEW.`status` = 'running' AND NEW.`lock_token` = OLD.`lock_token`
BEGIN
  INSERT INTO `histogram_buckets` (`queue_name`, `name`, `le_ms`, `count`, `sum_ms`)
    SELECT NEW.`queue_name`, 'heartbeat_interval',
      CASE WHEN v <= 250 THEN 250 WHEN v <= 500 THEN 500 WHEN v <= 1000 THEN 1000 WHEN v <= 2000 THEN 2000
        WHEN v <= 3000 THEN 3000 WHEN v <= 5000 THEN 5000 WHEN v <= 7500 THEN 7500 WHEN v <= 10000 THEN 10000
        WHEN v <= 15000 THEN 15000 WHEN v <= 20000 THEN 20000 WHEN v <= 30000 THEN 30000 WHEN v <= 60000 THEN 60000
        WHEN v <= 120000 THEN 120000 ELSE 9007199254740991 END,
      1, v
    FROM (SELECT max(0, NEW.`last_heartbeat_at` - OLD.`last_heartbeat_at`) AS v) WHERE v IS NOT NULL
    ON CONFLICT (`queue_name`, `name`, `le_ms`) DO UPDATE SET `count` = `count` + 1, `sum_ms` = `sum_ms` + excluded.`sum_ms`;
END;
