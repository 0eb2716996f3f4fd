-- The fair claim's round (src/db/store/claim.ts) walked every group with
-- pending work, least recently served first, before it asked whether the
-- group had a job due now: with 200,000 groups whose jobs were all delayed, a
-- claim took 123 ms against 6 ms on a plain queue. Each group now says when
-- it can run: `delayed_until` is the due time of its earliest pending job
-- when none was due at the last change of its jobs, else NULL. The round
-- walks the groups with NULL (job_groups_ready_idx, served order), and looks
-- up in job_groups_delayed_idx those whose delay ran out since; a group
-- still delayed is never visited. The triggers below keep it exact, in the
-- statements that already keep the group's counts: every change of a
-- grouped job's status, queue or (while pending) due time reads the group's
-- earliest pending job from jobs_group_due_idx, one seek. Jobs without a
-- group cost none of it: every trigger here starts WHEN group_key IS NOT NULL.
-- "Now" in a trigger is the row's updated_at, which every transition sets to
-- its clock; a trigger row written with an older one only leaves the group
-- delayed_until a time already passed, which the round's lookup finds.
ALTER TABLE `job_groups` ADD `delayed_until` integer;
--> statement-breakpoint
CREATE INDEX `jobs_group_due_idx` ON `jobs` (`queue_name`,`group_key`,`available_at`) WHERE "jobs"."status" = 'pending' AND "jobs"."group_key" IS NOT NULL;
--> statement-breakpoint
DROP INDEX `job_groups_next_idx`;
--> statement-breakpoint
CREATE INDEX `job_groups_ready_idx` ON `job_groups` (`queue_name`,`served`) WHERE "job_groups"."pending" > 0 AND "job_groups"."delayed_until" IS NULL;
--> statement-breakpoint
CREATE INDEX `job_groups_delayed_idx` ON `job_groups` (`queue_name`,`delayed_until`) WHERE "job_groups"."delayed_until" IS NOT NULL;
--> statement-breakpoint
DROP TRIGGER `jobs_group_enter`;
--> statement-breakpoint
CREATE TRIGGER `jobs_group_enter` AFTER INSERT ON `jobs`
  WHEN NEW.`group_key` IS NOT NULL AND NEW.`status` IN ('pending', 'running')
BEGIN
  INSERT INTO `job_groups` (`queue_name`, `group_key`, `pending`, `running`, `delayed_until`)
    VALUES (NEW.`queue_name`, NEW.`group_key`, NEW.`status` = 'pending', NEW.`status` = 'running',
      (SELECT CASE WHEN `available_at` > NEW.`updated_at` THEN `available_at` END FROM `jobs`
        WHERE `queue_name` = NEW.`queue_name` AND `group_key` = NEW.`group_key` AND `status` = 'pending' ORDER BY `available_at` LIMIT 1))
    ON CONFLICT (`queue_name`, `group_key`) DO UPDATE SET `pending` = `pending` + excluded.`pending`, `running` = `running` + excluded.`running`,
      `delayed_until` = excluded.`delayed_until`;
  UPDATE `queues` SET `grouped_pending` = `grouped_pending` + 1 WHERE `name` = NEW.`queue_name` AND NEW.`status` = 'pending';
END;
--> statement-breakpoint
-- As in drizzle/0030, and also on a change of a pending job's due time (a
-- job rewritten by its key, released from a hold, its dependencies met):
-- that takes the job out of its group's counts and puts it back, and reads
-- the group's earliest pending job again.
DROP TRIGGER `jobs_group_move`;
--> statement-breakpoint
CREATE TRIGGER `jobs_group_move` AFTER UPDATE OF `status`, `queue_name`, `available_at` ON `jobs`
  WHEN NEW.`group_key` IS NOT NULL AND (OLD.`status` IS NOT NEW.`status` OR OLD.`queue_name` IS NOT NEW.`queue_name`
    OR (NEW.`status` = 'pending' AND OLD.`available_at` IS NOT NEW.`available_at`))
