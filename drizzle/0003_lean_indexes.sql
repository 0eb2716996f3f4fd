DROP INDEX `events_type_at_idx`;--> statement-breakpoint
CREATE INDEX `events_rare_type_at_idx` ON `events` (`type`,`at`) WHERE "events"."type" NOT IN ('enqueued', 'claimed', 'completed');--> statement-breakpoint
DROP INDEX `jobs_running_by_worker_idx`;