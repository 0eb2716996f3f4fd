CREATE TABLE `operator_audit` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`at` integer NOT NULL,
	`actor` text NOT NULL,
	`role` text NOT NULL,
	`credential` text,
	`source` text NOT NULL,
	`action` text NOT NULL,
	`queue_name` text,
	`job_id` integer,
	`target` text NOT NULL,
	`before` text,
	`after` text,
	`reason` text,
	`client` text,
	CONSTRAINT "operator_audit_source_known" CHECK("operator_audit"."source" IN ('dashboard', 'api'))
);
--> statement-breakpoint
CREATE INDEX `operator_audit_at_idx` ON `operator_audit` (`at`);
--> statement-breakpoint
CREATE INDEX `operator_audit_actor_idx` ON `operator_audit` (`actor`,`id`);
--> statement-breakpoint
CREATE INDEX `operator_audit_action_idx` ON `operator_audit` (`action`,`id`);
--> statement-breakpoint
CREATE INDEX `operator_audit_queue_idx` ON `operator_audit` (`queue_name`,`id`);
--> statement-breakpoint
CREATE TABLE `used_form_nonces` (
	`nonce` text PRIMARY KEY NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `used_form_nonces_expires_idx` ON `used_form_nonces` (`expires_at`);