BEGIN
  UPDATE `job_groups` SET `pending` = `pending` - (OLD.`status` = 'pending'), `running` = `running` - (OLD.`status` = 'running'),
      `delayed_until` = CASE WHEN OLD.`status` = 'pending' THEN
        (SELECT CASE WHEN j.`available_at` > NEW.`updated_at` THEN j.`available_at` END FROM `jobs` j
          WHERE j.`queue_name` = OLD.`queue_name` AND j.`group_key` = OLD.`group_key` AND j.`status` = 'pending' ORDER BY j.`available_at` LIMIT 1)
        ELSE `delayed_until` END
    WHERE `queue_name` = OLD.`queue_name` AND `group_key` = OLD.`group_key` AND OLD.`status` IN ('pending', 'running');
  UPDATE `queues` SET `grouped_pending` = `grouped_pending` - 1 WHERE `name` = OLD.`queue_name` AND OLD.`status` = 'pending';
  UPDATE `queues` SET `group_serves` = `group_serves` + 1 WHERE `name` = NEW.`queue_name` AND OLD.`status` = 'pending' AND NEW.`status` = 'running';
  INSERT INTO `job_groups` (`queue_name`, `group_key`, `pending`, `running`, `served`, `delayed_until`)
    SELECT NEW.`queue_name`, NEW.`group_key`, NEW.`status` = 'pending', NEW.`status` = 'running',
      CASE WHEN OLD.`status` = 'pending' AND NEW.`status` = 'running' THEN (SELECT `group_serves` FROM `queues` WHERE `name` = NEW.`queue_name`) END,
      CASE WHEN NEW.`status` = 'pending' THEN
        (SELECT CASE WHEN j.`available_at` > NEW.`updated_at` THEN j.`available_at` END FROM `jobs` j
          WHERE j.`queue_name` = NEW.`queue_name` AND j.`group_key` = NEW.`group_key` AND j.`status` = 'pending' ORDER BY j.`available_at` LIMIT 1) END
    WHERE NEW.`status` IN ('pending', 'running')
    ON CONFLICT (`queue_name`, `group_key`) DO UPDATE SET `pending` = `pending` + excluded.`pending`, `running` = `running` + excluded.`running`,
      `served` = coalesce(excluded.`served`, `served`),
      `delayed_until` = CASE WHEN NEW.`status` = 'pending' THEN excluded.`delayed_until` ELSE `delayed_until` END;
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
DROP TRIGGER `jobs_group_leave`;
--> statement-breakpoint
CREATE TRIGGER `jobs_group_leave` AFTER DELETE ON `jobs`
  WHEN OLD.`group_key` IS NOT NULL AND OLD.`status` IN ('pending', 'running')
BEGIN
  UPDATE `job_groups` SET `pending` = `pending` - (OLD.`status` = 'pending'), `running` = `running` - (OLD.`status` = 'running'),
      `delayed_until` = CASE WHEN OLD.`status` = 'pending' THEN
        (SELECT CASE WHEN j.`available_at` > OLD.`updated_at` THEN j.`available_at` END FROM `jobs` j
          WHERE j.`queue_name` = OLD.`queue_name` AND j.`group_key` = OLD.`group_key` AND j.`status` = 'pending' ORDER BY j.`available_at` LIMIT 1)
        ELSE `delayed_until` END
    WHERE `queue_name` = OLD.`queue_name` AND `group_key` = OLD.`group_key`;
  UPDATE `queues` SET `grouped_pending` = `grouped_pending` - 1 WHERE `name` = OLD.`queue_name` AND OLD.`status` = 'pending';
  DELETE FROM `job_groups` WHERE `queue_name` = OLD.`queue_name` AND `group_key` = OLD.`group_key` AND `pending` <= 0 AND `running` <= 0;
END;
--> statement-breakpoint
-- The groups there are now, on the database's clock.
UPDATE `job_groups` SET `delayed_until` = (SELECT CASE WHEN j.`available_at` > CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) THEN j.`available_at` END
  FROM `jobs` j WHERE j.`queue_name` = `job_groups`.`queue_name` AND j.`group_key` = `job_groups`.`group_key` AND j.`status` = 'pending' ORDER BY j.`available_at` LIMIT 1);
