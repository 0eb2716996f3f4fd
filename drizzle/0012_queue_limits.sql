-- Queue-wide concurrency: at most max_running jobs of the queue run at once,
-- across every worker and server (the claim's LIMIT counts them). NULL: no limit.
ALTER TABLE `queues` ADD `max_running` integer;
--> statement-breakpoint
-- Uniqueness windows. An idempotency key enqueued with unique_while =
-- 'retained' (the default, and every job before this migration) matches any
-- kept job of the queue enqueued that way; with 'active' it matches only a
-- pending or running job, so once that job finished the key makes a new one.
-- Every pending or running job's key is unique per queue, whatever its mode.
ALTER TABLE `jobs` ADD `unique_while` text DEFAULT 'retained' NOT NULL CHECK (`unique_while` IN ('retained', 'active'));
--> statement-breakpoint
DROP INDEX `jobs_idempotency_key_idx`;
--> statement-breakpoint
CREATE UNIQUE INDEX `jobs_idempotency_key_idx` ON `jobs` (`queue_name`, `idempotency_key`) WHERE `idempotency_key` IS NOT NULL AND `unique_while` = 'retained';
--> statement-breakpoint
CREATE UNIQUE INDEX `jobs_active_key_idx` ON `jobs` (`queue_name`, `idempotency_key`) WHERE `idempotency_key` IS NOT NULL AND `status` IN ('pending', 'running');
--> statement-breakpoint
-- Finding jobs by key (API, dashboard), whatever their mode and status.
CREATE INDEX `jobs_key_lookup_idx` ON `jobs` (`queue_name`, `idempotency_key`) WHERE `idempotency_key` IS NOT NULL;
--> statement-breakpoint
-- Rate limits: at most rate_max claims of the queue's jobs per fixed window of
-- rate_window_ms (windows start at multiples of it since the epoch). The
-- claim's LIMIT reads what is left of the current window; the trigger below
-- counts each claim inside the claiming statement, so claims from any number
-- of servers never pass the limit. NULL rate_max: no limit.
ALTER TABLE `queues` ADD `rate_max` integer;
--> statement-breakpoint
ALTER TABLE `queues` ADD `rate_window_ms` integer;
--> statement-breakpoint
ALTER TABLE `queues` ADD `rate_window_start` integer;
--> statement-breakpoint
ALTER TABLE `queues` ADD `rate_claims` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
-- One primary-key UPDATE per claimed job; it writes only for a rate-limited queue.
CREATE TRIGGER `jobs_rate_count` AFTER UPDATE OF `status` ON `jobs`
  WHEN NEW.`status` = 'running' AND OLD.`status` <> 'running'
BEGIN
  UPDATE `queues` SET
    `rate_claims` = CASE WHEN `rate_window_start` = NEW.`started_at` - NEW.`started_at` % `rate_window_ms` THEN `rate_claims` + 1 ELSE 1 END,
    `rate_window_start` = NEW.`started_at` - NEW.`started_at` % `rate_window_ms`
  WHERE `name` = NEW.`queue_name` AND `rate_max` IS NOT NULL;
END;
--> statement-breakpoint
-- Recurring jobs: each schedule enqueues its occurrences into its queue, from
-- the maintenance pass (src/maintenance/schedules.ts). next_run_at is the next
-- occurrence not yet enqueued; the job of an occurrence carries the
-- idempotency key schedule:<name>:<occurrence>, so two passes at once make one job.
CREATE TABLE `schedules` (
	`name` text PRIMARY KEY NOT NULL,
	`queue_name` text NOT NULL,
	`cron` text,
	`time_zone` text,
	`interval_ms` integer,
	`payload` text DEFAULT 'null' NOT NULL,
	`job_options` text DEFAULT '{}' NOT NULL,
	`paused` integer DEFAULT false NOT NULL,
	`next_run_at` integer NOT NULL,
	`last_run_at` integer,
	`last_job_id` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	CONSTRAINT "schedules_cron_xor_interval" CHECK((`cron` IS NULL) <> (`interval_ms` IS NULL)),
	CONSTRAINT "schedules_json" CHECK(json_valid(`payload`) AND json_valid(`job_options`))
);
--> statement-breakpoint
CREATE INDEX `schedules_due_idx` ON `schedules` (`next_run_at`) WHERE `paused` = 0;
