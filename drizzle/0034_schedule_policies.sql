-- Schedules with policies. A schedule says what a pass does with
-- occurrences it finds missed (catch_up: 'latest', 'all' within
-- catch_up_window_ms, 'none') and with an occurrence due while the
-- previous one's job is still pending or running (overlap: 'allow',
-- 'skip'); the API checks both (a CHECK would rebuild the table).
-- Every skip is a schedule_skips row (a run of missed occurrences is one
-- row with its count) and counted on the schedule by why, for /metrics and
-- the schedules page. jobs_schedule_active_idx answers the overlap
-- question (is an occurrence of this schedule pending or running?) without
-- reading the schedule's finished jobs.
CREATE TABLE `schedule_skips` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`schedule_name` text NOT NULL,
	`at` integer NOT NULL,
	`reason` text NOT NULL,
	`count` integer NOT NULL,
	`count_capped` integer DEFAULT false NOT NULL,
	`first_occurrence_at` integer NOT NULL,
	`last_occurrence_at` integer NOT NULL,
	CONSTRAINT "schedule_skips_reason_known" CHECK("schedule_skips"."reason" IN ('missed', 'overlap'))
);
--> statement-breakpoint
CREATE INDEX `schedule_skips_schedule_idx` ON `schedule_skips` (`schedule_name`,`id`);--> statement-breakpoint
ALTER TABLE `schedules` ADD `catch_up` text DEFAULT 'latest' NOT NULL;--> statement-breakpoint
ALTER TABLE `schedules` ADD `catch_up_window_ms` integer;--> statement-breakpoint
ALTER TABLE `schedules` ADD `overlap` text DEFAULT 'allow' NOT NULL;--> statement-breakpoint
ALTER TABLE `schedules` ADD `skipped_missed` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `schedules` ADD `skipped_overlap` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `jobs_schedule_active_idx` ON `jobs` (`schedule_name`) WHERE "jobs"."schedule_name" IS NOT NULL AND "jobs"."status" IN ('pending', 'running');