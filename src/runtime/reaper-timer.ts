/**
 * What the long-running servers (Node, Bun, Deno) share once they listen:
 * the in-process reaper (reapOnce every interval; a pass never overlaps the
 * previous one, and a failed pass is logged and tried again at the next
 * tick), its log line, the start line and the close order.
 */
import type { Clock } from '../core/clock.ts';
import type { Config } from '../core/config.ts';
import type { Db } from '../db/db.ts';
import { reapOnce, type ReapReport } from '../db/reap-once.ts';
import { redactUrl } from '../core/redact.ts';
import { storageFault } from '../db/storage-fault.ts';
import { gapWatch, type GapWatch, type Hold } from './gap-watch.ts';

/**
 * One reaper pass as every long-running server runs it: skipped while the
 * previous one is still running, logged when it did something, and a failure
 * logged and left for the next pass. `source` names who asked (interval, cron).
 */
export function makeReaperPass(db: Db, config: Config, clock: Clock, log: (line: string) => void, watch: GapWatch = gapWatch(config)): (source?: string) => Promise<void> {
  let running = false;
  return async (source) => {
    // Every tick counts as a sign of life, even one skipped behind a slow pass.
    const hold = watch();
    if (running) return;
    running = true;
    const who = source ? `reaper (${source})` : 'reaper';
    try {
      const holdLostLeases = hold ? { why: holdReason(hold) } : undefined;
      const report = await reapOnce(db, clock.now(), config, { holdLostLeases });
      if (worthLogging(report)) log(`${who}: ${summarize(report)}${holdLostLeases && report.held.length > 0 ? ` (${holdLostLeases.why})` : ''}`);
    } catch (err) {
      // A storage fault (disk full, locked, read-only) is one line per pass, not a stack.
      const fault = storageFault(err);
      if (fault) console.error(`leasehold: ${who} pass failed (will retry on the next one): ${fault.message} (${fault.sqliteCode})`);
      else console.error(`leasehold: ${who} pass failed (will retry on the next one)`, err);
    } finally {
      running = false;
    }
  };
}

export function startReaperTimer(db: Db, config: Config, clock: Clock, log: (line: string) => void): () => void {
  const pass = makeReaperPass(db, config, clock, log);
  const timer = setInterval(() => void pass(), config.reaperIntervalMs);
  // Deno's timers have no unref; Node's and Bun's do.
  (timer as { unref?: () => void }).unref?.();
  return () => clearInterval(timer);
}

/** What the reap_held events and the log line say. */
function holdReason(hold: Hold): string {
  const since = hold.gapMs === null ? 'the server just started' : `the reaper did not run for ${(hold.gapMs / 1000).toFixed(1)} s (the server was paused or stalled)`;
  return `${since}: owners get ${(hold.remainingMs / 1000).toFixed(1)} s more to renew before expired leases are taken back`;
}

export function summarize(r: ReapReport): string {
  return `requeued ${r.requeued.length}, failed ${r.failed.length}, deferred ${r.deferred.length}, ${r.held.length > 0 ? `held ${r.held.length}, ` : ''}raced ${r.raced}, pruned ${r.pruned}${alertsSummary(r)}`;
}

/** The alert part, only when it did something (most passes do not). */
function alertsSummary({ alerts: a }: ReapReport): string {
  if (a.error) return `; alert pass failed (reaping was not affected): ${a.error}`;
  if (!a.started && !a.cleared && !a.delivered && !a.failed) return '';
  return `; alerts: ${a.started} started firing, ${a.cleared} cleared, webhook ${a.delivered} delivered, ${a.failed} failed`;
}

/** A pass that changed a job, or whose alert part did anything or failed, is logged; a quiet one is not. */
export function worthLogging(r: ReapReport): boolean {
  const a = r.alerts;
  return r.requeued.length + r.failed.length + r.deferred.length + r.held.length + a.started + a.cleared + a.delivered + a.failed > 0 || a.error !== undefined;
}

export { redactUrl };

/**
 * The start line (what an operator needs in the first minute: where the API
 * and the dashboard are, which database, how callers authenticate) and a
 * warning line when anything is open without a token.
 */
export function startLines(url: string, config: Pick<Config, 'databaseUrl' | 'workerToken' | 'adminToken'>, reaper: string): string[] {
  const auth = config.workerToken && config.adminToken ? 'worker and admin tokens' : config.adminToken ? 'admin token (worker calls open)' : config.workerToken ? 'worker token (admin API and dashboard open)' : 'none (open)';
  const lines = [`leasehold listening on ${url} (dashboard ${url}/, database ${redactUrl(config.databaseUrl)}, auth: ${auth}, reaper ${reaper})`];
  const open = [!config.workerToken && 'the worker API', !config.adminToken && 'the admin API and the dashboard'].filter(Boolean);
  if (open.length > 0) lines.push(`leasehold: warning: ${open.join(' and ')} ${open.length > 1 || !config.adminToken ? 'are' : 'is'} open to anyone who can reach ${url}; set LEASEHOLD_WORKER_TOKEN and LEASEHOLD_ADMIN_TOKEN`);
  return lines;
}

/** The server's URL from the host it listens on (an IPv6 address goes in brackets) and its port. */
export const serverUrl = (host: string, port: number) => `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

/**
 * What a long-running server (Node, Bun) does once it listens: the reaper
 * timer (unless turned off), the start line, and a close that stops the
 * reaper, then the server, then the database.
 */
export function listening(p: {
  url: string;
  opened: { db: Db; close(): void };
  config: Config;
  clock: Clock;
  log: (line: string) => void;
  reaper: boolean;
  stopServer: () => Promise<void>;
}): { url: string; close(): Promise<void> } {
  const stopReaper = p.reaper ? startReaperTimer(p.opened.db, p.config, p.clock, p.log) : () => {};
  for (const line of startLines(p.url, p.config, `every ${p.config.reaperIntervalMs} ms`)) p.log(line);
  return {
    url: p.url,
    async close() {
      stopReaper();
      await p.stopServer();
      p.opened.close();
    },
  };
}
