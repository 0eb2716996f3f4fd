ALTER TABLE `jobs` ADD `claim_id` text;--> statement-breakpoint
ALTER TABLE `jobs` ADD `finished_token` text;--> statement-breakpoint
ALTER TABLE `jobs` ADD `finished_write` text;--> statement-breakpoint
-- An answer lost on its way to the worker must not cost a stale write, an
-- orphan or a second run. claim_id: the id a claim request carries (chosen
-- by the worker); the same request sent again finds the jobs still running
-- under it here, and gets them back instead of claiming more. Only running
-- jobs with an id are in the index: a claim's lookup reads its own jobs, and
-- old clients (no id) add nothing to it. finished_token and finished_write:
-- the claim whose owner ended the attempt, and what it wrote, until the next
-- claim, so the same completion, failure or release sent again is answered
-- with the stored outcome. Rows from before stay NULL: nothing to repeat.
CREATE INDEX `jobs_claim_id_idx` ON `jobs` (`claim_id`, `locked_by`) WHERE `status` = 'running' AND `claim_id` IS NOT NULL;
