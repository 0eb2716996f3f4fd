/**
 * The Deno entry: opens the database (embedded libSQL file by default, through
 * the same native `libsql` addon as Node, loaded by Deno's Node-API support),
 * applies migrations, serves the app with Deno.serve, and runs the reaper.
 *
 *   npx deno run -A --unstable-cron src/runtime/deno.ts [--port 8787 ...]
 *
 * The reaper runs two ways, both calling the same `reaperPass`:
 * - every LEASEHOLD_REAPER_INTERVAL_MS (default 5 s) on an in-process timer,
 *   because leases are seconds long and Deno.cron fires at most once a minute;
 * - on Deno.cron('leasehold reaper', '* * * * *'), the backstop a platform
 *   that schedules crons (Deno Deploy) keeps running even when no timer does.
 * Passes never overlap within one process; two processes reaping one database
 * is safe (every reaper write is guarded by the token and expiry it read).
 * See docs/deploy-deno.md.
 *
 * This is the only file that names `Deno`.
 */
import { createEngine } from '../engine/engine.ts';
import { createStore } from '../db/store/create-store.ts';
import { fileURLToPath } from 'node:url';
import { createApp } from '../app.ts';
import { databaseClock, type Clock } from '../core/clock.ts';
import { ConfigError, loadConfig, type Config } from '../core/config.ts';
import { migrateLibsql, openLibsql } from './libsql.ts';
import { publicAssets } from './public-assets.ts';
import { makeReaperPass } from './reaper-timer.ts';
import { logStart, reaperDescription, serverUrl } from './server-lifecycle.ts';
import { consoleLogger } from './log.ts';
import type { Logger } from '../core/log.ts';

/** The slice of the Deno namespace used here (tsc runs with Node's types, not Deno's). */
interface DenoNetAddr {
  hostname: string;
  port: number;
}
interface DenoHttpServer {
  finished: Promise<void>;
  shutdown(): Promise<void>;
}
declare const Deno: {
  env: { toObject(): Record<string, string> };
  stdout: { isTerminal(): boolean };
  args: string[];
  serve(options: {
    hostname?: string;
    port?: number;
    onListen?: (addr: DenoNetAddr) => void;
    /** `info.remoteAddr` names the client (the auth back-off keys on it). */
    handler: (request: Request, info: { remoteAddr?: { hostname?: string } }) => Response | Promise<Response>;
  }): DenoHttpServer;
  /** Undefined unless Deno runs with --unstable-cron. */
  cron?: (name: string, schedule: string, options: { signal?: AbortSignal }, handler: () => Promise<void>) => Promise<void>;
  addSignalListener(signal: 'SIGINT' | 'SIGTERM', handler: () => void): void;
  exit(code?: number): never;
};

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../drizzle', import.meta.url));
export const PUBLIC_DIR = fileURLToPath(new URL('../../public', import.meta.url));
const CRON_NAME = 'leasehold reaper';
/** Deno.cron's finest schedule: once a minute. */
const CRON_SCHEDULE = '* * * * *';

export interface DenoServer {
  url: string;
  /** One reaper pass, as the timer and the cron run it (skipped if one is already running). */
  reaperPass(source: string): Promise<void>;
  close(): Promise<void>;
}

/** JSON lines, or text when stdout is a terminal (LEASEHOLD_LOG_FORMAT decides when set). */
export function denoLogger(config: Pick<Config, 'logLevel' | 'logFormat'>): Logger {
  const format = config.logFormat !== 'auto' ? config.logFormat : Deno.stdout.isTerminal() ? 'text' : 'json';
  return consoleLogger({ level: config.logLevel, format });
}

export async function startDenoServer(config: Config, clock: Clock = databaseClock, log: Logger = denoLogger(config)): Promise<DenoServer> {
  const opened = await openLibsql(config.databaseUrl, config.databaseAuthToken, { synchronous: config.synchronous, busyTimeoutMs: config.busyTimeoutMs });
  await migrateLibsql(opened, MIGRATIONS_DIR);
  // One engine for the app and the reaper: what either makes claimable wakes the waiting claims.
  const engine = createEngine({ store: createStore(opened.db), config, clock, log });
  const app = createApp({ engine, assets: publicAssets(PUBLIC_DIR) });

  const reaperPass = makeReaperPass(engine, log);
  // Before the server answers anyone: the start is noted as the reaper's hold (see node.ts).
  const started = await reaperPass.noteStart();

  let server!: DenoHttpServer;
  const addr = await new Promise<DenoNetAddr>((resolve, reject) => {
    try {
      server = Deno.serve({ hostname: config.host, port: config.port, onListen: resolve, handler: (request, info) => app.fetch(request, info) });
    } catch (err) {
      reject(err);
    }
  });
  const url = serverUrl(addr.hostname, addr.port);

  // Schedules fire at their time, not at the reaper's next tick.
  engine.startScheduleTimer();
  const timer = setInterval(function reaperTick() {
    void reaperPass('interval');
  }, config.reaperIntervalMs);

  const cronAbort = new AbortController();
  let cron = 'no Deno.cron (needs --unstable-cron)';
  if (typeof Deno.cron === 'function') {
    Deno.cron(CRON_NAME, CRON_SCHEDULE, { signal: cronAbort.signal }, function leaseholdReaperCron() {
      return reaperPass('cron');
    }).catch((err) => log.error('leasehold: Deno.cron stopped', { error: err }));
    cron = `Deno.cron '${CRON_NAME}' (${CRON_SCHEDULE})`;
  }
  logStart(log, url, config, `${reaperDescription(config, { stop: () => {}, ...(started ? { heldUntil: started.holdUntil } : {}) })} + ${cron}`);

  let closing: Promise<void> | undefined;
  return {
    url,
    reaperPass,
    close() {
      closing ??= (async () => {
        clearInterval(timer);
        cronAbort.abort();
        engine.close();
        await server.shutdown();
        opened.close();
      })();
      return closing;
    },
  };
}



async function main(): Promise<void> {
  let config: Config;
  let log: Logger;
  try {
    const loaded = loadConfig(Deno.env.toObject(), Deno.args);
    config = loaded.config;
    log = denoLogger(config);
    for (const d of loaded.derived) log.info(`leasehold: ${d.setting} ${d.rule}`, { event: 'config_derived', setting: d.setting });
    for (const w of loaded.warnings) log.warn(`leasehold: warning: ${w.setting} ${w.rule}`, { event: 'config_warning', setting: w.setting });
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.startupMessage());
      Deno.exit(2);
    }
    throw err;
  }
  const server = await startDenoServer(config, databaseClock, log);
  const stop = (signal: string) => {
    log.info(`leasehold: ${signal}, shutting down`, { event: 'shutdown', signal });
    void server.close().then(
      () => Deno.exit(0),
      (err) => {
        log.error('leasehold: shutdown failed', { error: err });
        Deno.exit(1);
      },
    );
  };
  Deno.addSignalListener('SIGTERM', () => stop('SIGTERM'));
  Deno.addSignalListener('SIGINT', () => stop('SIGINT'));
}

if ((import.meta as ImportMeta & { main?: boolean }).main) await main();
