/**
 * A loopback TCP proxy that holds every chunk `delayMs` in each direction
 * before passing it on, in order: a link with `2 * delayMs` of added
 * round-trip time and no bandwidth limit. Bench-only (bench/remote.ts); the
 * chaos proxy in tools/chaos delays answers only and does much more.
 */
import { connect, createServer, type Socket } from 'node:net';

export interface DelayProxy {
  port: number;
  /** Connections accepted and chunks forwarded each way, so a run can say how much crossed the link. */
  stats: { connections: number; requestChunks: number; answerChunks: number; requests: number };
  close(): Promise<void>;
}

/** Forwards `from` to `to`, each chunk `delayMs` after it arrived and never ahead of an earlier one. */
function delayed(from: Socket, to: Socket, delayMs: number, counted: (chunk: Buffer) => void) {
  let releaseAt = 0;
  const later = (send: () => void) => {
    const now = Date.now();
    if (delayMs === 0 && releaseAt <= now) return send();
    releaseAt = Math.max(releaseAt, now + delayMs);
    setTimeout(send, releaseAt - now);
  };
  from.on('data', (d) => {
    counted(d);
    later(() => {
      if (!to.destroyed) to.write(d);
    });
  });
  from.on('end', () => later(() => to.end()));
  from.on('close', () => later(() => to.destroy()));
  from.on('error', () => to.destroy());
}

export async function startDelayProxy(upstreamPort: number, delayMs: number): Promise<DelayProxy> {
  const stats = { connections: 0, requestChunks: 0, answerChunks: 0, requests: 0 };
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    stats.connections++;
    client.setNoDelay(true);
    const upstream = connect({ port: upstreamPort, host: '127.0.0.1' });
    upstream.setNoDelay(true);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.once('close', () => sockets.delete(s));
    }
    delayed(client, upstream, delayMs, (d) => {
      stats.requestChunks++;
      // An HTTP/1.1 request's head starts a chunk of its own (Hrana over HTTP: one request per round trip).
      if (/^(?:POST|GET) \//.test(d.toString('latin1', 0, 8))) stats.requests++;
    });
    delayed(upstream, client, delayMs, () => stats.answerChunks++);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    port,
    stats,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
