/** A queue as the API answers it: counts, health, settings and alert thresholds (GET /queues, GET /queues/:queue, the settings calls). */
import { effectiveAlertThresholds } from '../core/alerts.ts';
import { iso } from '../core/job-record.ts';
import type { QueueHealth } from '../db/store/port.ts';
import { DEFAULT_MAX_SNOOZES } from '../core/snooze.ts';

/** A queue as the API answers it (its schema: src/api/view-schemas.ts). */
export type QueueView = ReturnType<typeof queueView>;

export function queueView(q: QueueHealth) {
  return {
    name: q.name,
    paused: q.paused,
    counts: q.counts,
    ready: q.ready,
    expiredLeases: q.expiredLeases,
    oldestRunningStartedAt: iso(q.oldestRunningStartedAt),
    oldestReadyAvailableAt: iso(q.oldestReadyAvailableAt),
    held: q.held,
    settings: {
      ...q.settings, stallMs: q.stallMs, maxRunning: q.maxRunning, rateLimit: q.rateLimit, onLost: q.onLost ?? 'retry',
      rateLimitMode: q.rateLimitMode, groupMaxRunning: q.groupMaxRunning, groupRateLimit: q.groupRateLimit,
      deadLetterQueue: q.deadLetterQueue, maxSnoozes: q.maxSnoozes ?? DEFAULT_MAX_SNOOZES,
    },
    overrides: {
      ...(q.deadLetterQueue === null ? {} : { deadLetterQueue: q.deadLetterQueue }),
      ...(q.maxSnoozes === null ? {} : { maxSnoozes: q.maxSnoozes }),
      ...(q.onLost === null ? {} : { onLost: q.onLost }),
      ...q.overrides,
      ...(q.stallMs === null ? {} : { stallMs: q.stallMs }),
      ...(q.maxRunning === null ? {} : { maxRunning: q.maxRunning }),
      ...(q.rateLimit === null ? {} : { rateLimit: q.rateLimit }),
      ...(q.rateLimitMode === 'sliding' ? {} : { rateLimitMode: q.rateLimitMode }),
      ...(q.groupMaxRunning === null ? {} : { groupMaxRunning: q.groupMaxRunning }),
      ...(q.groupRateLimit === null ? {} : { groupRateLimit: q.groupRateLimit }),
    },
    // The rate limit's current window: claims used, and when the next window opens while they are spent.
    rateUsed: q.rateUsed,
    rateLimitedUntil: iso(q.rateLimitedUntil),
    alertThresholds: effectiveAlertThresholds(q.alertOverrides),
    alertOverrides: q.alertOverrides,
    indexedFields: q.indexedFields,
  };
}
