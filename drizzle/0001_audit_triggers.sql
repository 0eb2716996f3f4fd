-- Audit events are written by the database, inside the statement that made the
-- transition, so an event exists exactly when its transition happened.
CREATE TRIGGER `jobs_audit_enqueued` AFTER INSERT ON `jobs`
BEGIN
  INSERT INTO `events` (`job_id`, `queue_name`, `type`, `to_status`, `actor`, `attempt`, `at`)
  VALUES (NEW.`id`, NEW.`queue_name`, 'enqueued', NEW.`status`, NEW.`last_event_actor`, NEW.`attempt_count`, NEW.`created_at`);
END;
--> statement-breakpoint
-- Every transition sets `last_event` (an UPDATE OF trigger fires whenever the
-- column is assigned, even to the same value); heartbeats do not, so they
-- leave no event.
CREATE TRIGGER `jobs_audit_transition` AFTER UPDATE OF `last_event` ON `jobs`
BEGIN
  INSERT INTO `events` (`job_id`, `queue_name`, `type`, `from_status`, `to_status`, `reason`, `message`, `actor`, `worker_id`, `attempt`, `at`)
  VALUES (
    NEW.`id`, NEW.`queue_name`, NEW.`last_event`, OLD.`status`, NEW.`status`, NEW.`last_event_reason`,
    CASE WHEN NEW.`last_error` IS NOT OLD.`last_error` THEN NEW.`last_error` END,
    NEW.`last_event_actor`, coalesce(NEW.`locked_by`, OLD.`locked_by`), NEW.`attempt_count`, NEW.`updated_at`
  );
END;
