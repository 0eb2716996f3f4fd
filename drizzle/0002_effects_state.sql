PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_effects` (
	`job_id` integer NOT NULL,
	`key` text NOT NULL,
	`state` text DEFAULT 'started' NOT NULL,
	`result` text,
	`attempt` integer NOT NULL,
	`worker_id` text,
	`created_at` integer NOT NULL,
	`completed_at` integer,
	PRIMARY KEY(`job_id`, `key`),
	CONSTRAINT "effects_state_known" CHECK("state" IN ('started', 'done')),
	CONSTRAINT "effects_completed_at_iff_done" CHECK(("state" = 'done') = ("completed_at" IS NOT NULL))
);
--> statement-breakpoint
-- Rows from before this migration recorded finished effects only.
INSERT INTO `__new_effects`("job_id", "key", "state", "result", "attempt", "worker_id", "created_at", "completed_at") SELECT "job_id", "key", 'done', "result", "attempt", "worker_id", "created_at", "created_at" FROM `effects`;--> statement-breakpoint
DROP TABLE `effects`;--> statement-breakpoint
ALTER TABLE `__new_effects` RENAME TO `effects`;--> statement-breakpoint
PRAGMA foreign_keys=ON;