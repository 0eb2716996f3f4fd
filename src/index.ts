/**
 * leasehold: the server side, for embedding leasehold in your own process.
 * `openLeasehold` is the library API (a database, enqueue, in-process
 * workers, the reaper); `createApp` is the Hono app the `leasehold serve`
 * command serves. Workers elsewhere import `leasehold/worker`, producers
 * `leasehold/client`: neither carries any of this.
 */
export { openLeasehold, type EmbeddedEnqueued, type EmbeddedEnqueueItem, type EmbeddedEnqueueOptions, type Leasehold, type OpenOptions } from './embedded/leasehold.ts';
export { dbTransport } from './embedded/db-transport.ts';
export { createEngine, type Engine, type EngineDeps } from './engine/engine.ts';
export { createStore } from './db/store/create-store.ts';
export { createApp, VERSION, type AppDeps, type AppInput } from './app.ts';
export { runMaintenancePass, type MaintenancePassReport } from './maintenance/pass.ts';
/**
 * @deprecated Renamed runMaintenancePass (it runs the whole maintenance pass:
 * the reaper, schedules, retention, samples and alerts); kept so existing
 * imports work. Same function.
 */
export { runMaintenancePass as reapOnce, type MaintenancePassReport as ReapReport } from './maintenance/pass.ts';
export { databaseClock, manualClock, DB_CLOCK, type Clock, type Now } from './core/clock.ts';
export { checkConfig, ConfigError, defaultConfig, loadConfig, type Config, type QueueDefaults } from './core/config.ts';
export { LeaseholdError } from './core/errors.ts';
export { createLogger, silentLogger, type LogFields, type Logger, type LogLevel, type LogRecord, type LogSink } from './core/log.ts';
export { streamLogger, serverLogger, type LogFormat } from './runtime/log.ts';
export type { Job, JobStatus, ClaimedJobWire } from './core/wire.ts';
export type { Db } from './db/db.ts';
