/**
 * The Cloudflare Workers entry: `fetch` serves the one Hono app, `scheduled`
 * (wrangler.toml `[triggers] crons`) runs one reaper pass.
 *
 * Database: the D1 binding `DB` by default (drizzle-orm/d1), or a Turso /
 * libSQL server over HTTP (`@libsql/client/web`) when the secret
 * LEASEHOLD_DATABASE_URL is set. Migrations are not applied here: D1 takes
 * them from `wrangler d1 migrations apply` (migrations_dir = "drizzle"), a
 * Turso database from `leasehold migrate` / the Node entry.
 *
 * Security: the edge is public and has no bind address, so the loopback
 * exemption of the Node server means nothing here. Without both
 * LEASEHOLD_WORKER_TOKEN and LEASEHOLD_ADMIN_TOKEN every request is refused
 * with 503, unless LEASEHOLD_ALLOW_OPEN=true (local development and tests).
 *
 * Clock: always the database's clock (`databaseClock`), so every isolate in
 * every colo agrees on lease deadlines.
 *
 * The reaper's hold (src/db/store/reaper-hold.ts): the cron pass obeys a hold
 * in the database (one a Node server sharing a Turso database wrote after
 * its restart or pause) and writes none of its own. A Worker has no process
 * whose gap would have kept workers from renewing: isolates start on demand,
 * and a late or missed cron run means only that the reaper did not run, not
 * that workers could not reach the API meanwhile, so a lease that ran out is
 * a lost lease and holding it would only delay recovery.
 *
 * Clock steps (src/core/clock-step.ts): a step back of the database's clock
 * is handled by the pass itself (it finds leases renewed "in the future" and
 * counts them from now), so it holds here too. A step forward is not seen:
 * nothing lives between two cron runs to compare the clock with a monotonic
 * one (an isolate may be new each time, and its performance.now only moves
 * with I/O), so the cron's pass takes what looks expired after one.
 *
 * Types: this file is checked by the main tsconfig (Node + DOM libs), so it
 * declares the few Workers shapes it needs structurally instead of pulling
 * @cloudflare/workers-types into the whole project.
 */
import { createEngine, type Engine } from '../engine/engine.ts';
import { createStore } from '../db/store/create-store.ts';
import { drizzle as drizzleD1 } from 'drizzle-orm/d1';
import { sql } from 'drizzle-orm';
import { createApp } from '../app.ts';
import { hasToken } from '../core/tokens.ts';
import { databaseClock } from '../core/clock.ts';
import { ConfigError, loadConfig, type Config } from '../core/config.ts';
import type { Db } from '../db/db.ts';
import * as schema from '../db/schema.ts';
import { logReapSummary, reapLogger } from './reaper-timer.ts';
import { consoleLogger } from './log.ts';
import type { Logger } from '../core/log.ts';

/** The parts of D1's `D1Database` this file touches (see @cloudflare/workers-types). */
export interface D1DatabaseLike {
  prepare(query: string): D1PreparedStatementLike;
  batch(statements: D1PreparedStatementLike[]): Promise<D1ResultLike[]>;
}
export interface D1PreparedStatementLike {
  bind(...values: unknown[]): D1PreparedStatementLike;
}
interface D1ResultLike {
  results?: unknown[];
}
interface ExecutionContextLike {
  waitUntil(promise: Promise<unknown>): void;
}
interface ScheduledControllerLike {
  readonly scheduledTime: number;
  readonly cron: string;
}

export interface Env {
  /** The D1 database (wrangler.toml `[[d1_databases]]`). */
  DB?: D1DatabaseLike;
  /** `true` serves without tokens: local development and tests only. */
  LEASEHOLD_ALLOW_OPEN?: string;
  /** LEASEHOLD_* settings (vars) and secrets, as strings; see src/core/config.ts. */
  [key: string]: unknown;
}

interface Runtime {
  engine: Engine;
  config: Config;
  log: Logger;
  app: ReturnType<typeof createApp>;
}

/** Why this isolate cannot serve: answered to every request as 503. */
class Refusal {
  constructor(
    readonly code: string,
    readonly message: string,
    readonly details?: unknown,
    /** Asked again on the next request (the migrations may be applied meanwhile), not cached. */
    readonly transient = false,
  ) {}
}

/** Whether drizzle/ was applied: D1 is not migrated by the Worker, and an empty one would answer 500s. */
async function schemaApplied(db: Db): Promise<boolean> {
  const rows = await db.all<{ name: string }>(sql`SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'jobs'`);
  return rows.length > 0;
}

