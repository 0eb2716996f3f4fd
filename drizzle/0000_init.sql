CREATE TABLE `effects` (
	`job_id` integer NOT NULL,
	`key` text NOT NULL,
	`result` text,
	`attempt` integer NOT NULL,
	`worker_id` text,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`job_id`, `key`)
);
--> statement-breakpoint
CREATE TABLE `events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`job_id` integer NOT NULL,
	`queue_name` text NOT NULL,
	`type` text NOT NULL,
	`from_status` text,
	`to_status` text,
	`reason` text,
	`message` text,
	`actor` text,
	`worker_id` text,
	`attempt` integer,
	`at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `events_job_idx` ON `events` (`job_id`,`id`);--> statement-breakpoint
CREATE INDEX `events_type_at_idx` ON `events` (`type`,`at`);--> statement-breakpoint
CREATE TABLE `jobs` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`queue_name` text NOT NULL,
	`payload` text NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`priority` integer DEFAULT 0 NOT NULL,
	`attempt_count` integer DEFAULT 0 NOT NULL,
	`max_attempts` integer NOT NULL,
	`errored_attempts` integer DEFAULT 0 NOT NULL,
	`lost_attempts` integer DEFAULT 0 NOT NULL,
	`lease_epoch` integer DEFAULT 0 NOT NULL,
	`available_at` integer NOT NULL,
	`started_at` integer,
	`completed_at` integer,
	`failed_at` integer,
	`cancelled_at` integer,
	`finished_at` integer,
	`last_heartbeat_at` integer,
	`lease_ms` integer,
	`lease_expires_at` integer,
	`locked_by` text,
	`lock_token` text,
	`idempotency_key` text,
	`dedup_count` integer DEFAULT 0 NOT NULL,
	`last_error` text,
	`progress` text,
	`checkpoint` text,
	`result` text,
	`timeout_ms` integer,
	`deadline_at` integer,
	`reaper_deferrals` integer DEFAULT 0 NOT NULL,
	`last_event` text DEFAULT 'enqueued' NOT NULL,
	`last_event_reason` text,
	`last_event_actor` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	CONSTRAINT "jobs_status_known" CHECK("jobs"."status" IN ('pending', 'running', 'completed', 'failed', 'cancelled')),
	CONSTRAINT "jobs_token_iff_running" CHECK(("jobs"."status" = 'running') = ("jobs"."lock_token" IS NOT NULL)),
	CONSTRAINT "jobs_lease_iff_running" CHECK(("jobs"."status" = 'running') = ("jobs"."lease_expires_at" IS NOT NULL AND "jobs"."locked_by" IS NOT NULL AND "jobs"."lease_ms" IS NOT NULL)),
	CONSTRAINT "jobs_completed_at_iff_completed" CHECK(("jobs"."status" = 'completed') = ("jobs"."completed_at" IS NOT NULL)),
	CONSTRAINT "jobs_failed_at_iff_failed" CHECK(("jobs"."status" = 'failed') = ("jobs"."failed_at" IS NOT NULL)),
	CONSTRAINT "jobs_cancelled_at_iff_cancelled" CHECK(("jobs"."status" = 'cancelled') = ("jobs"."cancelled_at" IS NOT NULL)),
	CONSTRAINT "jobs_finished_at_iff_finished" CHECK(("jobs"."status" IN ('completed', 'failed', 'cancelled')) = ("jobs"."finished_at" IS NOT NULL)),
	CONSTRAINT "jobs_attempts_in_range" CHECK("jobs"."attempt_count" >= 0 AND "jobs"."max_attempts" >= 1),
	CONSTRAINT "jobs_counts_not_negative" CHECK("jobs"."errored_attempts" >= 0 AND "jobs"."lost_attempts" >= 0),
	CONSTRAINT "jobs_payload_is_json" CHECK(json_valid("jobs"."payload"))
);
--> statement-breakpoint
CREATE INDEX `jobs_claim_idx` ON `jobs` (`queue_name`,"priority" DESC,`available_at`,`id`) WHERE "jobs"."status" = 'pending';--> statement-breakpoint
CREATE INDEX `jobs_lease_expiry_idx` ON `jobs` (`lease_expires_at`) WHERE "jobs"."status" = 'running';--> statement-breakpoint
CREATE INDEX `jobs_deadline_idx` ON `jobs` (`deadline_at`) WHERE "jobs"."status" = 'running' AND "jobs"."deadline_at" IS NOT NULL;--> statement-breakpoint
CREATE INDEX `jobs_running_by_worker_idx` ON `jobs` (`locked_by`) WHERE "jobs"."status" = 'running';--> statement-breakpoint
CREATE INDEX `jobs_finished_idx` ON `jobs` (`finished_at`) WHERE "jobs"."finished_at" IS NOT NULL;--> statement-breakpoint
CREATE INDEX `jobs_queue_status_id_idx` ON `jobs` (`queue_name`,`status`,`id`);--> statement-breakpoint
CREATE INDEX `jobs_status_id_idx` ON `jobs` (`status`,`id`);--> statement-breakpoint
CREATE UNIQUE INDEX `jobs_idempotency_key_idx` ON `jobs` (`queue_name`,`idempotency_key`) WHERE "jobs"."idempotency_key" IS NOT NULL;--> statement-breakpoint
CREATE TABLE `queues` (
	`name` text PRIMARY KEY NOT NULL,
	`lease_ms` integer,
	`heartbeat_ms` integer,
	`grace_ms` integer,
	`max_attempts` integer,
	`max_lost_attempts` integer,
	`backoff_base_ms` integer,
	`backoff_max_ms` integer,
	`retention_ms` integer,
	`paused` integer DEFAULT false NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	CONSTRAINT "queues_positive_durations" CHECK(coalesce("queues"."lease_ms", 1) > 0 AND coalesce("queues"."heartbeat_ms", 1) > 0 AND coalesce("queues"."grace_ms", 0) >= 0)
);
--> statement-breakpoint
CREATE TABLE `workers` (
	`id` text PRIMARY KEY NOT NULL,
	`host` text,
	`pid` integer,
	`version` text,
	`queues` text,
	`running_count` integer DEFAULT 0 NOT NULL,
	`started_at` integer NOT NULL,
	`last_seen_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `workers_last_seen_idx` ON `workers` (`last_seen_at`);