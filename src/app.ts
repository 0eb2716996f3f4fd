/**
 * createApp: the one Hono app every runtime serves. It knows only Web-standard
 * Request/Response; the runtime entry builds the engine (over its store, with
 * the config, clock and log) and passes it in.
 *
 * @example
 *   const engine = createEngine({ store: createStore(db), config, clock: databaseClock, log: streamLogger({ level: config.logLevel }) });
 *   const app = createApp({ engine });
 *   const res = await app.request('/healthz');
 */
import { Hono } from 'hono';
import { adminRoutes } from './api/admin-routes.ts';
import { indexedFieldRoutes } from './api/indexed-field-routes.ts';
import { requestBodyLimit } from './api/body-limit.ts';
import { scheduleRoutes } from './api/schedule-routes.ts';
import { observabilityRoutes } from './api/observability-routes.ts';
import { canaryRoutes } from './api/canary-routes.ts';
import { opsRoutes } from './api/ops-routes.ts';
import { deadLetterRoutes } from './api/dead-letter-routes.ts';
import { auditRoutes } from './api/audit-routes.ts';
import { PROMETHEUS_ROLE, requireRole } from './api/auth.ts';
import { errorBody } from './api/http.ts';
import { flowRoutes } from './api/flow-routes.ts';
import { jobRoutes } from './api/job-routes.ts';
import { GROUP_SERIES_PER_QUEUE, prometheusText } from './api/metrics.ts';
import { openApiDocument } from './api/openapi.ts';
import { constantAnswer } from './api/constant-answer.ts';
import type { AppDeps, AppInput } from './api/deps.ts';
import { Routes } from './api/router.ts';
import { workerRoutes } from './api/worker-routes.ts';
import { waitRoutes } from './api/wait-routes.ts';
import { hostGuard } from './api/web-guards.ts';
import { requestLog } from './api/request-log.ts';
import { httpTracing } from './api/http-tracing.ts';
import { dashboardRoutes } from './dashboard/routes.tsx';
import { LeaseholdError } from './core/errors.ts';
import { VERSION } from './version.ts';
import { storageFault } from './db/storage-fault.ts';
import { EnqueuePartlyStored } from './db/store/port.ts';
import { AuthThrottle } from './api/throttle.ts';
import { healthBody } from './api/health.ts';

export type { AppDeps, AppInput } from './api/deps.ts';
export { VERSION } from './version.ts';

/** More than public/ holds: past it, a file is served without being kept. */
const MAX_KEPT_ASSETS = 64;

/** A static file's path as the runtimes resolve it (decoded, without leading slashes). */
function assetKey(path: string): string | undefined {
  try {
    return decodeURIComponent(path).replace(/^\/+/, '');
  } catch {
    return undefined;
  }
}

