-- onLost 'hold': a job whose attempt was lost (reaped, deadline, forced
-- requeue) waits for a person instead of running again by itself.
-- A held job stays `pending` (the status CHECK cannot grow without
-- rebuilding the jobs table and its triggers) with `held_at` set and
-- `available_at` at the largest time JavaScript can name
-- (HELD_AVAILABLE_AT, src/core/held.ts), so every claim path, which asks for
-- `available_at <= now`, passes it by, and the ready counts (pending minus
-- due later) leave it out. Two triggers make that hold in the database too.
ALTER TABLE `jobs` ADD `on_lost` text;--> statement-breakpoint
ALTER TABLE `jobs` ADD `held_at` integer;--> statement-breakpoint
ALTER TABLE `jobs` ADD `held_attempt` text;--> statement-breakpoint
ALTER TABLE `queues` ADD `on_lost` text;--> statement-breakpoint
CREATE INDEX `jobs_held_idx` ON `jobs` (`queue_name`,`held_at`) WHERE "jobs"."held_at" IS NOT NULL;--> statement-breakpoint
-- A held job is never made running: a statement that would (a claim that
-- found it anyway) skips its row, and only a release (which clears held_at
-- without touching the status) lets it be claimed again.
CREATE TRIGGER `jobs_held_never_claimed` BEFORE UPDATE OF `status` ON `jobs`
  WHEN OLD.`held_at` IS NOT NULL AND NEW.`status` = 'running'
BEGIN
  SELECT RAISE(IGNORE);
END;
--> statement-breakpoint
-- Leaving pending any other way (completed or failed by hand, cancelled)
-- ends the hold, so a job retried later is not held by a stale mark.
CREATE TRIGGER `jobs_held_cleared` AFTER UPDATE OF `status` ON `jobs`
  WHEN NEW.`status` <> 'pending' AND NEW.`held_at` IS NOT NULL
BEGIN
  UPDATE `jobs` SET `held_at` = NULL WHERE `id` = NEW.`id`;
END;
