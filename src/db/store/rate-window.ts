/**
 * Sliding-window rate limits: the starts of the last `windowMs`, read from
 * rate_starts (drizzle/0030), which the claim's tally (the queue's own
 * limit, group '') and a trigger per grouped claim (each group's limit)
 * write in the claim's transaction. The promise: a claim at `now` takes at
 * most max minus the starts after now - windowMs, so no window of windowMs
 * ever holds more than max starts, wherever it begins.
 */
import { sql, type SQL } from 'drizzle-orm';

/**
 * The starts counted in the sliding window that ends now: the rate_starts
 * rows of the last `windowMs` (group '' for the queue's own limit). At most
 * one row per claim statement in the window, and older rows are deleted as
 * claims come (drizzle/0030), so this sums a bounded set.
 */
export const slidingRateUsedSql = (queue: string | SQL, group: string | SQL, windowMs: SQL, now: SQL) =>
  sql`(SELECT coalesce(sum(s.jobs), 0) FROM rate_starts s WHERE s.queue_name = ${queue} AND s.group_key = ${group} AND s.at > ${now} - ${windowMs})`;

