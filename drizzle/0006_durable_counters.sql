CREATE TABLE `counters` (
	`queue_name` text NOT NULL,
	`name` text NOT NULL,
	`label` text DEFAULT '' NOT NULL,
	`value` integer NOT NULL,
	PRIMARY KEY(`queue_name`, `name`, `label`)
);
--> statement-breakpoint
ALTER TABLE `jobs` ADD `taken_back` text;--> statement-breakpoint
-- counters: what /metrics reports as `_total`, per queue, counted from each
-- audit event as it is written (inside the statement that made the
-- transition) and never decremented. Retention prunes events, never these.
-- Two triggers, each a single-row upsert behind a WHEN, so an event costs one
-- upsert (a reap that fails the job for good is counted by both: `reaped`
-- and `failed`).
CREATE TRIGGER `events_count` AFTER INSERT ON `events`
  WHEN NEW.`type` IN ('enqueued', 'claimed', 'retry_scheduled', 'retried_by_operator', 'reaped', 'reap_deferred',
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
-- Finished, whoever finished it (the owner, the reaper, an operator).
CREATE TRIGGER `events_count_finished` AFTER INSERT ON `events`
  WHEN NEW.`to_status` IN ('completed', 'failed', 'cancelled') AND NEW.`from_status` IS NOT NEW.`to_status`
BEGIN
  INSERT INTO `counters` (`queue_name`, `name`, `label`, `value`) VALUES (NEW.`queue_name`, NEW.`to_status`, '', 1)
  ON CONFLICT (`queue_name`, `name`, `label`) DO UPDATE SET `value` = `value` + 1;
END;
--> statement-breakpoint
-- A running job leaves its owner's hands without the owner ending the
-- attempt (reaped, deadline, operator requeue): the owner may still be
-- running it, so the next claim may run it a second time. `taken_back`
-- remembers what took it until that claim.
CREATE TRIGGER `jobs_taken_back` AFTER UPDATE OF `status` ON `jobs`
  WHEN OLD.`status` = 'running' AND NEW.`status` <> 'running'
    AND NEW.`last_event` NOT IN ('completed', 'failed', 'retry_scheduled', 'released')
BEGIN
  UPDATE `jobs` SET `taken_back` = NEW.`last_event` || coalesce(': ' || NEW.`last_event_reason`, '') WHERE `id` = NEW.`id`;
END;
--> statement-breakpoint
-- The claim after a take-back is a possible duplicate execution: an event
-- (which the counter above counts) and the flag cleared. A claim of any other
-- job matches the WHEN and nothing more.
CREATE TRIGGER `jobs_duplicate_claim` AFTER UPDATE OF `status` ON `jobs`
  WHEN NEW.`status` = 'running' AND OLD.`status` <> 'running' AND OLD.`taken_back` IS NOT NULL
BEGIN
  INSERT INTO `events` (`job_id`, `queue_name`, `type`, `from_status`, `to_status`, `reason`, `message`, `actor`, `worker_id`, `attempt`, `at`)
  VALUES (
    NEW.`id`, NEW.`queue_name`, 'duplicate_execution', OLD.`status`, NEW.`status`, OLD.`taken_back`,
    'the previous claim was taken back (' || OLD.`taken_back` || ') while its worker may still have been running it',
    NEW.`last_event_actor`, NEW.`locked_by`, NEW.`attempt_count`, NEW.`updated_at`
  );
  UPDATE `jobs` SET `taken_back` = NULL WHERE `id` = NEW.`id`;
END;
--> statement-breakpoint
-- once(): an effect started by an earlier attempt (or another worker) and
-- never recorded as done is started again, so it runs again.
CREATE TRIGGER `effects_rerun` AFTER UPDATE ON `effects`
  WHEN OLD.`state` = 'started' AND NEW.`state` = 'started'
    AND (OLD.`attempt` IS NOT NEW.`attempt` OR OLD.`worker_id` IS NOT NEW.`worker_id`)
BEGIN
  INSERT INTO `events` (`job_id`, `queue_name`, `type`, `reason`, `message`, `actor`, `worker_id`, `attempt`, `at`)
  SELECT NEW.`job_id`, j.`queue_name`, 'effect_rerun', NEW.`key`,
    'once(' || NEW.`key` || ') started on attempt ' || OLD.`attempt` || ' by ' || coalesce(OLD.`worker_id`, '?') || ' was never recorded as done: it runs again',
    NEW.`worker_id`, NEW.`worker_id`, NEW.`attempt`, NEW.`created_at`
  FROM `jobs` j WHERE j.`id` = NEW.`job_id`;
END;
--> statement-breakpoint
-- Backfill: count what retention has kept (counts before this upgrade are only
-- what the events still show), with the same mapping as events_count.
INSERT INTO `counters` (`queue_name`, `name`, `label`, `value`)
  SELECT `queue_name`, `name`, `label`, count(*) FROM (
    SELECT `queue_name`,
      CASE `type`
        WHEN 'enqueued' THEN 'enqueued'
        WHEN 'claimed' THEN 'claimed'
        WHEN 'retry_scheduled' THEN 'retried'
        WHEN 'retried_by_operator' THEN 'retried'
        WHEN 'reaped' THEN 'reaped'
        WHEN 'reap_deferred' THEN 'reap_deferred'
        WHEN 'requeued_by_operator' THEN 'requeued'
        WHEN 'force_requeued_by_operator' THEN 'requeued'
        WHEN 'stale_write_rejected' THEN 'stale_write_rejected'
        WHEN 'deduplicated' THEN 'enqueue_deduplicated'
      END AS `name`,
      CASE `type`
        WHEN 'reaped' THEN coalesce(`reason`, 'unknown')
        WHEN 'requeued_by_operator' THEN 'expired'
        WHEN 'force_requeued_by_operator' THEN 'forced'
        ELSE ''
      END AS `label`
    FROM `events`
    UNION ALL
    SELECT `queue_name`, CASE `to_status` WHEN 'completed' THEN 'completed' WHEN 'failed' THEN 'failed' WHEN 'cancelled' THEN 'cancelled' END, ''
    FROM `events` WHERE `from_status` IS NOT `to_status`
  ) WHERE `name` IS NOT NULL
  GROUP BY `queue_name`, `name`, `label`;
--> statement-breakpoint
-- Retained claims that came after a take-back (with no claim in between).
INSERT INTO `counters` (`queue_name`, `name`, `label`, `value`)
  SELECT c.`queue_name`, 'duplicate_execution', '', count(*)
  FROM `events` c
  WHERE c.`type` = 'claimed' AND EXISTS (
    SELECT 1 FROM `events` t
    WHERE t.`job_id` = c.`job_id` AND t.`id` < c.`id` AND t.`from_status` = 'running' AND t.`to_status` <> 'running'
      AND t.`type` NOT IN ('completed', 'failed', 'retry_scheduled', 'released')
      AND NOT EXISTS (SELECT 1 FROM `events` c2 WHERE c2.`job_id` = c.`job_id` AND c2.`type` = 'claimed' AND c2.`id` > t.`id` AND c2.`id` < c.`id`)
  )
  GROUP BY c.`queue_name`;
--> statement-breakpoint
-- Jobs taken back and not claimed since: their next claim is a duplicate.
UPDATE `jobs` SET `taken_back` = (
    SELECT t.`type` || coalesce(': ' || t.`reason`, '') FROM `events` t
    WHERE t.`job_id` = `jobs`.`id` AND t.`from_status` = 'running' AND t.`to_status` <> 'running'
      AND t.`type` NOT IN ('completed', 'failed', 'retry_scheduled', 'released')
      AND NOT EXISTS (SELECT 1 FROM `events` c WHERE c.`job_id` = t.`job_id` AND c.`type` = 'claimed' AND c.`id` > t.`id`)
    ORDER BY t.`id` DESC LIMIT 1)
  WHERE `status` <> 'running' AND `id` IN (
    SELECT `job_id` FROM `events`
    WHERE `type` IN ('reaped', 'requeued_by_operator', 'force_requeued_by_operator')
      AND `type` NOT IN ('enqueued', 'claimed', 'completed') -- lets SQLite use events_rare_type_at_idx
  );
--> statement-breakpoint
-- The enqueue-dedup alert was called dedup_rate; keep its recorded state.
UPDATE `alert_states` SET `name` = 'enqueue_dedup_rate' WHERE `name` = 'dedup_rate';
