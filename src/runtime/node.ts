/**
 * The Node entry: opens the database (embedded libSQL file by default),
 * applies migrations, serves the app, and runs the reaper on a timer.
 */
import { serve } from '@hono/node-server';
import { fileURLToPath } from 'node:url';
import { createApp } from '../app.ts';
import { databaseClock, type Clock } from '../core/clock.ts';
import type { Config } from '../core/config.ts';
import { migrateLibsql, openLibsql, type OpenedDb } from './libsql.ts';
import { publicAssets } from './public-assets.ts';
import { listening, serverUrl, summarize } from './reaper-timer.ts';

export { summarize };

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../drizzle', import.meta.url));

export const PUBLIC_DIR = fileURLToPath(new URL('../../public', import.meta.url));

export async function openDatabase(config: Config): Promise<OpenedDb> {
  const opened = await openLibsql(config.databaseUrl, config.databaseAuthToken, { synchronous: config.synchronous });
  await migrateLibsql(opened, MIGRATIONS_DIR);
  return opened;
}

export interface RunningServer {
  url: string;
  close(): Promise<void>;
}

export interface ServeOptions {
  clock?: Clock;
  log?: (line: string) => void;
  /** Run the reaper in-process (default true). */
  reaper?: boolean;
}

export async function startServer(config: Config, options: ServeOptions = {}): Promise<RunningServer> {
  const log = options.log ?? ((line: string) => console.log(line));
  const clock = options.clock ?? databaseClock;
  const opened = await openDatabase(config);
  const app = createApp({ db: opened.db, config, clock, assets: publicAssets(PUBLIC_DIR), logError: (err) => console.error('leasehold: unexpected error', err) });

  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: config.host, port: config.port }, () => resolve(s));
    s.once('error', reject);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  return listening({
    url: serverUrl(config.host, port),
    opened,
    config,
    clock,
    log,
    reaper: options.reaper !== false,
    stopServer: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}



