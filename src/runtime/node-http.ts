/**
 * The Node HTTP server under the app, with the limits a server facing
 * untrusted clients needs and Hono cannot set from inside a request:
 *
 * - A body declared (Content-Length) over the payload limit is answered 413
 *   here, before the app, and the connection is closed cleanly: the response
 *   goes out first, the rest of the body is read and thrown away (up to a
 *   bound), then the socket ends. Closing with unread bytes in the kernel
 *   buffer would send a TCP reset that can destroy the 413 before the client
 *   reads it, and a kept-alive client would then see a socket error.
 * - Slow clients (slowloris): headers must arrive within `headersTimeoutMs`
 *   and the whole request within `requestTimeoutMs`; Node checks open
 *   connections every second. The headers timeout also runs from the
 *   connection's start, so a socket that never sends a request is closed
 *   after it (with a 408); between requests on a kept-alive connection,
 *   Node's keep-alive timeout (5 s) closes an idle one.
 * - At most `maxConnections` sockets at once; past that new ones are dropped.
 * - Per connection, pipelined requests are answered one at a time, a bounded
 *   number may wait, and a client that stops reading is closed after
 *   `writeTimeoutMs` (node-connections.ts).
 */
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerOptions, type ServerResponse } from 'node:http';
import { errorBody } from '../api/http.ts';
import type { Config } from '../core/config.ts';
import { LeaseholdError } from '../core/errors.ts';
import type { Logger } from '../core/log.ts';
import { paceConnections, type ConnectionLimits } from './node-connections.ts';

export type HttpLimits = Pick<Config, 'maxPayloadBytes' | 'requestTimeoutMs' | 'headersTimeoutMs' | 'maxConnections'> & ConnectionLimits;

/** How much of an oversized body is read and discarded before the socket is cut anyway. */
const DRAIN_LIMIT_FACTOR = 4;

/** A `createServer` for @hono/node-server's serve() that applies the limits. */
export function limitedCreateServer(limits: HttpLimits, log?: Logger): typeof createServer {
  // serve() always passes (options, listener); the cast covers createServer's other overloads.
  return ((options: ServerOptions, listener: RequestListener): Server => {
    const server = createServer({
      ...options,
      requestTimeout: limits.requestTimeoutMs,
      // Headers are part of the request (and Node refuses a longer headers timeout).
      headersTimeout: Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs),
      connectionsCheckingInterval: 1_000,
    });
    const handle: RequestListener = (req, res) => {
      if (declaredLength(req) > limits.maxPayloadBytes) refuseOversized(req, res, limits.maxPayloadBytes);
      else listener(req, res);
    };
    server.on('request', paceConnections(server, handle, limits, log));
    server.maxConnections = limits.maxConnections;
    return server;
  }) as typeof createServer;
}

function declaredLength(req: IncomingMessage): number {
  const header = req.headers['content-length'];
  if (header === undefined) return 0;
  const n = Number(header);
  return Number.isFinite(n) ? n : 0;
}

function refuseOversized(req: IncomingMessage, res: ServerResponse, maxBytes: number): void {
  // The same error and words as the app's own 413 (src/app.ts), answered before the app.
  const body = JSON.stringify(errorBody(new LeaseholdError('payload_too_large', `the request body is over the limit of ${maxBytes} bytes`, 'body')));
  res.writeHead(413, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'close' });
  res.end(body);
  // Read and drop what the client is still sending, so the close is a clean
  // FIN after the answer and not a reset; a client that keeps sending past
  // the bound (or slower than the request timeout) is cut off.
  let drained = 0;
  req.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > maxBytes * DRAIN_LIMIT_FACTOR) req.socket.destroy();
  });
  req.resume();
}
