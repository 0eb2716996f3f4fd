CREATE TABLE `alert_states` (
	`queue_name` text NOT NULL,
	`name` text NOT NULL,
	`state` text NOT NULL,
	`since` integer NOT NULL,
	`value` integer,
	`message` text NOT NULL,
	`notified_state` text DEFAULT 'ok' NOT NULL,
	`notify_until` integer,
	`notify_attempts` integer DEFAULT 0 NOT NULL,
	`last_notify_error` text,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`queue_name`, `name`),
	CONSTRAINT "alert_states_state_known" CHECK("alert_states"."state" IN ('firing', 'ok') AND "alert_states"."notified_state" IN ('firing', 'ok'))
);
--> statement-breakpoint
CREATE TABLE `finished_counts` (
	`queue_name` text NOT NULL,
	`status` text NOT NULL,
	`jobs` integer NOT NULL,
	PRIMARY KEY(`queue_name`, `status`)
);
--> statement-breakpoint
CREATE TABLE `queue_minutes` (
	`queue_name` text NOT NULL,
	`minute_at` integer NOT NULL,
	`completed` integer DEFAULT 0 NOT NULL,
	`failed` integer DEFAULT 0 NOT NULL,
	`reaped` integer DEFAULT 0 NOT NULL,
	`max_heartbeat_lag_ms` integer,
	PRIMARY KEY(`queue_name`, `minute_at`)
);
--> statement-breakpoint
CREATE INDEX `queue_minutes_minute_idx` ON `queue_minutes` (`minute_at`);--> statement-breakpoint
ALTER TABLE `queues` ADD `alert_thresholds` text;--> statement-breakpoint
-- finished_counts: finished jobs per queue and status, kept exact inside the
-- statement that finishes, un-finishes (retry) or deletes (prune) a job. A
-- claim (pending -> running) matches no trigger below, so it costs nothing.
-- queue_minutes: completed / failed / reaped per queue and minute, counted as
-- they happen and never decremented (a retried failure stays in its minute).
CREATE TRIGGER `jobs_finished_insert` AFTER INSERT ON `jobs`
  WHEN NEW.`status` IN ('completed', 'failed', 'cancelled')
BEGIN
  -- Jobs are created pending; an import (or a benchmark's bulk load) may insert finished rows.
  INSERT INTO `finished_counts` (`queue_name`, `status`, `jobs`) VALUES (NEW.`queue_name`, NEW.`status`, 1)
    ON CONFLICT (`queue_name`, `status`) DO UPDATE SET `jobs` = `jobs` + 1;
  INSERT INTO `queue_minutes` (`queue_name`, `minute_at`, `completed`, `failed`)
    SELECT NEW.`queue_name`, NEW.`finished_at` - NEW.`finished_at` % 60000, NEW.`status` = 'completed', NEW.`status` = 'failed'
    WHERE NEW.`status` <> 'cancelled'
    ON CONFLICT (`queue_name`, `minute_at`) DO UPDATE SET
      `completed` = `completed` + excluded.`completed`, `failed` = `failed` + excluded.`failed`;
END;
--> statement-breakpoint
CREATE TRIGGER `jobs_finished_enter` AFTER UPDATE OF `status` ON `jobs`
  WHEN OLD.`status` <> NEW.`status` AND NEW.`status` IN ('completed', 'failed', 'cancelled')
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
CREATE TRIGGER `jobs_finished_leave` AFTER UPDATE OF `status` ON `jobs`
  WHEN OLD.`status` <> NEW.`status` AND OLD.`status` IN ('completed', 'failed', 'cancelled')
BEGIN
  UPDATE `finished_counts` SET `jobs` = `jobs` - 1 WHERE `queue_name` = OLD.`queue_name` AND `status` = OLD.`status`;
END;
--> statement-breakpoint
CREATE TRIGGER `jobs_finished_delete` AFTER DELETE ON `jobs`
  WHEN OLD.`status` IN ('completed', 'failed', 'cancelled')
BEGIN
  UPDATE `finished_counts` SET `jobs` = `jobs` - 1 WHERE `queue_name` = OLD.`queue_name` AND `status` = OLD.`status`;
END;
--> statement-breakpoint
CREATE TRIGGER `jobs_minute_reaped` AFTER UPDATE OF `last_event` ON `jobs` WHEN NEW.`last_event` = 'reaped'
BEGIN
  INSERT INTO `queue_minutes` (`queue_name`, `minute_at`, `reaped`)
    VALUES (NEW.`queue_name`, NEW.`updated_at` - NEW.`updated_at` % 60000, 1)
    ON CONFLICT (`queue_name`, `minute_at`) DO UPDATE SET `reaped` = `reaped` + 1;
END;
--> statement-breakpoint
-- Backfill from what is already there: the finished counts, and the last
-- day's activity (finished jobs by minute; reaps from their events).
INSERT INTO `finished_counts` (`queue_name`, `status`, `jobs`)
  SELECT `queue_name`, `status`, count(*) FROM `jobs` WHERE `status` IN ('completed', 'failed', 'cancelled') GROUP BY `queue_name`, `status`;
--> statement-breakpoint
INSERT INTO `queue_minutes` (`queue_name`, `minute_at`, `completed`, `failed`)
  SELECT `queue_name`, `finished_at` - `finished_at` % 60000, sum(`status` = 'completed'), sum(`status` = 'failed')
  FROM `jobs`
  WHERE `finished_at` IS NOT NULL AND `finished_at` >= CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) - 86400000
    AND `status` IN ('completed', 'failed')
  GROUP BY 1, 2;
--> statement-breakpoint
INSERT INTO `queue_minutes` (`queue_name`, `minute_at`, `reaped`)
  SELECT `queue_name`, `at` - `at` % 60000, count(*)
  FROM `events`
  WHERE `type` = 'reaped' AND `at` >= CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) - 86400000
  GROUP BY 1, 2
  ON CONFLICT (`queue_name`, `minute_at`) DO UPDATE SET `reaped` = excluded.`reaped`;
