-- Groups: a job may carry a group (a tenant, a customer, a domain). A queue
-- can cap the running jobs of each group (group_max_running) and their
-- starts per sliding window (group_rate_max per group_rate_window_ms), and
-- its claim takes jobs round-robin across the groups with due work
-- (src/db/store/claim.ts). job_groups holds each group's pending and running
-- jobs and when it was last served (the queue's group_serves at that claim),
-- kept exact by the triggers below; a group with no pending or running job
-- has no row. Jobs without a group cost none of this: every trigger here
-- starts WHEN group_key IS NOT NULL.
ALTER TABLE `jobs` ADD `group_key` text CHECK (`group_key` IS NULL OR length(`group_key`) BETWEEN 1 AND 128);
--> statement-breakpoint
ALTER TABLE `queues` ADD `group_max_running` integer;
--> statement-breakpoint
ALTER TABLE `queues` ADD `group_rate_max` integer;
--> statement-breakpoint
ALTER TABLE `queues` ADD `group_rate_window_ms` integer;
--> statement-breakpoint
-- How the queue's rate limit counts: 'sliding' (NULL, the default) counts
-- the starts of the last rate_window_ms, so no window of that length ever
-- holds more than rate_max; 'fixed' counts per window aligned to multiples
-- of it (drizzle/0012), which lets 2 x rate_max start across a window edge.
ALTER TABLE `queues` ADD `rate_mode` text CHECK (`rate_mode` IS NULL OR `rate_mode` IN ('sliding', 'fixed'));
--> statement-breakpoint
-- Pending jobs of the queue that carry a group: the claim looks for jobs
-- without one only while live_counts says there are more pending jobs.
ALTER TABLE `queues` ADD `grouped_pending` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
-- A sequence per queue, one step per grouped job claimed: a group's
-- `served` is its value at the group's last claim.
ALTER TABLE `queues` ADD `group_serves` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
CREATE TABLE `job_groups` (
	`queue_name` text NOT NULL,
	`group_key` text NOT NULL,
	`pending` integer DEFAULT 0 NOT NULL,
	`running` integer DEFAULT 0 NOT NULL,
	`served` integer,
	PRIMARY KEY(`queue_name`, `group_key`)
);
--> statement-breakpoint
-- The claim's round: groups with pending work, least recently served first (never served: NULL, first).
CREATE INDEX `job_groups_next_idx` ON `job_groups` (`queue_name`,`served`) WHERE "job_groups"."pending" > 0;
--> statement-breakpoint
-- A group's pending jobs in claim order. Grouped jobs are in jobs_claim_idx too.
CREATE INDEX `jobs_group_claim_idx` ON `jobs` (`queue_name`,`group_key`,"priority" DESC,`available_at`,`id`) WHERE "jobs"."status" = 'pending' AND "jobs"."group_key" IS NOT NULL;
--> statement-breakpoint
-- Recent starts, for sliding-window rate limits: per queue (group_key '')
-- and per group, how many jobs started at each instant. Rows older than the
-- window are deleted as new ones come, so a window's read sums at most as
-- many rows as there were claims in it (at most its max).
CREATE TABLE `rate_starts` (
	`queue_name` text NOT NULL,
	`group_key` text NOT NULL,
	`at` integer NOT NULL,
	`jobs` integer NOT NULL,
	PRIMARY KEY(`queue_name`, `group_key`, `at`)
);
--> statement-breakpoint
CREATE TRIGGER `jobs_group_enter` AFTER INSERT ON `jobs`
  WHEN NEW.`group_key` IS NOT NULL AND NEW.`status` IN ('pending', 'running')
BEGIN
  INSERT INTO `job_groups` (`queue_name`, `group_key`, `pending`, `running`)
    VALUES (NEW.`queue_name`, NEW.`group_key`, NEW.`status` = 'pending', NEW.`status` = 'running')
    ON CONFLICT (`queue_name`, `group_key`) DO UPDATE SET `pending` = `pending` + excluded.`pending`, `running` = `running` + excluded.`running`;
  UPDATE `queues` SET `grouped_pending` = `grouped_pending` + 1 WHERE `name` = NEW.`queue_name` AND NEW.`status` = 'pending';
END;
--> statement-breakpoint
-- Every status move of a grouped job (and a move to another queue): out of
-- its old counts, into its new ones. A claim (pending -> running) also
-- marks the group served, and counts the start for the group's rate limit.
CREATE TRIGGER `jobs_group_move` AFTER UPDATE OF `status`, `queue_name` ON `jobs`
  WHEN NEW.`group_key` IS NOT NULL AND (OLD.`status` IS NOT NEW.`status` OR OLD.`queue_name` IS NOT NEW.`queue_name`)
BEGIN
  UPDATE `job_groups` SET `pending` = `pending` - (OLD.`status` = 'pending'), `running` = `running` - (OLD.`status` = 'running')
    WHERE `queue_name` = OLD.`queue_name` AND `group_key` = OLD.`group_key` AND OLD.`status` IN ('pending', 'running');
  UPDATE `queues` SET `grouped_pending` = `grouped_pending` - 1 WHERE `name` = OLD.`queue_name` AND OLD.`status` = 'pending';
  UPDATE `queues` SET `group_serves` = `group_serves` + 1 WHERE `name` = NEW.`queue_name` AND OLD.`status` = 'pending' AND NEW.`status` = 'running';
  INSERT INTO `job_groups` (`queue_name`, `group_key`, `pending`, `running`, `served`)
    SELECT NEW.`queue_name`, NEW.`group_key`, NEW.`status` = 'pending', NEW.`status` = 'running',
      CASE WHEN OLD.`status` = 'pending' AND NEW.`status` = 'running' THEN (SELECT `group_serves` FROM `queues` WHERE `name` = NEW.`queue_name`) END
    WHERE NEW.`status` IN ('pending', 'running')
    ON CONFLICT (`queue_name`, `group_key`) DO UPDATE SET `pending` = `pending` + excluded.`pending`, `running` = `running` + excluded.`running`,
      `served` = coalesce(excluded.`served`, `served`);
  UPDATE `queues` SET `grouped_pending` = `grouped_pending` + 1 WHERE `name` = NEW.`queue_name` AND NEW.`status` = 'pending';
  DELETE FROM `job_groups` WHERE `queue_name` = OLD.`queue_name` AND `group_key` = OLD.`group_key` AND `pending` <= 0 AND `running` <= 0;
  INSERT INTO `rate_starts` (`queue_name`, `group_key`, `at`, `jobs`)
    SELECT NEW.`queue_name`, NEW.`group_key`, NEW.`started_at`, 1 FROM `queues` q
    WHERE q.`name` = NEW.`queue_name` AND q.`group_rate_max` IS NOT NULL AND OLD.`status` = 'pending' AND NEW.`status` = 'running'
    ON CONFLICT (`queue_name`, `group_key`, `at`) DO UPDATE SET `jobs` = `jobs` + 1;
  DELETE FROM `rate_starts` WHERE `queue_name` = NEW.`queue_name` AND `group_key` = NEW.`group_key` AND NEW.`status` = 'running'
    AND `at` <= NEW.`started_at` - (SELECT `group_rate_window_ms` FROM `queues` WHERE `name` = NEW.`queue_name`);
END;
--> statement-breakpoint
CREATE TRIGGER `jobs_group_leave` AFTER DELETE ON `jobs`
  WHEN OLD.`group_key` IS NOT NULL AND OLD.`status` IN ('pending', 'running')
BEGIN
  UPDATE `job_groups` SET `pending` = `pending` - (OLD.`status` = 'pending'), `running` = `running` - (OLD.`status` = 'running')
    WHERE `queue_name` = OLD.`queue_name` AND `group_key` = OLD.`group_key`;
  UPDATE `queues` SET `grouped_pending` = `grouped_pending` - 1 WHERE `name` = OLD.`queue_name` AND OLD.`status` = 'pending';
  DELETE FROM `job_groups` WHERE `queue_name` = OLD.`queue_name` AND `group_key` = OLD.`group_key` AND `pending` <= 0 AND `running` <= 0;
END;
--> statement-breakpoint
-- A claim's starts for the queue's sliding window, once per claim statement
-- (beside claim_tallies_add, drizzle/0026, which keeps the fixed window's
-- count). `at` is the tally's clock, never earlier than the claim's: a start
-- can only be counted later than it happened, which holds claims back, never
-- lets more through.
CREATE TRIGGER `claim_tallies_sliding` INSTEAD OF INSERT ON `claim_tallies`
  WHEN NEW.`jobs` > 0
BEGIN
  INSERT INTO `rate_starts` (`queue_name`, `group_key`, `at`, `jobs`)
    SELECT NEW.`queue_name`, '', NEW.`at`, NEW.`jobs` FROM `queues` q
    WHERE q.`name` = NEW.`queue_name` AND q.`rate_max` IS NOT NULL AND q.`rate_mode` IS NOT 'fixed'
    ON CONFLICT (`queue_name`, `group_key`, `at`) DO UPDATE SET `jobs` = `jobs` + excluded.`jobs`;
  DELETE FROM `rate_starts` WHERE `queue_name` = NEW.`queue_name` AND `group_key` = ''
    AND `at` <= NEW.`at` - (SELECT `rate_window_ms` FROM `queues` WHERE `name` = NEW.`queue_name`);
END;
