-- What-if tuning's evidence (src/core/what-if.ts replays it against a
-- candidate lease and grace): how long each attempt went without a lease
-- renewal, which attempts the reaper took from their owners, and the
-- event-loop blocks workers reported. Bounded: counts per queue, minute and
-- silence for the attempts owners ended (the common case), one row per reap
-- and per growth of a process's longest block (rare); retention deletes all
-- three after a day.
CREATE TABLE `attempt_silences` (
	`queue_name` text NOT NULL,
	`minute_at` integer NOT NULL,
	`silence_ms` integer NOT NULL,
	`attempts` integer NOT NULL,
	PRIMARY KEY(`queue_name`, `minute_at`, `silence_ms`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX `attempt_silences_minute_idx` ON `attempt_silences` (`minute_at`);--> statement-breakpoint
CREATE TABLE `taken_attempts` (
	`job_id` integer NOT NULL,
	`attempt` integer NOT NULL,
	`queue_name` text NOT NULL,
	`worker_id` text,
	`instance_id` text,
	`started_at` integer,
	`last_heartbeat_at` integer,
	`lease_ms` integer,
	`longest_silence_ms` integer,
	`taken_at` integer NOT NULL,
	`reason` text,
	PRIMARY KEY(`job_id`, `attempt`)
);
--> statement-breakpoint
CREATE INDEX `taken_attempts_queue_idx` ON `taken_attempts` (`queue_name`,`taken_at`);--> statement-breakpoint
CREATE INDEX `taken_attempts_at_idx` ON `taken_attempts` (`taken_at`);--> statement-breakpoint
CREATE TABLE `worker_blocks` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`worker_id` text NOT NULL,
	`instance_id` text,
	`queues` text,
	`reported_at` integer NOT NULL,
	`block_ms` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `worker_blocks_at_idx` ON `worker_blocks` (`reported_at`);--> statement-breakpoint
-- The longest silence of the current claim, kept by the renewal statements
-- themselves (src/db/store/lease.ts): no trigger on the heartbeat path.
ALTER TABLE `jobs` ADD `longest_silence_ms` integer;--> statement-breakpoint
-- An attempt ends (the job leaves running). Ended by its owner (completed,
-- failed, released; not a claim whose answer was lost, which nobody ran):
-- one upsert of its queue's minute and silence, the silence being the
-- longest gap between renewals or the final stretch from the last renewal
-- to this write. Taken by the reaper (reaped, or held for a person): one row
-- with what the reaper saw. Anything else (an operator's action) records
-- nothing: it is not a lease decision.
CREATE TRIGGER `jobs_attempt_evidence` AFTER UPDATE OF `status` ON `jobs`
  WHEN OLD.`status` = 'running' AND NEW.`status` <> 'running'
BEGIN
  INSERT INTO `attempt_silences` (`queue_name`, `minute_at`, `silence_ms`, `attempts`)
    SELECT NEW.`queue_name`, m - m % 60000,
      CASE WHEN s <= 60000 THEN ((s + 249) / 250) * 250 WHEN s <= 600000 THEN ((s + 4999) / 5000) * 5000 ELSE 9007199254740991 END, 1
    FROM (SELECT CAST(NEW.`updated_at` AS INTEGER) AS m,
      CAST(max(0, NEW.`updated_at` - OLD.`last_heartbeat_at`,
        CASE WHEN OLD.`last_heartbeat_at` > OLD.`started_at` THEN coalesce(OLD.`longest_silence_ms`, 0) ELSE 0 END) AS INTEGER) AS s)
    WHERE NEW.`last_event_actor` IS OLD.`locked_by` AND NEW.`last_event` IN ('completed', 'failed', 'retry_scheduled', 'released')
      AND NEW.`last_event_reason` IS NOT 'claim_answer_lost' AND OLD.`last_heartbeat_at` IS NOT NULL
    ON CONFLICT (`queue_name`, `minute_at`, `silence_ms`) DO UPDATE SET `attempts` = `attempts` + 1;
  INSERT OR IGNORE INTO `taken_attempts` (`job_id`, `attempt`, `queue_name`, `worker_id`, `instance_id`, `started_at`, `last_heartbeat_at`, `lease_ms`, `longest_silence_ms`, `taken_at`, `reason`)
    SELECT NEW.`id`, OLD.`lease_epoch`, NEW.`queue_name`, OLD.`locked_by`, OLD.`locked_by_instance`, OLD.`started_at`, OLD.`last_heartbeat_at`, OLD.`lease_ms`,
      CASE WHEN OLD.`last_heartbeat_at` > OLD.`started_at` THEN OLD.`longest_silence_ms` ELSE NULL END, NEW.`updated_at`, NEW.`last_event_reason`
    WHERE NEW.`last_event_actor` = 'reaper' AND NEW.`last_event` IN ('reaped', 'held');
END;
--> statement-breakpoint
-- A worker's beat carries its process's longest event-loop block so far: a
-- row each time it grows, or a new process reports one. Evaluated on every
-- beat (the beat always sets the column), written only then.
CREATE TRIGGER `workers_block_grew` AFTER UPDATE OF `longest_event_loop_block_ms` ON `workers`
  WHEN NEW.`longest_event_loop_block_ms` > 0
    AND (NEW.`longest_event_loop_block_ms` > coalesce(OLD.`longest_event_loop_block_ms`, 0) OR NEW.`instance_id` IS NOT OLD.`instance_id`)
BEGIN
  INSERT INTO `worker_blocks` (`worker_id`, `instance_id`, `queues`, `reported_at`, `block_ms`)
    VALUES (NEW.`id`, NEW.`instance_id`, NEW.`queues`, NEW.`last_seen_at`, NEW.`longest_event_loop_block_ms`);
END;
--> statement-breakpoint
CREATE TRIGGER `workers_block_first` AFTER INSERT ON `workers`
  WHEN NEW.`longest_event_loop_block_ms` > 0
BEGIN
  INSERT INTO `worker_blocks` (`worker_id`, `instance_id`, `queues`, `reported_at`, `block_ms`)
    VALUES (NEW.`id`, NEW.`instance_id`, NEW.`queues`, NEW.`last_seen_at`, NEW.`longest_event_loop_block_ms`);
END;
