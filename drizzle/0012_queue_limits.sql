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
