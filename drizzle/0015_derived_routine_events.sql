ALTER TABLE `jobs` ADD `enqueued_by` text;--> statement-breakpoint
-- A clean job's routine transitions no longer write their own event rows
-- (issue 15): `enqueued` and `completed` are read from the job row
-- (created_at and enqueued_by; completed_at, result and the last claim) and
-- shown in the timeline as derived entries. Every claim keeps its event, and
-- so does every exceptional one (refusals, reaps, deferrals, deadlines,
-- operator actions, failures, dedups). Events already stored stay: the
-- timeline derives an entry only where no stored one exists.
DROP TRIGGER IF EXISTS `jobs_audit_enqueued`;
--> statement-breakpoint
-- The durable counters those events fed (events_count: 'enqueued';
-- events_count_finished: 'completed', and the status of a row inserted
-- finished, as an import does) are counted from the job row instead, inside
-- the same statement.
CREATE TRIGGER `jobs_count_enqueued` AFTER INSERT ON `jobs`
BEGIN
  INSERT INTO `counters` (`queue_name`, `name`, `label`, `value`) VALUES (NEW.`queue_name`, 'enqueued', '', 1)
    ON CONFLICT (`queue_name`, `name`, `label`) DO UPDATE SET `value` = `value` + 1;
END;
--> statement-breakpoint
-- A row inserted finished (never by the API): its WHEN keeps the enqueue path to one upsert.
CREATE TRIGGER `jobs_count_inserted_finished` AFTER INSERT ON `jobs`
  WHEN NEW.`status` IN ('completed', 'failed', 'cancelled')
BEGIN
  INSERT INTO `counters` (`queue_name`, `name`, `label`, `value`) VALUES (NEW.`queue_name`, NEW.`status`, '', 1)
    ON CONFLICT (`queue_name`, `name`, `label`) DO UPDATE SET `value` = `value` + 1;
END;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `jobs_audit_transition`;
--> statement-breakpoint
-- As in 0001, for every transition but a completion.
CREATE TRIGGER `jobs_audit_transition` AFTER UPDATE OF `last_event` ON `jobs`
  WHEN NEW.`last_event` <> 'completed'
BEGIN
  INSERT INTO `events` (`job_id`, `queue_name`, `type`, `from_status`, `to_status`, `reason`, `message`, `actor`, `worker_id`, `attempt`, `at`)
  VALUES (
    NEW.`id`, NEW.`queue_name`, NEW.`last_event`, OLD.`status`, NEW.`status`, NEW.`last_event_reason`,
    CASE WHEN NEW.`last_error` IS NOT OLD.`last_error` THEN NEW.`last_error` END,
    NEW.`last_event_actor`, coalesce(NEW.`locked_by`, OLD.`locked_by`), NEW.`attempt_count`, NEW.`updated_at`
  );
END;
--> statement-breakpoint
CREATE TRIGGER `jobs_count_completed` AFTER UPDATE OF `last_event` ON `jobs`
  WHEN NEW.`last_event` = 'completed' AND OLD.`status` IS NOT NEW.`status`
BEGIN
  INSERT INTO `counters` (`queue_name`, `name`, `label`, `value`) VALUES (NEW.`queue_name`, 'completed', '', 1)
    ON CONFLICT (`queue_name`, `name`, `label`) DO UPDATE SET `value` = `value` + 1;
END;
--> statement-breakpoint
-- Unchanged, created again only to keep the order triggers fire in: SQLite
-- fires the newest first, and a duplicate claim's event has always come
-- before the claim's own (0006 was newer than 0001's audit trigger).
DROP TRIGGER IF EXISTS `jobs_duplicate_claim`;
--> statement-breakpoint
CREATE TRIGGER `jobs_duplicate_claim` AFTER UPDATE OF `status` ON `jobs`
  WHEN NEW.`status` = 'running' AND OLD.`status` <> 'running' AND OLD.`taken_back` IS NOT NULL
BEGIN
  INSERT INTO `events` (`job_id`, `queue_name`, `type`, `from_status`, `to_status`, `reason`, `message`, `actor`, `worker_id`, `attempt`, `at`)
  VALUES (
    NEW.`id`, NEW.`queue_name`, 'duplicate_execution', OLD.`status`, NEW.`status`, OLD.`taken_back`,
    'the previous claim was taken back (' || OLD.`taken_back` || ') while its worker may still have been running it',
    NEW.`last_event_actor`, NEW.`locked_by`, NEW.`attempt_count`, NEW.`updated_at`
  );
  UPDATE `jobs` SET `taken_back` = NULL WHERE `id` = NEW.`id`;
END;