/**
 * One app per env object and role: the env (and its bindings) is the same
 * object for every request an isolate serves, so the app, its config and its
 * database handle are built once. A different env (tests) gets its own.
 */
const served = new WeakMap<object, Promise<Runtime | Refusal>>();
const reaped = new WeakMap<object, Promise<Runtime | Refusal>>();

function runtimeFor(env: Env, role: 'serve' | 'reap' = 'serve'): Promise<Runtime | Refusal> {
  const cache = role === 'serve' ? served : reaped;
  let runtime = cache.get(env);
  if (!runtime) {
    runtime = build(env, role);
    cache.set(env, runtime);
    // A failure to build, or a transient refusal, is tried again by the next request.
    runtime.then((r) => r instanceof Refusal && r.transient && cache.delete(env)).catch(() => cache.delete(env));
  }
  return runtime;
}

async function build(env: Env, role: 'serve' | 'reap'): Promise<Runtime | Refusal> {
  const strings: Record<string, string | undefined> = {};
  for (const [key, value] of Object.entries(env)) {
    if (key.startsWith('LEASEHOLD_') && typeof value === 'string') strings[key] = value;
  }
  const databaseUrl = strings.LEASEHOLD_DATABASE_URL;
  // No bind address on Workers: the host check is replaced by the token rule below.
  strings.LEASEHOLD_HOST = '127.0.0.1';
  // Nor is a Worker told the port it is served on (`wrangler dev --port 9000`):
  // open mode then accepts the loopback names on any port (port 0, as for a
  // server that took a free one), unless LEASEHOLD_PORT names the one to accept.
  if (!strings.LEASEHOLD_PORT) strings.LEASEHOLD_PORT = '0';
  // D1 is not a URL: give loadConfig a well-formed placeholder so its check passes.
  if (!databaseUrl) strings.LEASEHOLD_DATABASE_URL = 'file:d1';

  let config: Config;
  try {
    let warnings: { setting: string; rule: string }[];
    let derived: { setting: string; rule: string }[];
    ({ config, warnings, derived } = loadConfig(strings));
    for (const d of derived) workerLogger(config).info(`leasehold: ${d.setting} ${d.rule}`, { event: 'config_derived', setting: d.setting });
    // Once per isolate (the runtime is cached): risky settings reach the Worker's log.
    for (const w of warnings) workerLogger(config).warn(`leasehold: warning: ${w.setting} ${w.rule}`, { event: 'config_warning', setting: w.setting });
  } catch (err) {
    if (err instanceof ConfigError) {
      return new Refusal('misconfigured', 'leasehold is misconfigured: fix these settings (wrangler.toml [vars] or secrets)', err.problems);
    }
    throw err;
  }

  // The reaper is not reachable from outside: it runs with or without tokens.
  const open = role === 'reap' || strings.LEASEHOLD_ALLOW_OPEN === 'true';
  if (!open && (!hasToken(config, 'worker') || !hasToken(config, 'admin'))) {
    const missing = [!hasToken(config, 'worker') && 'LEASEHOLD_WORKER_TOKEN', !hasToken(config, 'admin') && 'LEASEHOLD_ADMIN_TOKEN'].filter(Boolean);
    return new Refusal(
      'unavailable',
      `leasehold refuses to serve on a public edge without tokens: set the secret(s) ${missing.join(' and ')} ` +
        `(npx wrangler secret put ${missing[0]}), or set LEASEHOLD_ALLOW_OPEN=true for local development only`,
    );
  }

  let db: Db;
  if (databaseUrl) {
    if (!/^(libsql|https?|wss?):/.test(databaseUrl)) {
      return new Refusal('misconfigured', 'LEASEHOLD_DATABASE_URL must be a libsql://, https:// or wss:// URL on Workers (there is no file system)');
    }
    db = await libsqlWebDb(databaseUrl, config.databaseAuthToken);
  } else if (env.DB) {
    db = d1Db(env.DB);
  } else {
    return new Refusal('misconfigured', 'no database: bind a D1 database as DB in wrangler.toml, or set the LEASEHOLD_DATABASE_URL secret (Turso)');
  }

  // D1 only: a Turso database is migrated with `leasehold migrate`, and checking it here would cost a round trip per isolate.
  if (!databaseUrl && !(await schemaApplied(db))) {
    return new Refusal(
      'not_migrated',
      'the database has no leasehold tables: apply the migrations (npx wrangler d1 migrations apply leasehold --remote, or --local for wrangler dev)',
      undefined,
      true,
    );
  }

  const log = workerLogger(config);
  // No cross-request enqueue batching: a Workers request cannot finish another's I/O.
  const engine = createEngine({ store: createStore(db), config, clock: databaseClock, log, batchEnqueues: false, isolatedRequests: true });
  const app = createApp({ engine });
  return { engine, config, log, app };
}

