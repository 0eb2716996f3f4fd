-- Queue-wide concurrency: at most max_running jobs of the queue run at once,
-- across every worker and server (the claim's LIMIT counts them). NULL: no limit.
ALTER TABLE `queues` ADD `max_running` integer;
