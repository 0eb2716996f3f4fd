/**
 * What one connection may make the Node server hold, which node:http does
 * not bound by itself:
 *
 * - Pipelined requests are answered one at a time. node:http parses every
 *   request of a read at once and hands each to the app at once, and the
 *   app answers asynchronously, so 500 requests in one write became 500
 *   answers computed and buffered in memory for a client that never read
 *   them (20 such sockets took a server from 130 MiB to 1.5 GB). Here a
 *   request reaches the app only after the answer before it on the same
 *   connection went out to the kernel, so a connection holds at most one
 *   unsent answer, and a client that stops reading stops the work it causes.
 * - At most `maxPipelinedRequests` may wait behind the one being answered;
 *   the next is answered 429 with `Connection: close` after them, and the
 *   connection closes. A client that keeps sending past twice the limit
 *   (a flood in one write) is cut off at once: its answers were never going
 *   to be read.
 * - An answer that makes no progress for `writeTimeoutMs` (the client stopped
 *   reading and the kernel's buffers are full) closes the connection. A
 *   waiting claim has nothing unsent while it waits, so it is not affected.
 *
 * Browsers, the SDK (node:http with keep-alive) and fetch do not pipeline:
 * each sends its next request on a connection after reading the answer.
 */
import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { errorBody } from '../api/http.ts';
import type { Config } from '../core/config.ts';
import { LeaseholdError } from '../core/errors.ts';
import type { Logger } from '../core/log.ts';

export type ConnectionLimits = Pick<Config, 'maxPipelinedRequests' | 'writeTimeoutMs'>;

/** How often connections with an answer on its way are checked for progress. */
const STALL_CHECK_MS = 1_000;

interface Connection {
  /** Requests received while an earlier one on this connection was being answered, oldest first. */
  waiting: [IncomingMessage, ServerResponse][];
  answering: boolean;
  /** Set once a request was refused: later ones are not run. */
  refused: boolean;
  ignored: number;
  /** Bytes handed to the kernel when last seen moving, and when. */
  sent: number;
  movedAt: number;
}

/**
 * Wraps the server's request listener so each connection is answered one
 * request at a time within `limits`, and starts the write-timeout check
 * (stopped when the server closes).
 */
export function paceConnections(server: Server, listener: RequestListener, limits: ConnectionLimits, log?: Logger): RequestListener {
  const connections = new WeakMap<Socket, Connection>();
  /** Sockets with an answer on its way: the ones the write timeout looks at. */
  const answering = new Set<Socket>();

  const check = setInterval(function closeStalledConnections() {
    const now = Date.now();
    for (const socket of answering) {
      const conn = connections.get(socket)!;
      const sent = socket.bytesWritten - socket.writableLength;
      if (socket.writableLength === 0 || sent !== conn.sent) {
        conn.sent = sent;
        conn.movedAt = now;
      } else if (now - conn.movedAt >= limits.writeTimeoutMs) {
        log?.warn(`closed a connection from ${socket.remoteAddress}: its answer made no progress for ${limits.writeTimeoutMs} ms (the client stopped reading)`, { event: 'write_timeout' });
        answering.delete(socket);
        socket.destroy();
      }
    }
  }, STALL_CHECK_MS);
  check.unref();
  server.once('close', () => clearInterval(check));

  function answer(socket: Socket, conn: Connection, req: IncomingMessage, res: ServerResponse): void {
    conn.answering = true;
    conn.sent = socket.bytesWritten - socket.writableLength;
    conn.movedAt = Date.now();
    answering.add(socket);
    let done = false;
    // 'finish': the whole answer is with the kernel; 'close': it never will be (the socket died).
    const next = () => {
      if (done) return;
      done = true;
      conn.answering = false;
      answering.delete(socket);
      const following = conn.waiting.shift();
      if (following && !socket.destroyed) answer(socket, conn, ...following);
      else conn.waiting.length = 0;
    };
    res.once('finish', next);
    res.once('close', next);
    listener(req, res);
  }

  return function pacedRequest(req, res) {
    const socket = req.socket;
    let conn = connections.get(socket);
    if (!conn) {
      conn = { waiting: [], answering: false, refused: false, ignored: 0, sent: 0, movedAt: 0 };
      connections.set(socket, conn);
    }
    if (conn.refused) {
      if (++conn.ignored > limits.maxPipelinedRequests) socket.destroy();
      return;
    }
    if (!conn.answering) return answer(socket, conn, req, res);
    if (conn.waiting.length < limits.maxPipelinedRequests) {
      conn.waiting.push([req, res]);
      return;
    }
    conn.refused = true;
    // Read no more from this client; what it sent ahead is answered, then this, then the close.
    socket.pause();
    log?.warn(`refusing a connection from ${socket.remoteAddress}: more than ${limits.maxPipelinedRequests} requests sent ahead of their answers`, { event: 'pipelining_refused' });
    const body = JSON.stringify(
      errorBody(
        new LeaseholdError('too_many_requests', `more than ${limits.maxPipelinedRequests} requests were sent on this connection ahead of their answers (LEASEHOLD_MAX_PIPELINED): read each answer before sending more, or open another connection`),
      ),
    );
    // Node writes answers in the order of their requests: this one goes out after the ones waiting.
    res.writeHead(429, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'close' });
    res.end(body);
  };
}
