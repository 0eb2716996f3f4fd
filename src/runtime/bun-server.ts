/**
 * The Bun runtime: the same exports as src/runtime/node.ts (openDatabase,
 * startServer, summarize), with two differences:
 * - the server is Bun.serve instead of @hono/node-server;
 * - the migrations are embedded at build time (Bun macros, see
 *   embedded-migrations.ts) and applied through the same drizzle migrator
 *   (migrateLibsql), so the `__drizzle_migrations` bookkeeping is the same as
 *   Node's and a database migrated by either one is up to date for the other.
 *
 * The CLI's imports of ../runtime/node.ts come here under Bun (see bun.ts).
 * This module is not the entry on purpose: Bun's bundler compiles a dynamic
 * import of the entry module itself into a call that throws
 * (`init_bun().then` on an init that returns nothing), which broke
 * `leasehold reap`, `stats` and `enqueue` in the binary.
 */
import { createEngine } from '../engine/engine.ts';
import { createStore } from '../db/store/create-store.ts';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp } from '../app.ts';
import { databaseClock } from '../core/clock.ts';
import type { Config } from '../core/config.ts';
import { redactUrl } from '../core/redact.ts';
import { StartupError } from '../core/startup-error.ts';
import { SqliteTooOld } from '../db/sqlite-version.ts';
import { embeddedMigrations, embeddedPublicFiles } from './embedded-migrations.ts' with { type: 'macro' };
import { migrateLibsql, openLibsql, type OpenedDb } from './libsql.ts';
import type { RunningServer, ServeOptions } from './node.ts';
import { assetsFromFiles } from './public-assets.ts';
import { serverLogger } from './log.ts';
import { startReaper, summarize } from './reaper-timer.ts';
import { listening, serverUrl } from './server-lifecycle.ts';

export { summarize, serverLogger };
export type { RunningServer, ServeOptions };

/** The slice of Bun's API used here (no bun-types dependency). */
interface BunServer {
  readonly port: number;
  stop(closeActiveConnections?: boolean): Promise<void> | void;
  /** This request's connection is closed after this many seconds without a byte in or out (0: never). */
  timeout(request: Request, seconds: number): void;
}
declare const Bun: {
  /** `server.requestIP` names the client (the auth back-off keys on it). */
  serve(options: {
    hostname: string;
    port: number;
    /** Seconds a connection may go without a byte in or out (default 10, at most 255); a request being handled does not count. */
    idleTimeout?: number;
    fetch(request: Request, server: BunServer): Response | Promise<Response>;
  }): BunServer;
};

/** Bun counts its timeouts in whole seconds, up to 255. */
const bunSeconds = (ms: number) => Math.min(255, Math.max(1, Math.ceil(ms / 1000)));

/** Inlined when Bun bundles or loads this file. */
const MIGRATIONS = embeddedMigrations();
const PUBLIC_FILES: Record<string, string> = embeddedPublicFiles();

/** The files of public/ carried by the binary (path with `/` -> bytes), for the dashboard. */
function publicFiles(): Map<string, Uint8Array> {
  return new Map(Object.entries(PUBLIC_FILES).map(([path, base64]) => [path, Uint8Array.from(Buffer.from(base64, 'base64'))]));
}

export async function openDatabase(config: Config): Promise<OpenedDb> {
  const opened = await openLibsql(config.databaseUrl, config.databaseAuthToken, { synchronous: config.synchronous, busyTimeoutMs: config.busyTimeoutMs });
  try {
    await migrateEmbedded(opened);
  } catch (err) {
    opened.close();
    // Too old a SQLite is one line, as on Node (openDatabase in node.ts).
    if (err instanceof SqliteTooOld) throw new StartupError(`leasehold: cannot use the database at ${redactUrl(config.databaseUrl)}: ${err.message}`, { cause: err });
    throw err;
  }
  return opened;
}

/**
 * Drizzle's migrator reads a folder: write the embedded files to a temporary
 * one, run the very same migrateLibsql as Node, remove the folder.
 */
async function migrateEmbedded(opened: OpenedDb): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-migrations-'));
  try {
    mkdirSync(join(dir, 'meta'));
    writeFileSync(join(dir, 'meta', '_journal.json'), MIGRATIONS.journal);
    for (const file of MIGRATIONS.files) writeFileSync(join(dir, `${file.tag}.sql`), file.sql);
    await migrateLibsql(opened, dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function startServer(config: Config, options: ServeOptions = {}): Promise<RunningServer> {
  const log = options.log ?? serverLogger(config);
  const clock = options.clock ?? databaseClock;
  const opened = await openDatabase(config);
  // Before the server answers anyone: the start is noted as the reaper's hold (see node.ts).
  // One engine for the app and the reaper: what either makes claimable wakes the waiting claims.
  const engine = createEngine({ store: createStore(opened.db), config, clock, log });
  const reaper = options.reaper !== false ? await startReaper(engine, log) : undefined;
  const app = createApp({ engine, assets: assetsFromFiles(publicFiles()) });

  let server: BunServer;
  try {
    server = Bun.serve({
      hostname: config.host,
      port: config.port,
      // A socket that sends no request (or nothing more on a kept-alive one) is closed after it.
      idleTimeout: bunSeconds(config.headersTimeoutMs),
      async fetch(request, bunServer) {
        const response = await app.fetch(request, bunServer);
        // From here the connection only waits for the client to read the answer.
        bunServer.timeout(request, bunSeconds(config.writeTimeoutMs));
        return response;
      },
    });
  } catch (err) {
    reaper?.stop();
    opened.close();
    throw err;
  }
  return listening({
    url: serverUrl(config.host, server.port),
    opened,
    engine,
    config,
    log,
    reaper,
    stopServer: async () => await server.stop(),
  });
}
