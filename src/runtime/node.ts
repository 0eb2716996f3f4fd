/**
 * The Node entry: opens the database (embedded libSQL file by default),
 * applies migrations, serves the app, and runs the reaper on a timer.
 */
import { serve } from '@hono/node-server';
import { fileURLToPath } from 'node:url';
import { createApp } from '../app.ts';
import { databaseClock, type Clock } from '../core/clock.ts';
import type { Config } from '../core/config.ts';
import { reapOnce, type ReapReport } from '../db/reap-once.ts';
import { migrateLibsql, openLibsql, type OpenedDb } from './libsql.ts';

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../drizzle', import.meta.url));

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
  const app = createApp({ db: opened.db, config, clock, logError: (err) => console.error('leasehold: unexpected error', err) });

  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: config.host, port: config.port }, () => resolve(s));
    s.once('error', reject);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `http://${host}:${port}`;

  const stopReaper = options.reaper === false ? () => {} : startReaperTimer(opened, config, clock, log);
  log(`leasehold listening on ${url} (database ${redact(config.databaseUrl)}, reaper every ${config.reaperIntervalMs} ms)`);

  return {
    url,
    async close() {
      stopReaper();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      opened.close();
    },
  };
}

/** Runs reapOnce every interval; a pass never overlaps the previous one. */
function startReaperTimer(opened: OpenedDb, config: Config, clock: Clock, log: (line: string) => void) {
  let running = false;
  const timer = setInterval(async function reaperTick() {
    if (running) return;
    running = true;
    try {
      const report = await reapOnce(opened.db, clock.now(), config);
      if (report.requeued.length || report.failed.length || report.deferred.length) log(`reaper: ${summarize(report)}`);
    } catch (err) {
      console.error('leasehold: reaper pass failed (will retry next interval)', err);
    } finally {
      running = false;
    }
  }, config.reaperIntervalMs);
  timer.unref();
  return () => clearInterval(timer);
}

export function summarize(r: ReapReport): string {
  return `requeued ${r.requeued.length}, failed ${r.failed.length}, deferred ${r.deferred.length}, raced ${r.raced}, pruned ${r.pruned}`;
}

const redact = (url: string) => url.replace(/\/\/[^@/]*@/, '//***@');
