/** The settings and the fixed start time every store conformance test runs with. */
import type { QueueDefaults } from '../../../src/core/config.ts';
import type { ReapRules } from '../../../src/core/reaper.ts';

/** The moment every test starts at: 2030-01-01T00:00:00Z. Nothing in the suite reads a real clock. */
export const T0 = Date.UTC(2030, 0, 1);

export const DEFAULTS: QueueDefaults = {
  leaseMs: 30_000,
  heartbeatMs: 10_000,
  graceMs: 5_000,
  maxAttempts: 3,
  maxLostAttempts: 4,
  backoffBaseMs: 1_000,
  backoffMaxMs: 60_000,
  retentionMs: 24 * 3_600_000,
  timeoutMs: 3_600_000,
};

export const RULES: ReapRules = { workerAliveMs: 15_000, maxReapDeferMs: 20_000 };

/** What requeue and bulk actions take: the defaults and the reaper's rules. */
export const RULES_AND_DEFAULTS = { ...DEFAULTS, ...RULES };
