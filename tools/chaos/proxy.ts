/**
 * An in-process TCP proxy (node:net, loopback only) between a worker and its
 * server, which can cut the worker off while it stays alive:
 *
 * - `stall`: every byte in both directions (and every new connection) is held
 *   until the partition ends;
 * - `stall_requests`: bytes from the worker are held (the server never hears
 *   the request), answers still flow;
 * - `stall_answers`: bytes from the server are held (the server acted, the
 *   worker never hears it), requests still flow;
 * - `drop`: every open connection and every new one is reset until it ends.
 *
 * Held bytes are not lost: the sockets are paused, so the kernel's buffers
 * fill and the peer's writes stop moving, as on a link that went quiet.
 *
 * `dropAnswers(match, n)` forwards the next `n` requests whose start matches
 * (e.g. `POST /api/v1/completions`; the head, and the body when it came in
 * the same chunk) and resets the worker's connection as the
 * server's answer to each arrives: the server acted, the worker saw a reset.
 * `delayAnswers(delayMs, forMs)` holds every byte of every answer for
 * `delayMs` before passing it on (in order), for `forMs`: a slow link.
 */
import { createServer, connect, type Socket } from 'node:net';

export type PartitionMode = 'stall' | 'stall_requests' | 'stall_answers' | 'drop';
type Mode = 'open' | PartitionMode;

export interface Proxy {
  port: number;
  partition(mode: PartitionMode, ms: number): Promise<void>;
  /** Lets the next `count` matching requests through and drops their answers (see above); the answer disarms what is left. */
  dropAnswers(match: (head: string) => boolean, count?: number): () => void;
  /** Delays every answer by `delayMs` for the next `forMs`; resolves when the span ends. */
  delayAnswers(delayMs: number, forMs: number): Promise<void>;
  readonly mode: Mode;
  close(): Promise<void>;
  stats: { connections: number; reset: number; stalled: number; answersDropped: number; answersDelayed: number };
  /** Each dropped answer: when (Date.now()) and the head of the request it answered. */
  dropped: { at: number; head: string }[];
}

interface Pair {
  client: Socket;
  upstream: Socket | undefined;
  /** The request just forwarded matched dropAnswers: reset the client when its answer arrives (its head). */
  dropNextAnswer: string | undefined;
  /** When the last delayed chunk goes out: later chunks (and the end) wait for it, so order holds. */
  releaseAt: number;
}

/** How much of a request's first bytes `dropAnswers` matches against. */
const MATCHED_BYTES = 16_384;

/** Which directions a mode holds. */
const holdsRequests = (m: Mode) => m === 'stall' || m === 'stall_requests';
const holdsAnswers = (m: Mode) => m === 'stall' || m === 'stall_answers';

export async function startProxy(upstreamPort: () => number): Promise<Proxy> {
  let mode: Mode = 'open';
  const pairs = new Set<Pair>();
  const held: (() => void)[] = [];
  const stats = { connections: 0, reset: 0, stalled: 0, answersDropped: 0, answersDelayed: 0 };
  const dropped: { at: number; head: string }[] = [];
  const droppers: { match: (head: string) => boolean; left: number }[] = [];
  let answerDelayMs = 0;

  const reset = (s: Socket | undefined) => {
    if (!s || s.destroyed) return;
    if (typeof s.resetAndDestroy === 'function') s.resetAndDestroy();
    else s.destroy();
  };

  /** Pauses the directions the mode holds, resumes the others. */
  function apply(p: Pair) {
    if (!p.upstream) return;
    if (holdsRequests(mode)) p.client.pause();
    else p.client.resume();
    if (holdsAnswers(mode)) p.upstream.pause();
    else p.upstream.resume();
  }

  function wire(pair: Pair) {
    const { client } = pair;
    const upstream = connect({ port: upstreamPort(), host: '127.0.0.1' });
    pair.upstream = upstream;
    // Forwarded by hand (not pipe()) so that only the proxy ever resumes a paused socket.
    client.on('data', (d) => {
      // The start of what the worker sent: the request's head, and its body when it came along (a small request is one write).
      const head = d.toString('latin1', 0, MATCHED_BYTES);
      const dropper = droppers.find((x) => x.left > 0 && x.match(head));
      if (dropper) {
        dropper.left--;
        pair.dropNextAnswer = head.split('\r\n')[0];
      }
      upstream.write(d);
    });
    /** Passes an answer's bytes (or its end) on now, or after the delay in force, never ahead of earlier ones. */
    const toClient = (send: () => void) => {
      const now = Date.now();
      if (answerDelayMs === 0 && pair.releaseAt <= now) return send();
      pair.releaseAt = Math.max(pair.releaseAt, now + answerDelayMs);
      setTimeout(() => {
        if (!client.destroyed) send();
      }, pair.releaseAt - now);
    };
    upstream.on('data', (d) => {
      if (pair.dropNextAnswer !== undefined) {
        stats.answersDropped++;
        dropped.push({ at: Date.now(), head: pair.dropNextAnswer });
        pair.dropNextAnswer = undefined;
        reset(client);
        upstream.destroy();
        return;
      }
      if (answerDelayMs > 0) stats.answersDelayed++;
      toClient(() => client.write(d));
    });
    client.on('end', () => upstream.end());
    upstream.on('end', () => toClient(() => client.end()));
    upstream.on('error', () => reset(client));
    upstream.on('close', () => toClient(() => client.destroy()));
    apply(pair);
  }

  const server = createServer({ pauseOnConnect: true }, (client) => {
    stats.connections++;
    const pair: Pair = { client, upstream: undefined, dropNextAnswer: undefined, releaseAt: 0 };
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
      // Not even connected upstream: the connection hangs as a SYN to a dead link would.
      stats.stalled++;
      held.push(() => {
        if (!client.destroyed) wire(pair);
      });
      return;
    }
    wire(pair);
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
    mode = 'open';
    for (const p of pairs) apply(p);
    for (const h of held.splice(0)) h();
  }

  return {
    port,
    get mode() {
      return mode;
    },
    stats,
    dropped,
    partition(m, ms) {
      clearTimeout(timer);
      endCurrent?.();
      if (mode !== 'open') heal();
      mode = m;
      for (const p of pairs) {
        if (m === 'drop') {
          stats.reset++;
          reset(p.client);
          reset(p.upstream);
        } else {
          stats.stalled++;
          apply(p);
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
    dropAnswers(match, count = 1) {
      const dropper = { match, left: count };
      droppers.push(dropper);
      return () => {
        dropper.left = 0;
      };
    },
    async delayAnswers(delayMs, forMs) {
      answerDelayMs = delayMs;
      await new Promise((r) => setTimeout(r, forMs));
      answerDelayMs = 0;
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
