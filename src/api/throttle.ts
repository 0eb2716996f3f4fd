/**
 * Backs off clients that keep presenting wrong tokens (dashboard logins and
 * bearer auth), per client address: the first few failures in a window are
 * free, then each further attempt from that client is refused with 429 for a
 * delay that doubles per failure (up to a minute), even if its token is right,
 * so guessing costs time. A right token before the lockout clears the count.
 * In memory, per server process: several servers each keep their own count.
 *
 * Loopback clients are not backed off: they are on the server's own machine
 * (and one misconfigured local worker must not lock out the others). Behind a
 * reverse proxy on the same machine every client looks like loopback, so set
 * LEASEHOLD_TRUST_PROXY=true there to back off per real client (and
 * LEASEHOLD_TRUST_PROXY_HOPS to the number of proxies in front).
 */
import type { Context } from 'hono';
import type { Config } from '../core/config.ts';
import { LeaseholdError } from '../core/errors.ts';

const FREE_FAILURES = 5;
const WINDOW_MS = 10 * 60_000;
const MAX_DELAY_MS = 60_000;
/** Clients remembered at most; the oldest entries go first (bounded memory under a spray). */
const MAX_CLIENTS = 10_000;

interface Record {
  failures: number;
  firstAt: number;
  blockedUntil: number;
}

export class AuthThrottle {
  private readonly clients = new Map<string, Record>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Throws 429 while `client` is backed off. */
  check(client: string): void {
    if (exempt(client)) return;
    const r = this.current(client);
    const wait = r ? r.blockedUntil - this.now() : 0;
    if (wait > 0) {
      throw new LeaseholdError('too_many_requests', `too many wrong tokens from this client: try again in ${Math.ceil(wait / 1000)} s`, 'authorization', {
        retryAfterSeconds: Math.ceil(wait / 1000),
      });
    }
  }

  failed(client: string): void {
    if (exempt(client)) return;
    const t = this.now();
    const r = this.current(client) ?? { failures: 0, firstAt: t, blockedUntil: 0 };
    r.failures++;
    if (r.failures > FREE_FAILURES) r.blockedUntil = t + Math.min(MAX_DELAY_MS, 1_000 * 2 ** (r.failures - FREE_FAILURES - 1));
    this.clients.delete(client);
    this.clients.set(client, r);
    if (this.clients.size > MAX_CLIENTS) this.clients.delete(this.clients.keys().next().value!);
  }

  succeeded(client: string): void {
    this.clients.delete(client);
  }

  private current(client: string): Record | undefined {
    const r = this.clients.get(client);
    if (r && this.now() - r.firstAt > WINDOW_MS && r.blockedUntil <= this.now()) {
      this.clients.delete(client);
      return undefined;
    }
    return r;
  }
}

/** What decides whether X-Forwarded-For is believed, and how much of it. */
export type ProxyTrust = Pick<Config, 'trustProxy' | 'trustProxyHops'>;

/**
 * The client's address, as well as the runtime tells it: the socket's peer on
 * Node, Deno and Bun; Cloudflare's `CF-Connecting-IP` on Workers. Behind a
 * proxy we were told to trust (LEASEHOLD_TRUST_PROXY), the address that proxy
 * saw: X-Forwarded-For is a list each proxy appends its own client to, so
 * only its right-most LEASEHOLD_TRUST_PROXY_HOPS entries were written by
 * proxies we run, and the entry those hops name is the client's. Everything
 * left of it is whatever the client sent: `X-Forwarded-For: 127.0.0.1`
 * through nginx arrives as `127.0.0.1, <real address>`, and is the real one.
 * With fewer entries than hops, the left-most (the request skipped a proxy).
 */
export function clientAddress(c: Context, proxy: ProxyTrust): string {
  if (proxy.trustProxy === 'true') {
    const forwarded = forwardedClient(c.req.header('x-forwarded-for'), proxy.trustProxyHops);
    if (forwarded) return forwarded;
  }
  const env = c.env as RuntimeEnv | undefined;
  // Node (@hono/node-server), Deno.serve's info, Bun's server.
  const peer = env?.incoming?.socket?.remoteAddress ?? env?.remoteAddr?.hostname ?? env?.requestIP?.(c.req.raw)?.address;
  if (peer) return peer;
  return c.req.header('cf-connecting-ip') ?? UNKNOWN_CLIENT;
}

/** The entry `hops` from the right of an X-Forwarded-For list (several headers arrive joined by commas). */
function forwardedClient(header: string | undefined, hops: number): string | undefined {
  if (!header) return undefined;
  const entries = header.split(',').map((e) => e.trim()).filter((e) => e !== '');
  const entry = entries[Math.max(0, entries.length - hops)];
  // An address is short; anything longer was not written by a proxy.
  return entry === undefined ? undefined : entry.slice(0, MAX_ADDRESS_LENGTH);
}

/** An IPv6 address with a zone and a port fits; the audit and the throttle keep no more. */
const MAX_ADDRESS_LENGTH = 64;

interface RuntimeEnv {
  incoming?: { socket?: { remoteAddress?: string } };
  remoteAddr?: { hostname?: string };
  requestIP?: (request: Request) => { address: string } | null;
}

/** A client the runtime cannot name is not backed off: one shared count would let anyone lock everyone out. */
const UNKNOWN_CLIENT = 'unknown';

function exempt(address: string): boolean {
  return address === UNKNOWN_CLIENT || /^(127\.|::1$|::ffff:127\.)/.test(address);
}
