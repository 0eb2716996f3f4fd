/**
 * leasehold: the server-side pieces for embedding leasehold in your own
 * process. Workers import `leasehold/worker` instead.
 */
export { createApp, VERSION, type AppDeps } from './app.js';
export { reapOnce, type ReapReport } from './db/reap-once.js';
export { databaseClock, manualClock, DB_CLOCK, type Clock, type Now } from './core/clock.js';
export { checkConfig, ConfigError, defaultConfig, loadConfig, type Config, type QueueDefaults } from './core/config.js';
export { LeaseholdError } from './core/errors.js';
export type { Db } from './db/db.js';
