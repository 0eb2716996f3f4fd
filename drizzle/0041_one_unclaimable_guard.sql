-- jobs_held_never_claimed and jobs_waiting_never_claimed were two per-row
-- programs, entered by every claim and completion, for one invariant: a job
-- held for a person, or waiting for dependencies, never starts, whatever
-- statement tries (a claim never picks one: its available_at is far in the
-- future). One trigger keeps it now.
DROP TRIGGER `jobs_held_never_claimed`;
--> statement-breakpoint
DROP TRIGGER `jobs_waiting_never_claimed`;
--> statement-breakpoint
CREATE TRIGGER `jobs_unclaimable_never_running` BEFORE UPDATE OF `status` ON `jobs`
  WHEN NEW.`status` = 'running' AND (OLD.`held_at` IS NOT NULL OR OLD.`dependencies_unmet` > 0)
BEGIN
  SELECT RAISE(IGNORE);
END;
