-- maintenance_state: the last completed maintenance pass, one row ('pass'),
-- written by the pass itself as its last statement. Alerts are evaluated
-- inside the pass, so a reaper that stopped (a cron trigger removed, a dead
-- timer) could not page about itself; with the time in the database, /healthz,
-- /metrics (leasehold_maintenance_last_pass_timestamp_seconds) and the
-- dashboard on any server or isolate can say the pass is late. No row: no
-- pass completed since this migration.
CREATE TABLE `maintenance_state` (
	`name` text PRIMARY KEY NOT NULL,
	`last_started_at` integer NOT NULL,
	`last_completed_at` integer NOT NULL,
	`passes` integer NOT NULL,
	CONSTRAINT "maintenance_state_times" CHECK("maintenance_state"."last_completed_at" >= "maintenance_state"."last_started_at" AND "maintenance_state"."passes" >= 1)
);
