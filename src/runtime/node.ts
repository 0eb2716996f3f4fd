/**
 * The Node entry: opens the database (embedded libSQL file by default),
 * applies migrations, serves the app, and runs the reaper on a timer.
 */
import { createEngine } from '../engine/engine.ts';
import { createStore } from '../db/store/create-store.ts';
import { serve } from '@hono/node-server';
import { fileURLToPath } from 'node:url';
import { createApp } from '../app.ts';
import { databaseClock, type Clock } from '../core/clock.ts';
import type { Config } from '../core/config.ts';
import { migrateLibsql, openLibsql, type OpenedDb } from './libsql.ts';
import { limitedCreateServer } from './node-http.ts';
import { publicAssets } from './public-assets.ts';
import { startReaper, summarize } from './reaper-timer.ts';
import { testClockStepFromEnv } from './test-clock-step.ts';
import { listening, serverUrl } from './server-lifecycle.ts';
import { redactUrl, redactUrls } from '../core/redact.ts';
import { rootMessage, StartupError } from '../core/startup-error.ts';
import { storageFault } from '../db/storage-fault.ts';
import { requireSqliteVersion, SqliteTooOld } from '../db/sqlite-version.ts';
import type { Logger } from '../core/log.ts';
import { serverLogger } from './log.ts';

export { summarize, serverLogger };

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../drizzle', import.meta.url));

export const PUBLIC_DIR = fileURLToPath(new URL('../../public', import.meta.url));

/**
 * Opens and migrates the database. Tools that only look (doctor, backup) pass
 * `readOnly: true`: no migration, an embedded file opened read-only (its
 * journal mode untouched), and one read of the SQLite version so that a
 * server that cannot be reached fails here. Below the oldest SQLite leasehold
 * runs on (src/db/sqlite-version.ts) it refuses, in one line naming both
 * versions. Failing to open or reach it is one StartupError line naming the
 * (redacted) URL and the real cause, not a driver's wrapped query error.
 */
export async function openDatabase(config: Config, options: { readOnly?: boolean } = {}): Promise<OpenedDb> {
  let opened: OpenedDb | undefined;
  try {
    const readOnly = options.readOnly === true;
    opened = await openLibsql(config.databaseUrl, config.databaseAuthToken, { synchronous: config.synchronous, busyTimeoutMs: config.busyTimeoutMs, readOnly });
    // Read-only tools check the version too: its read also proves the server answers.
    if (readOnly) await requireSqliteVersion(opened.db);
    else await migrateLibsql(opened, MIGRATIONS_DIR);
    return opened;
  } catch (err) {
    opened?.close();
    if (err instanceof SqliteTooOld) throw new StartupError(`leasehold: cannot use the database at ${redactUrl(config.databaseUrl)}: ${err.message}`, { cause: err });
    const verb = config.databaseUrl.startsWith('file:') ? 'open' : 'reach';
    // A SQLite fault (not a database, damaged, locked) is said in words, not as a driver code.
    const why = storageFault(err)?.message ?? rootMessage(err);
    throw new StartupError(`leasehold: cannot ${verb} the database at ${redactUrl(config.databaseUrl)}: ${redactUrls(why)}`, { cause: err });
  }
}

export interface RunningServer {
  url: string;
  close(): Promise<void>;
}

export interface ServeOptions {
  clock?: Clock;
  /** Where log records go. Default: stdout (serverLogger), at LEASEHOLD_LOG_LEVEL. */
  log?: Logger;
  /**
   * Run the reaper in-process (default true), with its gap watch: this
   * server's start and its own pauses are written to the database as the
   * reaper's hold, which every reaper and operator's requeue obeys. Off (tests
   * that run passes themselves): no hold is written for this server.
   */
  reaper?: boolean;
}

/**
 * Binds the port first, so a port in use fails (StartupError) before any
 * migration runs; then opens and migrates the database and starts serving.
 * Requests that arrive in between are answered 503.
 */
export async function startServer(config: Config, options: ServeOptions = {}): Promise<RunningServer> {
  const log = options.log ?? serverLogger(config);
  // The chaos run's clock steps (test only: src/runtime/test-clock-step.ts).
  const clock = options.clock ?? testClockStepFromEnv(process.env, log) ?? databaseClock;
  let app: { fetch(request: Request, env?: unknown): Response | Promise<Response> } | undefined;
  const starting = () => Response.json({ error: { code: 'starting', message: 'leasehold is starting (applying migrations); try again in a moment' } }, { status: 503, headers: { 'retry-after': '1' } });

  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve(
      { fetch: (request: Request, env: unknown) => (app ? app.fetch(request, env) : starting()), hostname: config.host, port: config.port, createServer: limitedCreateServer(config, log) },
      () => resolve(s),
    );
    s.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE') reject(new StartupError(`leasehold: cannot listen on ${config.host}:${config.port}: the port is already in use (choose another with LEASEHOLD_PORT or --port)`));
      else if (err.code === 'EACCES') reject(new StartupError(`leasehold: cannot listen on ${config.host}:${config.port}: permission denied (ports below 1024 need privileges)`));
      else reject(err);
    });
  });
  const stopServer = () => stopAcceptingAndDrain(server as unknown as import('node:http').Server);
  let opened: OpenedDb;
  try {
    opened = await openDatabase(config);
  } catch (err) {
    await stopServer();
    throw err;
  }
  // Before the app answers anyone: the start is noted in the database as the
  // reaper's hold, so no reaper and no operator's requeue takes a lease that
  // ran out while workers could not reach this server.
  // One engine for the app and the reaper: what either makes claimable wakes the waiting claims.
  const engine = createEngine({ store: createStore(opened.db), config, clock, log });
  const reaper = options.reaper !== false ? await startReaper(engine, log) : undefined;
  app = createApp({ engine, assets: publicAssets(PUBLIC_DIR) });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  return listening({ url: serverUrl(config.host, port), opened, engine, config, log, reaper, stopServer });
}

/** After this long, connections still open at shutdown are cut. */
export const SHUTDOWN_GRACE_MS = 5_000;

/**
 * Stops listening and resolves once every connection has ended. Node's
 * close() alone waits for kept-alive connections, and a worker that polls
 * keeps its connection busy: a server with one idle worker took 7.5 s to
 * stop, and with the SDK's node:http keep-alive it did not stop at all.
 * So idle connections close now, every answer from here on says
 * `Connection: close` (the worker's next call then finds the port closed
 * and backs off), and whatever is still open after SHUTDOWN_GRACE_MS is cut.
 */
function stopAcceptingAndDrain(server: import('node:http').Server): Promise<void> {
  return new Promise<void>((resolve) => {
    // Not on an answer already written (an oversized body is refused before the app, node-http.ts).
    server.on('request', (_req, res) => {
      if (!res.headersSent) res.setHeader('connection', 'close');
    });
    server.close(() => {
      clearTimeout(cut);
      resolve();
    });
    server.closeIdleConnections();
    const cut = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
    cut.unref();
  });
}
