-- Jobs that wait for other jobs (docs/flows.md). A job enqueued with
-- dependencies stays `pending` (no new status: the status CHECK cannot grow
-- without rebuilding the jobs table) with `dependencies_unmet` above 0 and
-- `available_at` at HELD_AVAILABLE_AT (src/core/held.ts), like a held job,
-- so every claim passes it by. The transitions of its dependencies keep the
-- edges and the count, in triggers that run inside the statement that made
-- the transition, whichever path made it (a worker's completion or
-- failure, the reaper, an operator, a cancel): the completion of the last
-- dependency sets available_at back, so the dependent is claimable from the
-- commit that completed it, and no pass polls for it. SQLite's writer
-- serializes those statements, so two servers completing the last two
-- dependencies at once release the dependent once.
ALTER TABLE `jobs` ADD `depends_on` text;--> statement-breakpoint
ALTER TABLE `jobs` ADD `dependency_policy` text;--> statement-breakpoint
ALTER TABLE `jobs` ADD `dependencies_unmet` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `jobs` ADD `dependencies_run_at` integer;--> statement-breakpoint
ALTER TABLE `jobs` ADD `dependency_failed_by` integer;--> statement-breakpoint
ALTER TABLE `jobs` ADD `flow_ref` text;--> statement-breakpoint
CREATE INDEX `jobs_dependency_failed_by_idx` ON `jobs` (`dependency_failed_by`) WHERE "jobs"."dependency_failed_by" IS NOT NULL;--> statement-breakpoint
CREATE INDEX `jobs_flow_ref_idx` ON `jobs` (`flow_ref`) WHERE "jobs"."flow_ref" IS NOT NULL;--> statement-breakpoint
CREATE TABLE `job_dependencies` (
	`dependent_id` integer NOT NULL,
	`dependency_id` integer NOT NULL,
	`state` text NOT NULL,
	PRIMARY KEY(`dependent_id`, `dependency_id`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX `job_dependencies_dependency_idx` ON `job_dependencies` (`dependency_id`,`state`);--> statement-breakpoint
-- Enqueue: `depends_on` names job ids (JSON integers) and a flow's own jobs
-- (JSON strings: their flow_ref, inserted earlier in the same flow). Every
-- one must exist, none may have failed (unless the policy is 'run'), and a
-- job may be waited for by at most 1000 jobs (MAX_DEPENDENTS,
-- src/core/wire.ts); otherwise the enqueue's statement fails, and its batch
-- stores nothing. The engine checks the same before, to name the ids.
CREATE TRIGGER `jobs_dependencies_insert` AFTER INSERT ON `jobs`
  WHEN NEW.`depends_on` IS NOT NULL
BEGIN
  SELECT RAISE(ABORT, 'leasehold: unknown dependency') WHERE EXISTS (
    SELECT 1 FROM json_each(NEW.`depends_on`) AS d
    WHERE NOT EXISTS (SELECT 1 FROM `jobs` AS x WHERE x.`id` = CASE WHEN d.`type` = 'integer' THEN d.`value` ELSE (SELECT f.`id` FROM `jobs` AS f WHERE f.`flow_ref` = d.`value`) END));
  SELECT RAISE(ABORT, 'leasehold: failed dependency') WHERE coalesce(NEW.`dependency_policy`, 'fail') <> 'run' AND EXISTS (
    SELECT 1 FROM json_each(NEW.`depends_on`) AS d JOIN `jobs` AS x
      ON x.`id` = CASE WHEN d.`type` = 'integer' THEN d.`value` ELSE (SELECT f.`id` FROM `jobs` AS f WHERE f.`flow_ref` = d.`value`) END
    WHERE x.`status` IN ('failed', 'cancelled'));
  SELECT RAISE(ABORT, 'leasehold: too many dependents') WHERE EXISTS (
    SELECT 1 FROM json_each(NEW.`depends_on`) AS d
    WHERE (SELECT count(*) FROM `job_dependencies` AS e
      WHERE e.`dependency_id` = CASE WHEN d.`type` = 'integer' THEN d.`value` ELSE (SELECT f.`id` FROM `jobs` AS f WHERE f.`flow_ref` = d.`value`) END) >= 1000);
  INSERT INTO `job_dependencies` (`dependent_id`, `dependency_id`, `state`)
    SELECT NEW.`id`, x.`id`, CASE WHEN x.`status` = 'completed' THEN 'completed' WHEN x.`status` IN ('failed', 'cancelled') THEN 'ignored' ELSE 'waiting' END
    FROM json_each(NEW.`depends_on`) AS d JOIN `jobs` AS x
      ON x.`id` = CASE WHEN d.`type` = 'integer' THEN d.`value` ELSE (SELECT f.`id` FROM `jobs` AS f WHERE f.`flow_ref` = d.`value`) END
    WHERE true ON CONFLICT DO NOTHING;
  UPDATE `jobs` SET
    `dependencies_unmet` = (SELECT count(*) FROM `job_dependencies` WHERE `dependent_id` = NEW.`id` AND `state` = 'waiting'),
    `dependencies_run_at` = NEW.`available_at`,
    `available_at` = CASE WHEN EXISTS (SELECT 1 FROM `job_dependencies` WHERE `dependent_id` = NEW.`id` AND `state` = 'waiting') THEN 8640000000000000 ELSE NEW.`available_at` END,
    `last_event` = CASE WHEN EXISTS (SELECT 1 FROM `job_dependencies` WHERE `dependent_id` = NEW.`id` AND `state` = 'waiting') THEN 'waiting_for_dependencies' ELSE 'dependencies_met' END,
    `last_event_reason` = NULL
  WHERE `id` = NEW.`id`;
END;
--> statement-breakpoint
-- A job that waits is never made running: a statement that would (a claim
-- that found it anyway) skips its row.
CREATE TRIGGER `jobs_waiting_never_claimed` BEFORE UPDATE OF `status` ON `jobs`
  WHEN OLD.`dependencies_unmet` > 0 AND NEW.`status` = 'running'
BEGIN
  SELECT RAISE(IGNORE);
END;
--> statement-breakpoint
-- ...and stays out of every claim's reach whoever moves its time (an
-- operator's release or retry, a run-now): only the count reaching 0 lets
-- available_at come back.
CREATE TRIGGER `jobs_waiting_stays_unclaimable` AFTER UPDATE OF `available_at`, `status` ON `jobs`
  WHEN NEW.`dependencies_unmet` > 0 AND NEW.`status` = 'pending' AND NEW.`available_at` <> 8640000000000000
BEGIN
  UPDATE `jobs` SET `available_at` = 8640000000000000 WHERE `id` = NEW.`id`;
END;
--> statement-breakpoint
-- A dependency completed: one less unmet for each dependent (a 'failed'
-- edge counts too: the dependency was failed, then retried or finished by
-- hand). A pending dependent whose count reaches 0 is due at the time it
-- was enqueued for (or now), unless a person holds it; each writes its
-- event (dependency_completed, or dependencies_met for the last one).
CREATE TRIGGER `jobs_dependency_completed` AFTER UPDATE OF `status` ON `jobs`
  WHEN NEW.`status` = 'completed' AND OLD.`status` <> 'completed'
    AND EXISTS (SELECT 1 FROM `job_dependencies` WHERE `dependency_id` = NEW.`id` AND `state` IN ('waiting', 'failed'))
BEGIN
  UPDATE `jobs` SET `dependencies_unmet` = `dependencies_unmet` - 1
  WHERE `status` <> 'pending' AND `id` IN (SELECT `dependent_id` FROM `job_dependencies` WHERE `dependency_id` = NEW.`id` AND `state` IN ('waiting', 'failed'));
  UPDATE `jobs` SET
    `dependencies_unmet` = `dependencies_unmet` - 1,
    `available_at` = CASE WHEN `dependencies_unmet` = 1 AND `held_at` IS NULL THEN max(coalesce(`dependencies_run_at`, 0), NEW.`updated_at`) ELSE `available_at` END,
    `last_event` = CASE WHEN `dependencies_unmet` = 1 THEN 'dependencies_met' ELSE 'dependency_completed' END,
    `last_event_reason` = 'job ' || NEW.`id` || ' completed', `last_event_actor` = NULL, `updated_at` = NEW.`updated_at`
  WHERE `status` = 'pending' AND `id` IN (SELECT `dependent_id` FROM `job_dependencies` WHERE `dependency_id` = NEW.`id` AND `state` IN ('waiting', 'failed'));
  UPDATE `job_dependencies` SET `state` = 'completed' WHERE `dependency_id` = NEW.`id` AND `state` IN ('waiting', 'failed');
END;
--> statement-breakpoint
-- A dependency failed for good or was cancelled: each waiting dependent by
-- its policy. 'fail' fails it, naming the dependency, and so on down the
-- chain of 'fail' dependents (a recursive query: a trigger does not fire
-- itself); 'hold' holds it for a person (held_at, as drizzle/0027); 'run'
-- counts the edge as met. The dependents of the jobs failed on the way are
-- treated the same. dependency_failed_by names the job that failed first:
-- retrying it undoes all of this (jobs_dependency_retried).
CREATE TRIGGER `jobs_dependency_failed` AFTER UPDATE OF `status` ON `jobs`
  WHEN NEW.`status` IN ('failed', 'cancelled') AND OLD.`status` NOT IN ('failed', 'cancelled')
    AND EXISTS (SELECT 1 FROM `job_dependencies` WHERE `dependency_id` = NEW.`id` AND `state` = 'waiting')
BEGIN
  UPDATE `jobs` SET `status` = 'failed', `failed_at` = NEW.`updated_at`, `finished_at` = NEW.`updated_at`, `dependency_failed_by` = NEW.`id`,
    `last_error` = 'dependency ' || NEW.`id` || ' (' || NEW.`queue_name` || ') was ' || NEW.`status` || coalesce(': ' || NEW.`last_error`, ''),
    `last_event` = 'failed', `last_event_reason` = 'dependency_failed', `last_event_actor` = NULL, `updated_at` = NEW.`updated_at`
  WHERE `status` = 'pending' AND `held_at` IS NULL AND `id` IN (
    WITH RECURSIVE doomed(`id`) AS (
      SELECT e.`dependent_id` FROM `job_dependencies` AS e JOIN `jobs` AS d ON d.`id` = e.`dependent_id`
        WHERE e.`dependency_id` = NEW.`id` AND e.`state` = 'waiting' AND d.`status` = 'pending' AND coalesce(d.`dependency_policy`, 'fail') = 'fail'
      UNION
      SELECT e.`dependent_id` FROM doomed JOIN `job_dependencies` AS e ON e.`dependency_id` = doomed.`id` JOIN `jobs` AS d ON d.`id` = e.`dependent_id`
        WHERE e.`state` = 'waiting' AND d.`status` = 'pending' AND coalesce(d.`dependency_policy`, 'fail') = 'fail'
    ) SELECT `id` FROM doomed);
  UPDATE `jobs` SET `held_at` = NEW.`updated_at`, `dependency_failed_by` = NEW.`id`,
    `last_error` = 'dependency ' || NEW.`id` || ' (' || NEW.`queue_name` || ') was ' || NEW.`status` || coalesce(': ' || NEW.`last_error`, ''),
    `last_event` = 'dependency_failed', `last_event_reason` = 'hold', `last_event_actor` = NULL, `updated_at` = NEW.`updated_at`
  WHERE `status` = 'pending' AND `held_at` IS NULL AND `dependency_policy` = 'hold' AND `id` IN (
    SELECT `dependent_id` FROM `job_dependencies` WHERE `state` = 'waiting' AND (`dependency_id` = NEW.`id`
      OR `dependency_id` IN (SELECT `id` FROM `jobs` WHERE `dependency_failed_by` = NEW.`id` AND `status` = 'failed')));
  UPDATE `jobs` SET
    `dependencies_unmet` = `dependencies_unmet` - 1,
    `available_at` = CASE WHEN `dependencies_unmet` = 1 AND `held_at` IS NULL THEN max(coalesce(`dependencies_run_at`, 0), NEW.`updated_at`) ELSE `available_at` END,
    `last_event` = CASE WHEN `dependencies_unmet` = 1 THEN 'dependencies_met' ELSE 'dependency_failed' END,
    `last_event_reason` = 'run', `last_event_actor` = NULL, `updated_at` = NEW.`updated_at`
  WHERE `status` = 'pending' AND `dependency_policy` = 'run' AND `id` IN (
    SELECT `dependent_id` FROM `job_dependencies` WHERE `state` = 'waiting' AND (`dependency_id` = NEW.`id`
      OR `dependency_id` IN (SELECT `id` FROM `jobs` WHERE `dependency_failed_by` = NEW.`id` AND `status` = 'failed')));
  UPDATE `job_dependencies` SET `state` = CASE WHEN (SELECT `dependency_policy` FROM `jobs` WHERE `id` = `dependent_id`) = 'run' THEN 'ignored' ELSE 'failed' END
  WHERE `state` = 'waiting' AND (`dependency_id` = NEW.`id`
    OR `dependency_id` IN (SELECT `id` FROM `jobs` WHERE `dependency_failed_by` = NEW.`id` AND `status` = 'failed'));
END;
--> statement-breakpoint
-- A failed or cancelled job back to pending (an operator's retry): the jobs
-- its failure failed or held wait again (still unclaimable: their count
-- never went down), and the edges it failed are waiting again, so the flow
-- goes on when it completes.
CREATE TRIGGER `jobs_dependency_retried` AFTER UPDATE OF `status` ON `jobs`
  WHEN OLD.`status` IN ('failed', 'cancelled') AND NEW.`status` = 'pending'
    AND (EXISTS (SELECT 1 FROM `job_dependencies` WHERE `dependency_id` = NEW.`id` AND `state` = 'failed')
      OR EXISTS (SELECT 1 FROM `jobs` WHERE `dependency_failed_by` = NEW.`id`))
BEGIN
  UPDATE `job_dependencies` SET `state` = 'waiting'
  WHERE `state` = 'failed' AND (`dependency_id` = NEW.`id`
    OR `dependency_id` IN (SELECT `id` FROM `jobs` WHERE `dependency_failed_by` = NEW.`id` AND `status` = 'failed'));
  UPDATE `jobs` SET `status` = 'pending', `failed_at` = NULL, `finished_at` = NULL, `held_at` = NULL, `dependency_failed_by` = NULL,
    `available_at` = CASE WHEN `dependencies_unmet` > 0 THEN 8640000000000000 ELSE max(coalesce(`dependencies_run_at`, 0), NEW.`updated_at`) END,
    `last_event` = 'dependency_retried', `last_event_reason` = 'job ' || NEW.`id` || ' retried', `last_event_actor` = NEW.`last_event_actor`, `updated_at` = NEW.`updated_at`
  WHERE `dependency_failed_by` = NEW.`id` AND `status` IN ('failed', 'pending');
END;
--> statement-breakpoint
-- A deleted job (retention, a queue's delete) takes its own edges, and the
-- settled edges that name it; an edge still waiting for it stays, so its
-- dependent keeps waiting rather than running without it.
CREATE TRIGGER `jobs_dependencies_delete` AFTER DELETE ON `jobs`
  WHEN OLD.`depends_on` IS NOT NULL OR EXISTS (SELECT 1 FROM `job_dependencies` WHERE `dependency_id` = OLD.`id`)
BEGIN
  DELETE FROM `job_dependencies` WHERE `dependent_id` = OLD.`id`;
  DELETE FROM `job_dependencies` WHERE `dependency_id` = OLD.`id` AND `state` <> 'waiting';
END;
