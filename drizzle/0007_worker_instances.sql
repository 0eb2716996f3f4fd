ALTER TABLE `jobs` ADD `locked_by_instance` text;--> statement-breakpoint
ALTER TABLE `workers` ADD `instance_id` text;--> statement-breakpoint
ALTER TABLE `workers` ADD `restarts` integer DEFAULT 0 NOT NULL;
