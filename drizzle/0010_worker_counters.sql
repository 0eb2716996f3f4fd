ALTER TABLE `workers` ADD `event_loop_blocks` integer;--> statement-breakpoint
ALTER TABLE `workers` ADD `longest_event_loop_block_ms` integer;--> statement-breakpoint
ALTER TABLE `workers` ADD `heartbeat_failures` integer;--> statement-breakpoint
ALTER TABLE `workers` ADD `leases_lost` integer;
