-- A claim's counts and a completion's, once per statement instead of once
-- per job. The claimed counter (events_count, 0006), the pending -> running
-- move of the live counts (jobs_live_move, 0014) and the rate window's claims
-- (jobs_count_claimed, 0022), and for a completion the completed counter
-- (jobs_count_completed, 0015), its finished count (jobs_finished_enter,
-- 0004) and the running -> completed move of the live counts, were upserts
-- per row: about a fifth of the engine's cost per job.
-- - A claim is followed, in its own batch (one transaction), by one INSERT
--   INTO claim_tallies whose `jobs` is changes(): the rows that claim
--   statement moved, and only those (a trigger's writes and a replayed
--   claim's renewals are not counted).
-- - A completion is preceded, in its batch, by one INSERT INTO
--   completion_tallies per queue of the jobs that the completion's guard
--   accepts, read with that same guard right before it: in one transaction
--   the UPDATE then moves exactly those.
-- The views hold nothing: their INSTEAD OF triggers add the tallies. What
-- depends on each job stays per row (the queue-wait and run-time histograms,
-- the completions per minute, which the job's own finished_at places). Only a
-- claim makes a job running and only the owner's completion makes it
-- completed (src/db/store/claim.ts, finish.ts); every other transition keeps
-- its per-row triggers. Nothing stored changes here, so counts stay exact
-- across the upgrade.
DROP TRIGGER IF EXISTS `events_count`;
--> statement-breakpoint
-- As in 0006, without 'claimed' (the tally counts claims).
CREATE TRIGGER `events_count` AFTER INSERT ON `events`
  WHEN NEW.`type` IN ('enqueued', 'retry_scheduled', 'retried_by_operator', 'reaped', 'reap_deferred',
    'requeued_by_operator', 'force_requeued_by_operator', 'stale_write_rejected', 'deduplicated',
    'duplicate_execution', 'effect_skipped', 'effect_rerun')
BEGIN
  INSERT INTO `counters` (`queue_name`, `name`, `label`, `value`)
  VALUES (
    NEW.`queue_name`,
    CASE NEW.`type`
      WHEN 'retry_scheduled' THEN 'retried'
      WHEN 'retried_by_operator' THEN 'retried'
      WHEN 'requeued_by_operator' THEN 'requeued'
      WHEN 'force_requeued_by_operator' THEN 'requeued'
      WHEN 'deduplicated' THEN 'enqueue_deduplicated'
      ELSE NEW.`type`
    END,
    CASE NEW.`type`
      WHEN 'reaped' THEN coalesce(NEW.`reason`, 'unknown')
      WHEN 'requeued_by_operator' THEN 'expired'
      WHEN 'force_requeued_by_operator' THEN 'forced'
      ELSE ''
    END,
    1)
  ON CONFLICT (`queue_name`, `name`, `label`) DO UPDATE SET `value` = `value` + 1;
END;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `jobs_live_move`;
--> statement-breakpoint
-- As in 0014, for every move but a claim's and a completion's (the tallies move those).
CREATE TRIGGER `jobs_live_move` AFTER UPDATE OF `status` ON `jobs`
  WHEN OLD.`status` <> NEW.`status` AND (OLD.`status` IN ('pending', 'running') OR NEW.`status` IN ('pending', 'running'))
    AND NOT (OLD.`status` = 'pending' AND NEW.`status` = 'running') AND NEW.`last_event` IS NOT 'completed'
BEGIN
  -- Leaving a finished status matches no row here (finished_counts has it).
  UPDATE `live_counts` SET `jobs` = `jobs` - 1 WHERE `queue_name` = OLD.`queue_name` AND `status` = OLD.`status`;
  INSERT INTO `live_counts` (`queue_name`, `status`, `jobs`) SELECT NEW.`queue_name`, NEW.`status`, 1 WHERE NEW.`status` IN ('pending', 'running')
    ON CONFLICT (`queue_name`, `status`) DO UPDATE SET `jobs` = `jobs` + 1;
END;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `jobs_count_claimed`;
--> statement-breakpoint
-- As in 0022, the queue-wait histogram only (each job's own wait); the rate
-- window's claims are in the tally.
CREATE TRIGGER `jobs_count_claimed` AFTER UPDATE OF `status` ON `jobs`
  WHEN NEW.`status` = 'running' AND OLD.`status` <> 'running'
BEGIN
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
-- One claim statement's totals: its queue, how many jobs it moved, and its
-- clock (the rate window it counts in). Holds no rows.
CREATE VIEW `claim_tallies` AS SELECT '' AS `queue_name`, 0 AS `jobs`, 0 AS `at` WHERE 0;
--> statement-breakpoint
CREATE TRIGGER `claim_tallies_add` INSTEAD OF INSERT ON `claim_tallies`
  WHEN NEW.`jobs` > 0
BEGIN
  INSERT INTO `counters` (`queue_name`, `name`, `label`, `value`) VALUES (NEW.`queue_name`, 'claimed', '', NEW.`jobs`)
    ON CONFLICT (`queue_name`, `name`, `label`) DO UPDATE SET `value` = `value` + excluded.`value`;
  UPDATE `live_counts` SET `jobs` = `jobs` - NEW.`jobs` WHERE `queue_name` = NEW.`queue_name` AND `status` = 'pending';
  INSERT INTO `live_counts` (`queue_name`, `status`, `jobs`) VALUES (NEW.`queue_name`, 'running', NEW.`jobs`)
    ON CONFLICT (`queue_name`, `status`) DO UPDATE SET `jobs` = `jobs` + excluded.`jobs`;
  UPDATE `queues` SET
    `rate_claims` = CASE WHEN `rate_window_start` = NEW.`at` - NEW.`at` % `rate_window_ms` THEN `rate_claims` + NEW.`jobs` ELSE NEW.`jobs` END,
    `rate_window_start` = NEW.`at` - NEW.`at` % `rate_window_ms`
  WHERE `name` = NEW.`queue_name` AND `rate_max` IS NOT NULL;
END;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `jobs_count_completed`;
--> statement-breakpoint
-- As in 0022 without the counter (the tally counts completions), and with
-- the completion's minute that jobs_finished_enter (0004) wrote, so a
-- completion fires one trigger.
CREATE TRIGGER `jobs_count_completed` AFTER UPDATE OF `last_event` ON `jobs`
  WHEN NEW.`last_event` = 'completed' AND OLD.`status` IS NOT NEW.`status`
BEGIN
  INSERT INTO `queue_minutes` (`queue_name`, `minute_at`, `completed`, `failed`)
    VALUES (NEW.`queue_name`, NEW.`finished_at` - NEW.`finished_at` % 60000, 1, 0)
    ON CONFLICT (`queue_name`, `minute_at`) DO UPDATE SET `completed` = `completed` + 1;
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
DROP TRIGGER IF EXISTS `jobs_finished_enter`;
--> statement-breakpoint
-- As in 0004, for every finish but a completion (the tally and
-- jobs_count_completed count those).
CREATE TRIGGER `jobs_finished_enter` AFTER UPDATE OF `status` ON `jobs`
  WHEN OLD.`status` <> NEW.`status` AND NEW.`status` IN ('completed', 'failed', 'cancelled') AND NEW.`last_event` IS NOT 'completed'
BEGIN
  INSERT INTO `finished_counts` (`queue_name`, `status`, `jobs`) VALUES (NEW.`queue_name`, NEW.`status`, 1)
    ON CONFLICT (`queue_name`, `status`) DO UPDATE SET `jobs` = `jobs` + 1;
  INSERT INTO `queue_minutes` (`queue_name`, `minute_at`, `completed`, `failed`)
    SELECT NEW.`queue_name`, NEW.`finished_at` - NEW.`finished_at` % 60000, NEW.`status` = 'completed', NEW.`status` = 'failed'
    WHERE NEW.`status` <> 'cancelled'
    ON CONFLICT (`queue_name`, `minute_at`) DO UPDATE SET
      `completed` = `completed` + excluded.`completed`, `failed` = `failed` + excluded.`failed`;
END;
--> statement-breakpoint
-- One completion's jobs of one queue, counted before its UPDATE. Holds no rows.
CREATE VIEW `completion_tallies` AS SELECT '' AS `queue_name`, 0 AS `jobs` WHERE 0;
--> statement-breakpoint
CREATE TRIGGER `completion_tallies_add` INSTEAD OF INSERT ON `completion_tallies`
  WHEN NEW.`jobs` > 0
BEGIN
  INSERT INTO `counters` (`queue_name`, `name`, `label`, `value`) VALUES (NEW.`queue_name`, 'completed', '', NEW.`jobs`)
    ON CONFLICT (`queue_name`, `name`, `label`) DO UPDATE SET `value` = `value` + excluded.`value`;
  INSERT INTO `finished_counts` (`queue_name`, `status`, `jobs`) VALUES (NEW.`queue_name`, 'completed', NEW.`jobs`)
    ON CONFLICT (`queue_name`, `status`) DO UPDATE SET `jobs` = `jobs` + excluded.`jobs`;
  UPDATE `live_counts` SET `jobs` = `jobs` - NEW.`jobs` WHERE `queue_name` = NEW.`queue_name` AND `status` = 'running';
END;
