-- Canary requeues: a bulk requeue of one queue's running jobs taken in
-- steps, each watched before the next (src/maintenance/canary.ts).
-- canary_runs holds each run's options, thresholds, step and state;
-- canary_jobs the jobs it froze at its start, in order, with the step that
-- took each and what the requeue did; canary_events every decision of the
-- run with its reason.
CREATE TABLE `canary_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`run_id` integer NOT NULL,
	`at` integer NOT NULL,
	`type` text NOT NULL,
	`step` integer NOT NULL,
	`reason` text,
	`message` text
);
--> statement-breakpoint
CREATE INDEX `canary_events_run_idx` ON `canary_events` (`run_id`,`id`);--> statement-breakpoint
CREATE TABLE `canary_jobs` (
	`run_id` integer NOT NULL,
	`position` integer NOT NULL,
	`job_id` integer NOT NULL,
	`step` integer,
	`outcome` text,
	`skip_why` text,
	PRIMARY KEY(`run_id`, `position`),
	CONSTRAINT "canary_jobs_outcome" CHECK("canary_jobs"."outcome" IS NULL OR "canary_jobs"."outcome" IN ('requeued', 'failed', 'skipped'))
);
--> statement-breakpoint
CREATE INDEX `canary_jobs_step_idx` ON `canary_jobs` (`run_id`,`step`);--> statement-breakpoint
CREATE TABLE `canary_runs` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`queue_name` text NOT NULL,
	`state` text NOT NULL,
	`force` integer NOT NULL,
	`first_step` integer NOT NULL,
	`growth` integer NOT NULL,
	`window_ms` integer NOT NULL,
	`max_failures` integer NOT NULL,
	`max_stale_writes` integer NOT NULL,
	`max_duplicates` integer NOT NULL,
	`max_heartbeat_lag_ms` integer NOT NULL,
	`selected` integer NOT NULL,
	`step` integer DEFAULT 0 NOT NULL,
	`step_claim` text,
	`step_started_at` integer,
	`step_after_event` integer,
	`requeued` integer DEFAULT 0 NOT NULL,
	`failed_for_good` integer DEFAULT 0 NOT NULL,
	`skipped` integer DEFAULT 0 NOT NULL,
	`stop_reason` text,
	`stop_why` text,
	`actor` text NOT NULL,
	`started_by` text NOT NULL,
	`reason` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`finished_at` integer,
	CONSTRAINT "canary_runs_state" CHECK("canary_runs"."state" IN ('watching', 'done', 'stopped', 'cancelled')),
	CONSTRAINT "canary_runs_steps" CHECK("canary_runs"."first_step" >= 1 AND "canary_runs"."growth" >= 1 AND "canary_runs"."window_ms" >= 0 AND "canary_runs"."step" >= 0),
	CONSTRAINT "canary_runs_finished" CHECK(("canary_runs"."finished_at" IS NULL) = ("canary_runs"."state" = 'watching'))
);
--> statement-breakpoint
CREATE INDEX `canary_runs_active_idx` ON `canary_runs` (`id`) WHERE "canary_runs"."state" = 'watching';
