-- Schedules by the queue they enqueue to: the queue cap counts a queue that a
-- schedule targets as in use (src/db/store/queue-use.ts), and an operator's
-- queue delete refuses while one does; both ask per queue, without reading
-- every schedule.
CREATE INDEX `schedules_queue_idx` ON `schedules` (`queue_name`);
