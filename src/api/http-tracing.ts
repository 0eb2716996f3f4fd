/**
 * A SERVER span per request, when the application has registered a tracer
 * provider (`@opentelemetry/api` only; without a provider the tracer is a
 * no-op and this costs a few small objects per request).
 *
 * The span continues the caller's trace from its headers, read with the
 * globally registered propagator (W3C `traceparent` / `tracestate` when the
 * application sets W3CTraceContextPropagator, as the SDKs do by default; a
 * malformed header starts a new trace, as W3C asks). It is the active
 * context while the request is handled, so a job enqueued without a trace
 * context of its own takes the request's (src/api/job-routes.ts); on Node
 * that needs a context manager (AsyncLocalStorageContextManager), which the
 * Node SDK registers.
 *
 * Attributes, after the HTTP semantic conventions (stable): the span is named
 * `{method} {route}`, e.g. `POST /api/v1/queues/:queue/jobs`, and carries
 * `http.request.method`, `url.path`, `url.scheme`, `http.route` (the matched
 * pattern, so ids and queue names do not make every name unique) and
 * `http.response.status_code`; a 5xx answer sets status ERROR and
 * `error.type` to the status code. The query string is left out: it is
 * nobody's business in a trace.
 */
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type TextMapGetter } from '@opentelemetry/api';
import type { MiddlewareHandler } from 'hono';
import { tracer } from '../core/trace-context.ts';
import { matchedRoute } from './request-log.ts';

const fromHeaders: TextMapGetter<Headers> = {
  keys(headers) {
    const keys: string[] = [];
    headers.forEach((_, key) => keys.push(key));
    return keys;
  },
  get: (headers, key) => headers.get(key) ?? undefined,
};

export function httpTracing(): MiddlewareHandler {
  return async function traceRequest(c, next) {
    const parent = propagation.extract(ROOT_CONTEXT, c.req.raw.headers, fromHeaders);
    const span = tracer().startSpan(c.req.method, { kind: SpanKind.SERVER, attributes: { 'http.request.method': c.req.method } }, parent);
    if (span.isRecording()) span.setAttributes({ 'url.path': c.req.path, 'url.scheme': new URL(c.req.url).protocol.replace(/:$/, '') });
    try {
      await context.with(trace.setSpan(parent, span), next);
    } finally {
      if (span.isRecording()) {
        const status = c.res.status;
        const { route } = matchedRoute(c);
        if (route) {
          span.updateName(`${c.req.method} ${route}`);
          span.setAttribute('http.route', route);
        }
        span.setAttribute('http.response.status_code', status);
        if (status >= 500) {
          span.setAttribute('error.type', String(status));
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
      }
      span.end();
    }
  };
}
