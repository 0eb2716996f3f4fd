/**
 * Body fields validated in two places: by the API's routes and by the
 * dashboard's forms that set the same thing. Declared once here, so a form
 * accepts exactly what the route accepts and refuses it in the same words.
 */
import { ALERT_THRESHOLD_LIMITS, type AlertThresholds } from '../core/alerts.ts';
import { int, nullable, num, obj, optional, word, type Validator } from '../core/validate.ts';
import { RATE_LIMIT_MODES } from '../core/wire.ts';

const DAY = 24 * 3600 * 1000;
/** The largest maxRunning accepted: beyond it a limit means nothing. */
export const MAX_RUNNING_LIMIT = 1_000_000;

/** maxRunning in PATCH /queues/:queue/settings and the dashboard's queue form. */
export const maxRunningField = optional(
  nullable(int({ min: 1, max: MAX_RUNNING_LIMIT, description: "at most this many of the queue's jobs run at once, across all workers and servers; null: no limit" })),
);

/** rateLimit in PATCH /queues/:queue/settings and the dashboard's queue form. */
export const rateLimitField = optional(
  nullable(
    obj(
      {
        max: int({ min: 1, max: MAX_RUNNING_LIMIT, description: 'claims allowed per window' }),
        windowMs: int({ min: 1_000, max: DAY, description: 'the window, in ms (windows start at multiples of it since the epoch)' }),
      },
      "at most `max` claims of the queue's jobs per fixed window of `windowMs`, across all workers and servers; null: no limit",
    ),
  ),
);

/** rateLimitMode in PATCH /queues/:queue/settings and the dashboard's queue form. */
export const rateLimitModeField = optional(
  nullable(
    word(
      RATE_LIMIT_MODES,
      "how rateLimit counts: 'sliding' (the default) allows at most max claims in any window of windowMs; 'fixed' counts per window aligned to multiples of windowMs since the epoch, which lets up to 2 x max start across a window's edge; null: back to 'sliding'",
    ),
  ),
);

/** groupMaxRunning in PATCH /queues/:queue/settings and the dashboard's queue form. */
export const groupMaxRunningField = optional(
  nullable(int({ min: 1, max: MAX_RUNNING_LIMIT, description: "at most this many of the queue's jobs of one group (the job's `group`) run at once, across all workers and servers; null: no limit" })),
);

/** groupRateLimit in PATCH /queues/:queue/settings and the dashboard's queue form. */
export const groupRateLimitField = optional(
  nullable(
    obj(
      {
        max: int({ min: 1, max: MAX_RUNNING_LIMIT, description: 'claims allowed per group in any window' }),
        windowMs: int({ min: 1_000, max: DAY, description: 'the sliding window, in ms' }),
      },
      "at most `max` claims of one group's jobs in any window of `windowMs` (sliding), across all workers and servers; null: no limit",
    ),
  ),
);

/** The body of PUT /queues/:queue/alerts and the dashboard's thresholds form: any of the thresholds, each within its limits. */
export const alertThresholdsBody = obj(
  Object.fromEntries(
    Object.entries(ALERT_THRESHOLD_LIMITS).map(([key, l]) => [
      key,
      optional(l.integer ? int({ min: l.min, max: l.max, description: l.help }) : num({ min: l.min, max: l.max, description: l.help })),
    ]),
  ) as Record<keyof AlertThresholds, Validator<number | undefined>>,
);
