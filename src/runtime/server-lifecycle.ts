/**
 * A long-running server's lifecycle (Node, Bun, Deno) once it listens: the
 * start line (where the API and dashboard are, which database, how callers
 * authenticate, the reaper's interval and the hold its start wrote), the
 * open-mode warning, and the close order: the reaper, the engine's waits,
 * the server, then the database. The reaper itself is in reaper-timer.ts.
 */
import { roleTokens } from '../core/tokens.ts';
import type { Config } from '../core/config.ts';
import type { Db } from '../db/db.ts';
import { redactUrl } from '../core/redact.ts';
import type { Logger } from '../core/log.ts';
import type { Engine } from '../engine/engine.ts';
import type { StartedReaper } from './reaper-timer.ts';

/** The start line's word on the reaper: its interval, and the hold its start wrote. */
export function reaperDescription(config: Pick<Config, 'reaperIntervalMs'>, reaper: StartedReaper | undefined): string {
  const hold = reaper?.heldUntil === undefined ? '' : `; expired leases held until ${new Date(reaper.heldUntil).toISOString()} (the server just started)`;
  return `every ${config.reaperIntervalMs} ms${hold}`;
}

/**
 * The start line (what an operator needs in the first minute: where the API
 * and the dashboard are, which database, how callers authenticate) and a
 * warning line when anything is open without a token.
 */
export function startLines(url: string, config: Pick<Config, 'databaseUrl'> & Parameters<typeof roleTokens>[0], reaper: string): string[] {
  const tokens = roleTokens(config);
  const worker = tokens.worker.length > 0;
  const admin = tokens.admin.length > 0;
  const auth = worker && admin ? 'worker and admin tokens' : admin ? 'admin token (worker calls open)' : worker ? 'worker token (admin API and dashboard open)' : 'none (open)';
  const lines = [`leasehold listening on ${url} (dashboard ${url}/, database ${redactUrl(config.databaseUrl)}, auth: ${auth}, reaper ${reaper})`];
  const open = [!worker && 'the worker API', !admin && 'the admin API and the dashboard'].filter(Boolean);
  if (open.length > 0) lines.push(`leasehold: warning: ${open.join(' and ')} ${open.length > 1 || !admin ? 'are' : 'is'} open to anyone who can reach ${url}; set LEASEHOLD_WORKER_TOKEN and LEASEHOLD_ADMIN_TOKEN`);
  return lines;
}

/** The start line at info (with url, database and auth as fields) and the open-mode warning at warn. */
export function logStart(log: Logger, url: string, config: Parameters<typeof startLines>[1], reaper: string): void {
  const [start, ...warnings] = startLines(url, config, reaper);
  log.info(start!, { event: 'listening', url, dashboard: `${url}/`, database: redactUrl(config.databaseUrl) });
  for (const line of warnings) log.warn(line, { event: 'open_mode' });
}

/** The server's URL from the host it listens on (an IPv6 address goes in brackets) and its port. */
export const serverUrl = (host: string, port: number) => `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

/**
 * What a long-running server (Node, Bun) does once it listens: the start
 * line, and a close that stops the reaper (started by the caller, before the
 * app answered anyone: startReaper), then the server, then the database.
 */
export function listening(p: {
  url: string;
  opened: { db: Db; close(): void };
  engine: Engine;
  config: Config;
  log: Logger;
  /** The in-process reaper (startReaper, started before the app answers anyone), or none. */
  reaper: StartedReaper | undefined;
  stopServer: () => Promise<void>;
}): { url: string; close(): Promise<void> } {
  const stopReaper = p.reaper?.stop ?? (() => {});
  logStart(p.log, p.url, p.config, reaperDescription(p.config, p.reaper));
  return {
    url: p.url,
    async close() {
      stopReaper();
      // Claims and waits on jobs answer now: the server's close waits for open requests.
      p.engine.close();
      await p.stopServer();
      p.opened.close();
    },
  };
}
