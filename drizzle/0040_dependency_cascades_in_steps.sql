-- A failed or cancelled dependency's dependents are settled by the engine in
-- bounded steps (src/db/store/dependency-cascades.ts), no longer inside the
-- statement that failed it. The trigger of drizzle/0031 ran the whole
-- cascade there: a legal graph of 31,000 dependents and 3 million edges
-- held the write lock, and the embedded driver's event loop, for 21 s in
-- one worker's failure call. Its retry trigger undid a cascade the same way.
--
-- What stays in triggers, and why: a failure or retry is written by many
-- paths (a worker, the reaper, an operator, a bulk action, a held job failed
-- by hand, another server, a process writing the database directly), and the
-- record that its cascade is owed must commit with it, whichever path made
-- it, so no path and no crash can forget it. These two triggers write that
-- one row (dependency_cascades) and nothing else: constant work per failed
-- or retried job. The enqueue's checks stay in jobs_dependencies_insert:
-- they refuse the enqueue's statement (so its whole batch) when a named
-- dependency failed meanwhile, which no statement before it can promise.
-- The completion's release (jobs_dependency_completed) and the guards that
-- keep a waiting job unclaimable are unchanged.
CREATE TABLE `dependency_cascades` (
	`job_id` integer PRIMARY KEY NOT NULL,
	`action` text NOT NULL,
	`cursor` integer NOT NULL,
	`actor` text,
	`queued_at` integer NOT NULL,
	`steps` integer DEFAULT 0 NOT NULL,
	`settled` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `dependency_cascades_steps_idx` ON `dependency_cascades` (`steps`,`job_id`);--> statement-breakpoint
CREATE TABLE `dependency_cascade_batch` (
	`dependent_id` integer NOT NULL,
	`dependency_id` integer NOT NULL,
	PRIMARY KEY(`dependent_id`, `dependency_id`)
) WITHOUT ROWID;
--> statement-breakpoint
DROP TRIGGER `jobs_dependency_failed`;--> statement-breakpoint
DROP TRIGGER `jobs_dependency_retried`;--> statement-breakpoint
-- A job failed for good or cancelled while jobs wait for it: its cascade is
-- owed. Not when the statement is a cascade's own step failing a dependent
-- (it names the cascade's job in dependency_failed_by): that job's dependents
-- are the same cascade's. A cascade of the job still owed (it was retried,
-- and failed again before the retry's steps ended) starts over.
CREATE TRIGGER `jobs_dependency_failed_queued` AFTER UPDATE OF `status` ON `jobs`
  WHEN NEW.`status` IN ('failed', 'cancelled') AND OLD.`status` NOT IN ('failed', 'cancelled')
    AND NEW.`dependency_failed_by` IS OLD.`dependency_failed_by`
    AND EXISTS (SELECT 1 FROM `job_dependencies` WHERE `dependency_id` = NEW.`id` AND `state` = 'waiting')
BEGIN
  INSERT INTO `dependency_cascades` (`job_id`, `action`, `cursor`, `actor`, `queued_at`) VALUES (NEW.`id`, 'fail', NEW.`id`, NULL, NEW.`updated_at`)
  ON CONFLICT (`job_id`) DO UPDATE SET `action` = 'fail', `cursor` = NEW.`id`, `queued_at` = excluded.`queued_at`;
END;
--> statement-breakpoint
-- A failed or cancelled job back to pending (an operator's retry) whose
-- failure failed, held or let run other jobs: undoing that is owed.
CREATE TRIGGER `jobs_dependency_retry_queued` AFTER UPDATE OF `status` ON `jobs`
  WHEN OLD.`status` IN ('failed', 'cancelled') AND NEW.`status` = 'pending'
    AND (EXISTS (SELECT 1 FROM `job_dependencies` WHERE `dependency_id` = NEW.`id` AND `state` = 'failed')
      OR EXISTS (SELECT 1 FROM `jobs` WHERE `dependency_failed_by` = NEW.`id`))
BEGIN
  INSERT INTO `dependency_cascades` (`job_id`, `action`, `cursor`, `actor`, `queued_at`) VALUES (NEW.`id`, 'retry', 0, NEW.`last_event_actor`, NEW.`updated_at`)
  ON CONFLICT (`job_id`) DO UPDATE SET `action` = 'retry', `cursor` = 0, `actor` = excluded.`actor`, `queued_at` = excluded.`queued_at`;
END;
--> statement-breakpoint
-- The enqueue's checks (drizzle/0031) looked a dependency's status up by a
-- join that SQLite ran from the status index: every failed and cancelled
-- job was read for each job enqueued with dependencies (54 ms for a flow of
-- 100, 933 ms once 31,000 jobs had failed). Each named job is now read by
-- its id alone (CROSS JOIN keeps json_each outside).
DROP TRIGGER `jobs_dependencies_insert`;--> statement-breakpoint
CREATE TRIGGER `jobs_dependencies_insert` AFTER INSERT ON `jobs`
  WHEN NEW.`depends_on` IS NOT NULL
BEGIN
  SELECT RAISE(ABORT, 'leasehold: unknown dependency') WHERE EXISTS (
    SELECT 1 FROM json_each(NEW.`depends_on`) AS d
    WHERE NOT EXISTS (SELECT 1 FROM `jobs` AS x WHERE x.`id` = CASE WHEN d.`type` = 'integer' THEN d.`value` ELSE (SELECT f.`id` FROM `jobs` AS f WHERE f.`flow_ref` = d.`value`) END));
  SELECT RAISE(ABORT, 'leasehold: failed dependency') WHERE coalesce(NEW.`dependency_policy`, 'fail') <> 'run' AND EXISTS (
    SELECT 1 FROM json_each(NEW.`depends_on`) AS d
    WHERE (SELECT x.`status` FROM `jobs` AS x WHERE x.`id` = CASE WHEN d.`type` = 'integer' THEN d.`value` ELSE (SELECT f.`id` FROM `jobs` AS f WHERE f.`flow_ref` = d.`value`) END) IN ('failed', 'cancelled'));
  SELECT RAISE(ABORT, 'leasehold: too many dependents') WHERE EXISTS (
    SELECT 1 FROM json_each(NEW.`depends_on`) AS d
    WHERE (SELECT count(*) FROM `job_dependencies` AS e
      WHERE e.`dependency_id` = CASE WHEN d.`type` = 'integer' THEN d.`value` ELSE (SELECT f.`id` FROM `jobs` AS f WHERE f.`flow_ref` = d.`value`) END) >= 1000);
  INSERT INTO `job_dependencies` (`dependent_id`, `dependency_id`, `state`)
    SELECT NEW.`id`, x.`id`, CASE WHEN x.`status` = 'completed' THEN 'completed' WHEN x.`status` IN ('failed', 'cancelled') THEN 'ignored' ELSE 'waiting' END
    FROM json_each(NEW.`depends_on`) AS d CROSS JOIN `jobs` AS x
    WHERE x.`id` = CASE WHEN d.`type` = 'integer' THEN d.`value` ELSE (SELECT f.`id` FROM `jobs` AS f WHERE f.`flow_ref` = d.`value`) END
    ON CONFLICT DO NOTHING;
  UPDATE `jobs` SET
    `dependencies_unmet` = (SELECT count(*) FROM `job_dependencies` WHERE `dependent_id` = NEW.`id` AND `state` = 'waiting'),
    `dependencies_run_at` = NEW.`available_at`,
    `available_at` = CASE WHEN EXISTS (SELECT 1 FROM `job_dependencies` WHERE `dependent_id` = NEW.`id` AND `state` = 'waiting') THEN 8640000000000000 ELSE NEW.`available_at` END,
    `last_event` = CASE WHEN EXISTS (SELECT 1 FROM `job_dependencies` WHERE `dependent_id` = NEW.`id` AND `state` = 'waiting') THEN 'waiting_for_dependencies' ELSE 'dependencies_met' END,
    `last_event_reason` = NULL
  WHERE `id` = NEW.`id`;
END;
