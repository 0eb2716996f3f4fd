/**
 * leasehold: the server-side pieces for embedding leasehold in your own
 * process. Workers import `leasehold/worker` instead.
 */
export { createApp, VERSION, type AppDeps } from './app.ts';
export { reapOnce, type ReapReport } from './db/reap-once.ts';
export { databaseClock, manualClock, DB_CLOCK, type Clock, type Now } from './core/clock.ts';
export { checkConfig, ConfigError, defaultConfig, loadConfig, type Config, type QueueDefaults } from './core/config.ts';
export { LeaseholdError } from './core/errors.ts';
export type { Db } from './db/db.ts';
