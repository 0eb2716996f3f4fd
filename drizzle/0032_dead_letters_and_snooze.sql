-- Dead letters and snooze.
-- A job that fails for good in a queue with a dead_letter_queue is marked
-- with it (jobs.dead_letter_queue, dead_lettered_at) and listed there. The
-- row stays in its own queue: its id, idempotency key (still deduplicating
-- where it was enqueued), events, counts and retention do not move, and a
-- redrive back is the operator's retry. jobs.snoozes counts the times a
-- handler said "not now" (each gave its attempt back); queues.max_snoozes
-- bounds it (NULL: the server's default).
ALTER TABLE `jobs` ADD `dead_letter_queue` text;--> statement-breakpoint
ALTER TABLE `jobs` ADD `dead_lettered_at` integer;--> statement-breakpoint
ALTER TABLE `jobs` ADD `snoozes` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `queues` ADD `dead_letter_queue` text;--> statement-breakpoint
ALTER TABLE `queues` ADD `max_snoozes` integer;--> statement-breakpoint
CREATE INDEX `jobs_dead_letters_idx` ON `jobs` (`dead_letter_queue`,`id`) WHERE "jobs"."dead_letter_queue" IS NOT NULL;--> statement-breakpoint
-- Every way a job fails for good (its worker's final fail, the reaper's
-- spent budgets and deadlines, an operator's fail) writes an event whose
-- to_status is failed, in the statement that fails it: the dead letter is
-- marked on that event, so it is part of the same statement, and its own
-- event follows the failure's in the job's history.
CREATE TRIGGER `jobs_dead_letter` AFTER INSERT ON `events`
  WHEN NEW.`to_status` = 'failed' AND NEW.`from_status` IS NOT 'failed'
BEGIN
  INSERT INTO `events` (`job_id`, `queue_name`, `type`, `from_status`, `to_status`, `reason`, `message`, `actor`, `worker_id`, `attempt`, `at`)
    SELECT j.`id`, j.`queue_name`, 'dead_lettered', 'failed', 'failed', coalesce(NEW.`reason`, NEW.`type`),
      'failed for good (' || coalesce(NEW.`reason`, NEW.`type`) || '): moved to the dead-letter queue ' || q.`dead_letter_queue`,
      NEW.`actor`, NEW.`worker_id`, NEW.`attempt`, NEW.`at`
    FROM `jobs` j JOIN `queues` q ON q.`name` = j.`queue_name`
    WHERE j.`id` = NEW.`job_id` AND j.`status` = 'failed' AND q.`dead_letter_queue` IS NOT NULL;
  INSERT INTO `counters` (`queue_name`, `name`, `label`, `value`)
    SELECT j.`queue_name`, 'dead_lettered', '', 1
    FROM `jobs` j JOIN `queues` q ON q.`name` = j.`queue_name`
    WHERE j.`id` = NEW.`job_id` AND j.`status` = 'failed' AND q.`dead_letter_queue` IS NOT NULL
    ON CONFLICT (`queue_name`, `name`, `label`) DO UPDATE SET `value` = `value` + 1;
  UPDATE `jobs` SET
    `dead_letter_queue` = (SELECT q.`dead_letter_queue` FROM `queues` q WHERE q.`name` = `jobs`.`queue_name`),
    `dead_lettered_at` = NEW.`at`
  WHERE `id` = NEW.`job_id` AND `status` = 'failed'
    AND (SELECT q.`dead_letter_queue` FROM `queues` q WHERE q.`name` = `jobs`.`queue_name`) IS NOT NULL;
END;
--> statement-breakpoint
-- Leaving failed any way (a redrive, an operator's retry) ends the dead
-- letter, so a job that fails again is dead-lettered again.
CREATE TRIGGER `jobs_dead_letter_cleared` AFTER UPDATE OF `status` ON `jobs`
  WHEN NEW.`status` <> 'failed' AND NEW.`dead_letter_queue` IS NOT NULL
BEGIN
  UPDATE `jobs` SET `dead_letter_queue` = NULL, `dead_lettered_at` = NULL WHERE `id` = NEW.`id`;
END;
--> statement-breakpoint
-- Snoozes and redrives, counted per queue (leasehold_jobs_snoozed_total,
-- leasehold_jobs_redriven_total); their own trigger, so events_count's list
-- stays as it was.
CREATE TRIGGER `events_count_snoozed_redriven` AFTER INSERT ON `events`
  WHEN NEW.`type` IN ('snoozed', 'redriven')
BEGIN
  INSERT INTO `counters` (`queue_name`, `name`, `label`, `value`) VALUES (NEW.`queue_name`, NEW.`type`, '', 1)
    ON CONFLICT (`queue_name`, `name`, `label`) DO UPDATE SET `value` = `value` + 1;
END;
