/**
 * The request body's size limit. A body that declares its length
 * (Content-Length, no Transfer-Encoding) is judged by that header alone; only
 * a body without one (chunked) is counted as it streams in, by Hono's
 * bodyLimit.
 *
 * Why not Hono's bodyLimit for every request: its first step reads
 * `c.req.raw.body`, and on Node that property makes @hono/node-server build a
 * full web `Request` with a ReadableStream over the socket, so the body is
 * then read through web streams instead of straight from the IncomingMessage.
 * For a single enqueue that was about a tenth of the server's CPU time.
 * Node's HTTP parser never hands the app more bytes than a Content-Length
 * declared, so the header is the size.
 */
import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';

export function requestBodyLimit(maxSize: number, refuse: () => never): MiddlewareHandler {
  const streamed = bodyLimit({ maxSize, onError: refuse });
  return async function limitBody(c, next) {
    // A GET or HEAD carries no body the app reads (a web Request drops it).
    if (c.req.method === 'GET' || c.req.method === 'HEAD') return next();
    const length = c.req.header('content-length');
    if (length !== undefined && c.req.header('transfer-encoding') === undefined) {
      if (Number.parseInt(length, 10) > maxSize) refuse();
      return next();
    }
    return streamed(c, next);
  };
}
