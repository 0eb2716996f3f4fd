/**
 * What the app is built from: every route, dashboard page and maintenance
 * call takes these, so a runtime (Node, Deno, Bun, Workers) or a test
 * decides the engine (over its store), settings, clock and log in one
 * place: createApp({ engine }).
 */
import type { Clock } from '../core/clock.ts';
import type { Config } from '../core/config.ts';
import type { Logger } from '../core/log.ts';
import type { JobStore } from '../db/store/port.ts';
import type { Engine } from '../engine/engine.ts';
import type { AuthThrottle } from './throttle.ts';

export interface AppDeps {
  /**
   * What leasehold does (src/engine/engine.ts): enqueue, claim and its wait,
   * the owned writes, operator actions, waits on jobs, the maintenance pass.
   * The runtime builds one and hands it to the app and the in-process
   * transport alike, so each wakes the other's waiting claims.
   */
  engine: Engine;
  /** The engine's store (src/db/store/port.ts): what routes and pages read through. */
  store: JobStore;
  /** The engine's settings, clock and log. */
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
}

/** What createApp takes: the engine, and the app's own parts (assets, the auth throttle). */
export type AppInput = Pick<AppDeps, 'engine' | 'assets' | 'authThrottle'>;
