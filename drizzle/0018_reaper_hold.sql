-- reaper_hold: the hold after a server's gap (it started, or its own reaper
-- did not tick: paused, suspended, stalled), kept in the database so every
-- decision sees it: each server's reaper, `leasehold reap`, the Workers cron,
-- POST /reaper/run, an operator's requeue (API, dashboard, CLI) and the
-- dashboard's verdict. Until hold_until no expired lease is taken (deadlines
-- still are); one row, and the later end wins. Before, the hold lived in the
-- server process, and only that process's own timer obeyed it.
CREATE TABLE `reaper_hold` (
	`id` integer PRIMARY KEY NOT NULL,
	`hold_until` integer NOT NULL,
	`began_at` integer NOT NULL,
	`gap_ms` integer,
	`cause` text NOT NULL,
	CONSTRAINT "reaper_hold_one_row" CHECK("reaper_hold"."id" = 1)
);
