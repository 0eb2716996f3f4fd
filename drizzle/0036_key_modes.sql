-- Key modes: an idempotency key that rewrites or rations instead of only
-- deduplicating (src/db/store/enqueue-keyed.ts, docs/guarantees.md).
-- unique_while's CHECK cannot grow without rebuilding the jobs table and its
-- triggers, so the mode gets a column of its own; its jobs keep unique_while
-- 'active', so a finished one holds its key in no index.
ALTER TABLE `jobs` ADD `key_mode` text CHECK (`key_mode` IS NULL OR (`key_mode` IN ('replace', 'debounce', 'throttle') AND `unique_while` = 'active'));
--> statement-breakpoint
-- Times a later enqueue rewrote the job; a fresh row has 0, so an upsert's
-- RETURNING tells a rewrite from an insert.
ALTER TABLE `jobs` ADD `replaced_count` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
-- A pending or running job's key stays unique among the jobs of the two
-- dedup windows only: a key-mode job may be made while another job with its
-- key runs (replace, debounce) or while an older one waits (throttle).
-- Every job before this migration has key_mode NULL, so nothing it held changes.
DROP INDEX `jobs_active_key_idx`;
--> statement-breakpoint
CREATE UNIQUE INDEX `jobs_active_key_idx` ON `jobs` (`queue_name`, `idempotency_key`) WHERE `idempotency_key` IS NOT NULL AND `status` IN ('pending', 'running') AND `key_mode` IS NULL;
--> statement-breakpoint
-- Replace and debounce rewrite the key's one job that no worker has claimed:
-- pending with lease_epoch 0 (every claim raises it, and nothing lowers it).
-- A job claimed once never enters this index again, so a retry going back
-- to pending never collides with the job made beside it while it ran.
CREATE UNIQUE INDEX `jobs_unclaimed_key_idx` ON `jobs` (`queue_name`, `idempotency_key`) WHERE `idempotency_key` IS NOT NULL AND `key_mode` IN ('replace', 'debounce') AND `status` = 'pending' AND `lease_epoch` = 0;
--> statement-breakpoint
-- Each rewrite is an event on the job's timeline, with the run time it had
-- and the one it got, and counted per queue and mode
-- (leasehold_enqueue_replaced_total), in the statement that rewrote it.
-- Only the rewrite assigns replaced_count, so no other write pays for this.
CREATE TRIGGER `jobs_replaced` AFTER UPDATE OF `replaced_count` ON `jobs`
  WHEN NEW.`replaced_count` > OLD.`replaced_count`
BEGIN
  INSERT INTO `events` (`job_id`, `queue_name`, `type`, `from_status`, `to_status`, `reason`, `message`, `actor`, `attempt`, `at`)
  VALUES (
    NEW.`id`, NEW.`queue_name`, 'replaced', OLD.`status`, NEW.`status`, NEW.`key_mode`,
    'run time ' || strftime('%Y-%m-%dT%H:%M:%fZ', OLD.`available_at` / 1000.0, 'unixepoch') || ' -> ' || strftime('%Y-%m-%dT%H:%M:%fZ', NEW.`available_at` / 1000.0, 'unixepoch'),
    NEW.`last_event_actor`, NEW.`attempt_count`, NEW.`updated_at`
  );
  INSERT INTO `counters` (`queue_name`, `name`, `label`, `value`) VALUES (NEW.`queue_name`, 'enqueue_replaced', NEW.`key_mode`, 1)
    ON CONFLICT (`queue_name`, `name`, `label`) DO UPDATE SET `value` = `value` + 1;
END;
