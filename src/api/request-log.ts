/**
 * One log record per request, written when the answer is ready: requestId,
 * method, route (the matched pattern such as /api/v1/jobs/:id, so lines group
 * by endpoint and no id or token in a path is copied), status, durationMs,
 * and jobId / queue where the call names them. A refused call also carries
 * the error code it was answered with.
 *
 * Level by outcome: 5xx error, 4xx warn, else info; /healthz (polled by
 * orchestrators every few seconds) at debug.
 *
 * The request id is the caller's `x-request-id` when it is a sane token
 * (1-128 of letters, digits and . _ : -), else a new UUID; it is echoed in
 * the answer's `x-request-id`, so a caller's report and our line meet.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import type { LogFields, Logger, LogLevel } from '../core/log.ts';

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

export function requestLog(log: Logger, now: () => number = () => performance.now()): MiddlewareHandler {
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
    const route = matchedRoute(c);
    const level: LogLevel = status >= 500 ? 'error' : status >= 400 ? 'warn' : route === '/healthz' ? 'debug' : 'info';
    if (!log.enabled(level)) return;
    const id = param(c, 'id');
    const queue = param(c, 'queue');
    const errorCode = c.get('errorCode');
    log[level](`${c.req.method} ${route ?? c.req.path.slice(0, 200)} ${status}`, {
      requestId,
      method: c.req.method,
      ...(route ? { route } : { path: c.req.path.slice(0, 200) }),
      status,
      durationMs: Math.round((now() - started) * 10) / 10,
      ...(id !== undefined && route?.includes('/jobs/:id') ? { jobId: id } : {}),
      ...(queue !== undefined ? { queue } : {}),
      ...extra,
      ...(errorCode ? { error: errorCode } : {}),
    });
  };
}

/** The pattern of the route that answered, or undefined when none did (404, static files). */
function matchedRoute(c: Context): string | undefined {
  let path: string;
  try {
    path = routePath(c);
  } catch {
    return undefined;
  }
  return path && path !== '*' && path !== '/*' ? path : undefined;
}

function param(c: Context, name: string): string | undefined {
  try {
    const value = c.req.param(name);
    return typeof value === 'string' && value.length <= 200 ? value : undefined;
  } catch {
    return undefined;
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