/** JSON lines through console (Workers Logs indexes their fields); LEASEHOLD_LOG_FORMAT=text for wrangler dev by eye. */
const workerLogger = (config?: Pick<Config, 'logLevel' | 'logFormat'>): Logger =>
  consoleLogger({ level: config?.logLevel ?? 'info', format: config?.logFormat === 'text' ? 'text' : 'json' });

/**
 * Drizzle over a D1 binding.
 *
 * D1 incompatibility handled here: drizzle-orm/d1 (0.45) cannot batch raw SQL.
 * Its `batch` binds parameters through `preparedQuery.stmt`, which the raw
 * queries `db.run(sql)` / `db.all(sql)` (SQLiteRaw) do not have, so every
 * batch the store sends fails with "Cannot read properties of undefined
 * (reading 'bind')". This `batch` prepares each statement on the binding
 * itself and sends one D1 batch (one implicit transaction, as before), then
 * lets each query map its own result: raw `all` gives the rows as objects
 * keyed by column name (what src/db/store expects), raw `run` the D1 result,
 * query-builder queries drizzle's usual mapping.
 */
export function d1Db(binding: D1DatabaseLike): Db {
  const db = drizzleD1(binding as never, { schema });
  const batch: Db['batch'] = async (queries) => {
    const prepared = (queries as unknown as { _prepare(): PreparedLike }[]).map((q) => q._prepare());
    const statements = prepared.map((p) => {
      const { sql, params } = p.getQuery();
      return binding.prepare(sql).bind(...params);
    });
    const results = await binding.batch(statements);
    return results.map((result, i) => prepared[i]!.mapResult(result, true)) as never;
  };
  return Object.assign(db, { batch }) as unknown as Db;
}

/** What `d1Db`'s batch uses of a drizzle query (SQLiteRaw or a prepared builder query). */
interface PreparedLike {
  getQuery(): { sql: string; params: unknown[] };
  mapResult(result: unknown, isFromBatch?: boolean): unknown;
}

/**
 * Drizzle over a Turso / libSQL server, spoken over HTTP(S) with fetch.
 * Imported lazily so D1 deployments never evaluate the libSQL client.
 */
async function libsqlWebDb(url: string, authToken: string | undefined): Promise<Db> {
  const [{ createClient }, { drizzle }] = await Promise.all([import('@libsql/client/web'), import('drizzle-orm/libsql/web')]);
  return drizzle({ client: createClient({ url, ...(authToken ? { authToken } : {}) }), schema }) as unknown as Db;
}

function refusalResponse(r: Refusal): Response {
  return Response.json({ error: { code: r.code, message: r.message, ...(r.details ? { details: r.details } : {}) } }, { status: 503 });
}

export default {
  async fetch(request: Request, env: Env, ctx: ExecutionContextLike): Promise<Response> {
    const runtime = await runtimeFor(env);
    if (runtime instanceof Refusal) {
      // The app (and its request log) is not running: the refusal is this request's line.
      workerLogger().error(`${request.method} ${new URL(request.url).pathname} 503: ${runtime.message}`, { event: 'refused', method: request.method, status: 503, error: runtime.code });
      return refusalResponse(runtime);
    }
    return runtime.app.fetch(request, env, ctx as never);
  },

  async scheduled(controller: ScheduledControllerLike, env: Env, ctx: ExecutionContextLike): Promise<void> {
    const pass = (async () => {
      const runtime = await runtimeFor(env, 'reap');
      if (runtime instanceof Refusal) {
        workerLogger().error(`leasehold: reaper (cron ${controller.cron}) cannot run: ${runtime.message}`, { event: 'refused', code: runtime.code });
        return;
      }
      logReapSummary(runtime.log, await runtime.engine.maintenancePass(databaseClock.now(), reapLogger(runtime.log, 'cron')), 'cron');
    })();
    ctx.waitUntil(pass);
    // Awaited too, so a failed pass shows as a failed cron invocation (the next cron retries).
    await pass;
  },
};
