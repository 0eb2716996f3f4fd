-- A snooze is the owner ending its attempt ("not now"), as a release is: the
-- worker stopped running the job, so the claim after it is not a possible
-- duplicate execution. jobs_taken_back (drizzle/0006) predates snooze
-- (drizzle/0032) and marked it as a take-back, so every claim after a snooze
-- wrote a duplicate_execution event, counted it and could fire the alert.
DROP TRIGGER `jobs_taken_back`;
--> statement-breakpoint
CREATE TRIGGER `jobs_taken_back` AFTER UPDATE OF `status` ON `jobs`
  WHEN OLD.`status` = 'running' AND NEW.`status` <> 'running'
    AND NEW.`last_event` NOT IN ('completed', 'failed', 'retry_scheduled', 'released', 'snoozed')
BEGIN
  UPDATE `jobs` SET `taken_back` = NEW.`last_event` || coalesce(': ' || NEW.`last_event_reason`, '') WHERE `id` = NEW.`id`;
END;
--> statement-breakpoint
-- Snoozed jobs not claimed since lose the mark, so their next claim is not
-- reported either. (Duplicates already counted stay counted: the counters
-- are durable, and the events say "snoozed" as the take-back's reason.)
UPDATE `jobs` SET `taken_back` = NULL WHERE `taken_back` LIKE 'snoozed%';
