/**
 * One log record per request, written when the answer is ready: requestId,
 * method, route (the matched pattern such as /api/v1/jobs/:id, so lines group
 * by endpoint and no id or token in a path is copied), status, durationMs,
 * the client's address (as the login back-off sees it: src/api/throttle.ts),
 * and jobId / queue where the call names them. A refused call also carries
 * the error code it was answered with.
 *
 * Level by outcome: 5xx error, 4xx warn, else info; /healthz (polled by
 * orchestrators every few seconds) at debug. LEASEHOLD_REQUEST_LOG chooses
 * which requests get a line, as HTTP loggers let you skip the routine:
 *
 * - `standard` (default): a worker's routine calls (the worker protocol's
 *   routes: claim, heartbeats, complete, fail, release, checkpoint, beat,
 *   effects) that succeed go at debug, unless slow (SLOW_MS; a claim's own
 *   wait for work does not count). They are most of a busy server's
 *   requests (one worker, 121 jobs: 377 info lines) and say only "it works";
 *   their refusals (409 lease_lost, 400) and failures keep their levels.
 * - `all`: every request at info, as HTTP access logs do.
 * - `errors`: only refusals (4xx, warn), failures (5xx, error) and slow requests.
 * - `off`: no request lines (the request id is still echoed).
 *
 * The request id is the caller's `x-request-id` when it is a sane token
 * (1-128 of letters, digits and . _ : -), else a new UUID; it is echoed in
 * the answer's `x-request-id`, so a caller's report and our line meet.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import type { RequestLogMode } from '../core/config.ts';
import type { LogFields, Logger, LogLevel } from '../core/log.ts';
import { clientAddress, type ProxyTrust } from './throttle.ts';

declare module 'hono' {
  interface ContextVariableMap {
    /** This request's id (also in the x-request-id answer header). */
    requestId: string;
    /** Fields a handler adds to this request's log line (jobId of a new job, say). */
    logFields: LogFields;
    /** The error code the request was answered with, set by the error handler. */
    errorCode: string;
  }
}

export const REQUEST_ID_HEADER = 'x-request-id';
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Adds fields to this request's log line (a handler that learns a job id, say). */
export function logField(c: Context, fields: LogFields): void {
  Object.assign(c.get('logFields') ?? {}, fields);
}

/** A successful call slower than this is logged at info whatever its route (a claim's wait for work aside). */
export const SLOW_MS = 1_000;

export interface RequestLogOptions {
  /** Which requests get a line (Config.requestLog); default standard. */
  mode?: RequestLogMode;
  /** Route patterns of the worker's routine calls (filled once the routes are registered). */
  routine?: ReadonlySet<string>;
  now?: () => number;
}

export function requestLog(log: Logger, proxy: ProxyTrust, options: RequestLogOptions = {}): MiddlewareHandler {
  const mode = options.mode ?? 'standard';
  const routine = options.routine ?? new Set<string>();
  const now = options.now ?? (() => performance.now());
  return async function logRequest(c, next) {
    const started = now();
    const incoming = c.req.header(REQUEST_ID_HEADER);
    const requestId = incoming !== undefined && SANE_REQUEST_ID.test(incoming) ? incoming : crypto.randomUUID();
    const extra: LogFields = {};
    c.set('requestId', requestId);
    c.set('logFields', extra);
    await next();
    echoRequestId(c, requestId);
    const status = c.res.status;
    if (mode === 'off') return;
    const { route, index } = matchedRoute(c);
    const durationMs = Math.round((now() - started) * 10) / 10;
    // A claim may wait for work on purpose (waitMs): that is not slowness.
    const slow = durationMs >= SLOW_MS && !route?.endsWith('/claim');
    const level = levelOf(mode, status, route, slow, routine);
    if (level === undefined || !log.enabled(level)) return;
    // The path parameters of that route (the handler may not have run: the body limit refused first).
    const id = param(c, index, 'id');
    const queue = param(c, index, 'queue');
    const errorCode = c.get('errorCode');
    log[level](`${c.req.method} ${route ?? c.req.path.slice(0, 200)} ${status}`, {
      requestId,
      method: c.req.method,
      ...(route ? { route } : { path: c.req.path.slice(0, 200) }),
      status,
      durationMs,
      ...(slow ? { slow: true } : {}),
      client: clientAddress(c, proxy),
      ...(id !== undefined && route?.includes('/jobs/:id') ? { jobId: id } : {}),
      ...(queue !== undefined ? { queue } : {}),
      ...extra,
      ...(errorCode ? { error: errorCode } : {}),
    });
  };
}

/** The level of a request's line, or undefined for none (see the top of the file). */
function levelOf(mode: RequestLogMode, status: number, route: string | undefined, slow: boolean, routine: ReadonlySet<string>): LogLevel | undefined {
  if (status >= 500) return 'error';
  if (status >= 400) return 'warn';
  if (slow) return 'info';
  if (mode === 'errors') return undefined;
  if (route === '/healthz') return 'debug';
  if (mode === 'standard' && route !== undefined && routine.has(route)) return 'debug';
  return 'info';
}

/**
 * The pattern of the route the request was for: the last matched one that
 * is not a catch-all middleware, so a request refused before its handler ran
 * (413 by the body limit, 400 by the Host guard) is still named by it.
 * Undefined when no route matched (404, static files).
 */
export function matchedRoute(c: Context): { route?: string; index?: number } {
  let routes: { path: string }[];
  try {
    routes = matchedRoutes(c);
  } catch {
    return {};
  }
  for (let i = routes.length - 1; i >= 0; i--) {
    const path = routes[i]!.path;
    if (path !== '*' && path !== '/*') return { route: path, index: i };
  }
  return {};
}

/** A path parameter of the matched route at `index` (Hono reads parameters of the route at routeIndex). */
function param(c: Context, index: number | undefined, name: string): string | undefined {
  if (index === undefined) return undefined;
  const current = c.req.routeIndex;
  try {
    c.req.routeIndex = index;
    const value = c.req.param(name);
    return typeof value === 'string' && value.length <= 200 ? value : undefined;
  } catch {
    return undefined;
  } finally {
    c.req.routeIndex = current;
  }
}

/** Most answers take the header directly; one built elsewhere (a static file) may be immutable, so it is copied. */
function echoRequestId(c: Context, requestId: string): void {
  if (c.res.headers.get(REQUEST_ID_HEADER) === requestId) return;
  try {
    c.res.headers.set(REQUEST_ID_HEADER, requestId);
  } catch {
    const copy = new Response(c.res.body, c.res);
    copy.headers.set(REQUEST_ID_HEADER, requestId);
    c.res = copy;
  }
}
