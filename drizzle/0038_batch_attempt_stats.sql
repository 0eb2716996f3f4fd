-- A plain job's claim and completion wrote four rows besides its own, one
-- trigger body each: the queue-wait histogram at the claim, and at the
-- completion the minute's count, the run-time histogram and the attempt's
-- longest silence. The store now writes them once per statement for the
-- whole batch (src/db/store/attempt-stats.ts), grouped by queue and bucket,
-- so they cost a plain job one read of its own row instead of an upsert each.
--
-- The claim keeps each job's wait in waited_ms (the claim statement reads
-- the old due time and last heartbeat as it overwrites them), so the count
-- after it reads the waits back for the claim's jobs at once.
ALTER TABLE `jobs` ADD `waited_ms` integer;
--> statement-breakpoint
DROP TRIGGER `jobs_count_claimed`;
--> statement-breakpoint
DROP TRIGGER `jobs_count_completed`;
--> statement-breakpoint
DROP TRIGGER `jobs_attempt_evidence`;
--> statement-breakpoint
-- As in 0029, for every end of an attempt but its owner's completion, which
-- counts its own silence with the batch; and an owner's failure that holds the
-- job (onLost 'hold', after a lost lease or the deadline) is the owner's end too.
CREATE TRIGGER `jobs_attempt_evidence` AFTER UPDATE OF `status` ON `jobs`
  WHEN OLD.`status` = 'running' AND NEW.`status` <> 'running' AND NEW.`last_event` IS NOT 'completed'
BEGIN
  INSERT INTO `attempt_silences` (`queue_name`, `minute_at`, `silence_ms`, `attempts`)
    SELECT NEW.`queue_name`, m - m % 60000,
      CASE WHEN s <= 60000 THEN ((s + 249) / 250) * 250 WHEN s <= 600000 THEN ((s + 4999) / 5000) * 5000 ELSE 9007199254740991 END, 1
    FROM (SELECT CAST(NEW.`updated_at` AS INTEGER) AS m,
      CAST(max(0, NEW.`updated_at` - OLD.`last_heartbeat_at`,
        CASE WHEN OLD.`last_heartbeat_at` > OLD.`started_at` THEN coalesce(OLD.`longest_silence_ms`, 0) ELSE 0 END) AS INTEGER) AS s)
    WHERE NEW.`last_event_actor` IS OLD.`locked_by` AND NEW.`last_event` IN ('failed', 'retry_scheduled', 'released', 'held')
      AND NEW.`last_event_reason` IS NOT 'claim_answer_lost' AND OLD.`last_heartbeat_at` IS NOT NULL
    ON CONFLICT (`queue_name`, `minute_at`, `silence_ms`) DO UPDATE SET `attempts` = `attempts` + 1;
  INSERT OR IGNORE INTO `taken_attempts` (`job_id`, `attempt`, `queue_name`, `worker_id`, `instance_id`, `started_at`, `last_heartbeat_at`, `lease_ms`, `longest_silence_ms`, `taken_at`, `reason`)
    SELECT NEW.`id`, OLD.`lease_epoch`, NEW.`queue_name`, OLD.`locked_by`, OLD.`locked_by_instance`, OLD.`started_at`, OLD.`last_heartbeat_at`, OLD.`lease_ms`,
      CASE WHEN OLD.`last_heartbeat_at` > OLD.`started_at` THEN OLD.`longest_silence_ms` ELSE NULL END, NEW.`updated_at`, NEW.`last_event_reason`
    WHERE NEW.`last_event_actor` = 'reaper' AND NEW.`last_event` IN ('reaped', 'held');
END;
--> statement-breakpoint
-- One completion's jobs of one queue with the same run-time and silence
-- buckets, counted before its UPDATE in one read of the batch
-- (src/db/store/attempt-stats.ts). Holds no rows. As in 0026, with the run
-- time, the minute's completions and the silence, which were per-job triggers.
DROP VIEW `completion_tallies`;
--> statement-breakpoint
CREATE VIEW `completion_tallies` AS
  SELECT '' AS `queue_name`, 0 AS `jobs`, 0 AS `runtime_le_ms`, 0 AS `runtime_sum_ms`, 0 AS `silence_ms`, 0 AS `minute_at` WHERE 0;
--> statement-breakpoint
CREATE TRIGGER `completion_tallies_add` INSTEAD OF INSERT ON `completion_tallies`
  WHEN NEW.`jobs` > 0
BEGIN
  INSERT INTO `counters` (`queue_name`, `name`, `label`, `value`) VALUES (NEW.`queue_name`, 'completed', '', NEW.`jobs`)
    ON CONFLICT (`queue_name`, `name`, `label`) DO UPDATE SET `value` = `value` + excluded.`value`;
  INSERT INTO `finished_counts` (`queue_name`, `status`, `jobs`) VALUES (NEW.`queue_name`, 'completed', NEW.`jobs`)
    ON CONFLICT (`queue_name`, `status`) DO UPDATE SET `jobs` = `jobs` + excluded.`jobs`;
  UPDATE `live_counts` SET `jobs` = `jobs` - NEW.`jobs` WHERE `queue_name` = NEW.`queue_name` AND `status` = 'running';
  INSERT INTO `queue_minutes` (`queue_name`, `minute_at`, `completed`, `failed`) VALUES (NEW.`queue_name`, NEW.`minute_at`, NEW.`jobs`, 0)
    ON CONFLICT (`queue_name`, `minute_at`) DO UPDATE SET `completed` = `completed` + excluded.`completed`;
  INSERT INTO `histogram_buckets` (`queue_name`, `name`, `le_ms`, `count`, `sum_ms`) VALUES (NEW.`queue_name`, 'runtime', NEW.`runtime_le_ms`, NEW.`jobs`, NEW.`runtime_sum_ms`)
    ON CONFLICT (`queue_name`, `name`, `le_ms`) DO UPDATE SET `count` = `count` + excluded.`count`, `sum_ms` = `sum_ms` + excluded.`sum_ms`;
  INSERT INTO `attempt_silences` (`queue_name`, `minute_at`, `silence_ms`, `attempts`) VALUES (NEW.`queue_name`, NEW.`minute_at`, NEW.`silence_ms`, NEW.`jobs`)
    ON CONFLICT (`queue_name`, `minute_at`, `silence_ms`) DO UPDATE SET `attempts` = `attempts` + excluded.`attempts`;
END;
