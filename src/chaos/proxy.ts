/**
 * An in-process TCP proxy (node:net, loopback only) between a worker and its
 * server, which can cut the worker off while it stays alive: `stall` holds
 * every byte (and every new connection) until it ends; `drop` resets every
 * open connection and every new one until it ends.
 */
import { createServer, connect, type Socket } from 'node:net';

export interface Proxy {
  port: number;
  partition(mode: 'stall' | 'drop', ms: number): Promise<void>;
  readonly mode: 'open' | 'stall' | 'drop';
  close(): Promise<void>;
  stats: { connections: number; reset: number; stalled: number };
}

export async function startProxy(upstreamPort: () => number): Promise<Proxy> {
  let mode: 'open' | 'stall' | 'drop' = 'open';
  const pairs = new Set<{ client: Socket; upstream: Socket | undefined }>();
  const held: (() => void)[] = [];
  const stats = { connections: 0, reset: 0, stalled: 0 };

  const reset = (s: Socket | undefined) => {
    if (!s || s.destroyed) return;
    if (typeof s.resetAndDestroy === 'function') s.resetAndDestroy();
    else s.destroy();
  };

  function wire(pair: { client: Socket; upstream: Socket | undefined }) {
    const { client } = pair;
    const upstream = connect({ port: upstreamPort(), host: '127.0.0.1' });
    pair.upstream = upstream;
    // Forwarded by hand (not pipe()) so that only the proxy ever resumes a paused socket.
    client.on('data', (d) => upstream.write(d));
    upstream.on('data', (d) => client.write(d));
    client.on('end', () => upstream.end());
    upstream.on('end', () => client.end());
    upstream.on('error', () => reset(client));
    upstream.on('close', () => client.destroy());
    if (mode === 'stall') {
      client.pause();
      upstream.pause();
    }
  }

  const server = createServer({ pauseOnConnect: true }, (client) => {
    stats.connections++;
    const pair = { client, upstream: undefined as Socket | undefined };
    client.on('error', () => reset(pair.upstream));
    client.on('close', () => {
      pairs.delete(pair);
      pair.upstream?.destroy();
    });
    if (mode === 'drop') {
      stats.reset++;
      reset(client);
      return;
    }
    pairs.add(pair);
    if (mode === 'stall') {
      stats.stalled++;
      held.push(() => {
        if (!client.destroyed) {
          wire(pair);
          client.resume();
        }
      });
      return;
    }
    wire(pair);
    client.resume();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;

  let timer: ReturnType<typeof setTimeout> | undefined;
  /** Ends the partition in force (a new one replaces it; its caller must not wait forever). */
  let endCurrent: (() => void) | undefined;
  function heal() {
    const was = mode;
    mode = 'open';
    if (was === 'stall') {
      for (const p of pairs) {
        if (p.upstream) {
          p.client.resume();
          p.upstream.resume();
        }
      }
      for (const h of held.splice(0)) h();
    }
  }

  return {
    port,
    get mode() {
      return mode;
    },
    stats,
    partition(m, ms) {
      clearTimeout(timer);
      endCurrent?.();
      if (mode !== 'open') heal();
      mode = m;
      if (m === 'drop') {
        for (const p of pairs) {
          stats.reset++;
          reset(p.client);
          reset(p.upstream);
        }
      } else {
        for (const p of pairs) {
          stats.stalled++;
          p.client.pause();
          p.upstream?.pause();
        }
      }
      return new Promise((resolve) => {
        endCurrent = () => {
          endCurrent = undefined;
          resolve();
        };
        timer = setTimeout(() => {
          heal();
          endCurrent?.();
        }, ms);
      });
    },
    async close() {
      clearTimeout(timer);
      endCurrent?.();
      heal();
      for (const p of pairs) {
        p.client.destroy();
        p.upstream?.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
