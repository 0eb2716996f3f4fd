-- Per-row triggers every claim and completion entered, fewer:
-- - jobs_held_never_claimed and jobs_waiting_never_claimed were two programs
--   for one invariant: a job held for a person, or waiting for dependencies,
--   never starts, whatever statement tries (a claim never picks one: its
--   available_at is far in the future). One trigger keeps it now.
-- - jobs_heartbeat_interval counted each renewal's interval into
--   histogram_buckets, one upsert per renewed job, and a claim entered it as
--   it sets last_heartbeat_at. Heartbeats, checkpoints and a claim sent again
--   now count their batch once per bucket (src/db/store/attempt-stats.ts). A
--   lease rebased after the clock stepped back no longer counts a 0 ms interval.
DROP TRIGGER `jobs_held_never_claimed`;
--> statement-breakpoint
DROP TRIGGER `jobs_waiting_never_claimed`;
--> statement-breakpoint
CREATE TRIGGER `jobs_unclaimable_never_running` BEFORE UPDATE OF `status` ON `jobs`
  WHEN NEW.`status` = 'running' AND (OLD.`held_at` IS NOT NULL OR OLD.`dependencies_unmet` > 0)
BEGIN
  SELECT RAISE(IGNORE);
END;
--> statement-breakpoint
DROP TRIGGER `jobs_heartbeat_interval`;
