-- Every claim now has a deadline (the job's timeout_ms, else its queue's, else the server's default).
-- progressed_at: when the owner last changed progress or checkpoint (stall detection).
ALTER TABLE `jobs` ADD `progressed_at` integer;--> statement-breakpoint
ALTER TABLE `queues` ADD `timeout_ms` integer;--> statement-breakpoint
ALTER TABLE `queues` ADD `stall_ms` integer;--> statement-breakpoint
-- Jobs already running when the server is upgraded got no deadline at their claim. They get one
-- hour from the upgrade, so the upgrade itself ends no job at once, and none stays running forever.
UPDATE `jobs` SET `deadline_at` = CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) + 3600000
  WHERE `status` = 'running' AND `deadline_at` IS NULL;