export function createApp(appDeps: AppInput) {
  const { engine } = appDeps;
  const deps: AppDeps = { ...appDeps, store: engine.store, config: engine.config, clock: engine.clock, log: engine.log, authThrottle: appDeps.authThrottle ?? new AuthThrottle() };
  const { config, log } = deps;
  const app = new Hono();

  // Outermost, so every answer (refusals by the guards below too) gets its line and its x-request-id.
  // The worker protocol's routes, once registered below: their routine successes are logged at debug.
  const routine = new Set<string>();
  app.use('*', requestLog(log, config, { mode: config.requestLog, routine }));
  // A span per request when the application registered a tracer provider; a no-op otherwise.
  app.use('*', httpTracing());
  // Then: nothing else may build a URL from a bad Host, and in open mode
  // only loopback names are served (src/api/web-guards.ts).
  app.use('*', hostGuard(config));
  app.use(
    '*',
    requestBodyLimit(config.maxPayloadBytes, () => {
      throw new LeaseholdError('payload_too_large', `the request body is over the limit of ${config.maxPayloadBytes} bytes`, 'body');
    }),
  );

  // Job payloads and results are not for shared caches or the browser's disk
  // (refusals included: set after the error handler has answered). Only an
  // answer that holds no data says otherwise (the OpenAPI document).
  app.use('/api/*', async (c, next) => {
    await next();
    if (!c.res.headers.has('cache-control')) c.res.headers.set('cache-control', 'no-store');
  });
  const api = new Hono();
  const routes = new Routes(api, config, deps.authThrottle);
  jobRoutes(routes, deps);
  flowRoutes(routes, deps);
  workerRoutes(routes, deps);
  adminRoutes(routes, deps);
  indexedFieldRoutes(routes, deps);
  scheduleRoutes(routes, deps);
  observabilityRoutes(routes, deps);
  opsRoutes(routes, deps);
  deadLetterRoutes(routes, deps);
  canaryRoutes(routes, deps);
  auditRoutes(routes, deps);
  waitRoutes(routes, deps);
  for (const spec of routes.specs) if (spec.tag === 'worker') routine.add(`/api/v1${spec.path}`);
  // Open like /healthz: it describes the API, it holds no data. Built once,
  // gzipped once, revalidated by its ETag (src/api/constant-answer.ts).
  const openApi = constantAnswer(() => ({ body: JSON.stringify(openApiDocument(routes.specs, VERSION)), contentType: 'application/json', cacheControl: 'no-cache' }));
  api.get('/openapi.json', (c) => openApi(c.req.raw));
  app.route('/api/v1', api);

  // Serving and the database answers: 200. A late reaper is said in
  // `maintenance` but does not fail the probe: restarting this process would
  // not bring back another server's timer or a removed cron trigger, and a
  // load balancer should keep routing to a server that answers.
  app.get('/healthz', async (c) => c.json(await healthBody(deps)));
  // Scrapable with the read-only token: a Prometheus needs no admin power.
  app.get('/metrics', requireRole(PROMETHEUS_ROLE, config, deps.authThrottle), async (c) => {
    const [snapshot, schedules, groups] = await Promise.all([
      deps.store.metricsSnapshot({ now: deps.clock.now(), config: deps.config }),
      deps.store.schedulesList(),
      deps.store.queuesGroupCounts({ limit: GROUP_SERIES_PER_QUEUE }),
    ]);
    const text = prometheusText(snapshot, deps.config, schedules, groups);
    return c.text(text, 200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
  });

  app.route('/', dashboardRoutes(deps));
  // Static files (public/: the dashboard's CSS and vendored htmx), when the
  // runtime provides them; Workers and Bun serve public/ before the app runs.
  // Each file is read once and kept with its gzip form; a path that is not a
  // file is asked again each time (nothing is kept for it). The key is the
  // path as the runtime resolves it, and only so many are kept, so spellings
  // of one name (%68tmx.min.js) cannot fill memory with copies.
  if (deps.assets) {
    const assets = deps.assets;
    const served = new Map<string, (request: Request) => Promise<Response>>();
    app.get('*', async (c) => {
      const key = assetKey(c.req.path);
      let serve = key === undefined ? undefined : served.get(key);
      if (!serve) {
        const file = await assets(c.req.path);
        if (!file || file.status !== 200) return file ?? c.notFound();
        const body = new Uint8Array(await file.arrayBuffer());
        const headers = file.headers;
        serve = constantAnswer(() => ({ body, contentType: headers.get('content-type') ?? 'application/octet-stream', cacheControl: headers.get('cache-control') ?? 'no-cache' }));
        if (key !== undefined && served.size < MAX_KEPT_ASSETS) served.set(key, serve);
      }
      const answer = await serve(c.req.raw);
      answer.headers.set('x-content-type-options', 'nosniff');
      return answer;
    });
  }

  app.notFound((c) => c.json(errorBody(new LeaseholdError('not_found', `no route for ${c.req.method} ${new URL(c.req.url).pathname}`)), 404));
  app.onError(function toErrorResponse(err, c) {
    if (err instanceof LeaseholdError) {
      c.set('errorCode', err.code);
      const retryAfter = err.details?.retryAfterSeconds;
      const headers: Record<string, string> = retryAfter !== undefined ? { 'retry-after': String(retryAfter) } : {};
      // The rest of an oversized body is never read, so the connection cannot
      // carry another request: say so, and the client opens a fresh one
      // instead of writing into a socket the server is about to drop.
      if (err.code === 'payload_too_large') headers.connection = 'close';
      return c.json(errorBody(err), err.status, headers);
    }
    // Storage faults (disk full, locked past the busy timeout, read-only): the cause, not a stack.
    const fault = storageFault(err);
    if (fault) {
      c.set('errorCode', 'unavailable');
      log.warn(`${c.req.method} ${c.req.path}: 503, ${fault.message}`, { event: 'storage_fault', requestId: c.get('requestId'), sqliteCode: fault.sqliteCode });
      // A bulk enqueue that stored some chunks before the fault says how far it got.
      const message = err instanceof EnqueuePartlyStored ? `${fault.message}; ${err.note}` : fault.message;
      return c.json({ error: { code: 'unavailable', message } }, 503, { 'retry-after': String(fault.retryAfterSeconds) });
    }
    c.set('errorCode', 'internal');
    log.error('unexpected error', { requestId: c.get('requestId'), method: c.req.method, error: err });
    // Never a stack trace or a database message to clients.
    return c.json({ error: { code: 'internal', message: 'internal error' } }, 500);
  });
  return Object.assign(app, { routeSpecs: routes.specs });
}
