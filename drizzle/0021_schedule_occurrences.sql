-- A schedule's occurrence job is marked by its schedule and occurrence time,
-- and deduplicated on them (a unique index), no longer by the idempotency key
-- schedule:<name>:<time>: that key was predictable and shared the enqueue key
-- space, so a client could enqueue it first (say ten years out) and the
-- schedule's pass got the client's job back as "its" occurrence. Only the
-- schedule's own insert writes these columns; the idempotency key belongs to
-- the clients that enqueue.
ALTER TABLE `jobs` ADD `schedule_name` text;
--> statement-breakpoint
ALTER TABLE `jobs` ADD `occurrence_at` integer CHECK ((`schedule_name` IS NULL) = (`occurrence_at` IS NULL));
--> statement-breakpoint
CREATE UNIQUE INDEX `jobs_schedule_occurrence_idx` ON `jobs` (`schedule_name`, `occurrence_at`) WHERE `schedule_name` IS NOT NULL;
--> statement-breakpoint
-- Occurrence jobs an earlier version made (enqueued by the schedule itself,
-- under its own key) become marked ones, so a pass that finds the same
-- occurrence due again (one whose next run had not moved on yet) gets that
-- job back instead of making a second. A job a client enqueued under such a
-- key (enqueued_by is the client, not 'schedule:<name>') stays an ordinary
-- job. OR IGNORE: should two old jobs name one occurrence, the first keeps it.
-- No trigger watches these columns.
UPDATE OR IGNORE `jobs` SET
    `schedule_name` = substr(`enqueued_by`, 10),
    `occurrence_at` = CAST(round((julianday(substr(`idempotency_key`, -24)) - 2440587.5) * 86400000) AS INTEGER),
    `idempotency_key` = NULL
  WHERE `enqueued_by` LIKE 'schedule:%' AND `idempotency_key` = `enqueued_by` || ':' || substr(`idempotency_key`, -24)
    AND julianday(substr(`idempotency_key`, -24)) IS NOT NULL;
