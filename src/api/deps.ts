/**
 * What the app is built from: every route, dashboard page and maintenance
 * call takes these, so a runtime (Node, Deno, Bun, Workers) or a test
 * decides the database, settings, clock and log in one place: createApp(deps).
 */
import type { Clock } from '../core/clock.ts';
import type { Config } from '../core/config.ts';
import type { Logger } from '../core/log.ts';
import type { Db } from '../db/db.ts';
import type { JobStore } from '../db/store/port.ts';
import type { AuthThrottle } from './throttle.ts';

export interface AppDeps {
  db: Db;
  /**
   * The store port over `db` (src/db/store/port.ts): what routes, pages and
   * the worker protocol call. createApp builds it from `db` when not given.
   */
  store: JobStore;
  config: Config;
  clock: Clock;
  /**
   * Where the app's log records go: one per request (src/api/request-log.ts),
   * unexpected errors with their stack (never sent to clients), refusals.
   */
  log: Logger;
  /**
   * Static files from public/ (the dashboard's CSS and htmx), for runtimes
   * that do not serve them themselves: the response for a request path, or
   * undefined when there is no such file. The Node entry provides it.
   */
  assets?: (path: string) => Promise<Response | undefined>;
  /** Backs off clients that present wrong tokens; createApp makes one per app. */
  authThrottle?: AuthThrottle;
  /**
   * Single-job enqueue requests read in one event-loop turn share one
   * transaction (src/core/tick-batches.ts). Default true; the Workers entry
   * turns it off, because there one request cannot finish another's I/O.
   */
  batchEnqueues?: boolean;
  /**
   * A request cannot finish another's I/O or keep its timers (Workers): a
   * client waiting on jobs (POST /jobs/wait) reads for itself, in its own
   * request, instead of sharing the server's one read. Default false.
   */
  isolatedRequests?: boolean;
}

/** What createApp takes: AppDeps, the store optional (built from `db`). */
export type AppInput = Omit<AppDeps, 'store'> & { store?: JobStore | undefined };
