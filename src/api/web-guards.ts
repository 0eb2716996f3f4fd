/**
 * What keeps web pages out of a server that runs without tokens (the quick
 * start's open mode, only allowed on loopback):
 *
 * - DNS rebinding. A page on attacker.example can rebind its name to
 *   127.0.0.1 and then be same-origin with leasehold. The browser still sends
 *   `Host: attacker.example`, so in open mode only the loopback names are
 *   accepted as Host: 127.0.0.1, localhost and [::1], with the port the server
 *   listens on. Anything else gets 421. With both tokens set the Host is not
 *   restricted (any name works behind a proxy): the token is what admits.
 * - Cross-site simple requests. A page may POST text/plain, form or multipart
 *   bodies to any address without a preflight. Every non-GET API call must
 *   therefore send `Content-Type: application/json` (which a page cannot send
 *   cross-site without a preflight we never answer), and an open route refuses
 *   a foreign `Origin` or a `Sec-Fetch-Site` other than same-origin / none.
 *
 * Also: a Host header that does not parse is a 400 here, before anything
 * builds a URL from it (Node's Request would throw: a 500 with a stack trace).
 */
import type { Context, MiddlewareHandler } from 'hono';
import type { Config } from '../core/config.ts';
import { LeaseholdError, type ErrorCode } from '../core/errors.ts';
import { hasToken } from '../core/tokens.ts';
import { logField } from './request-log.ts';

const LOOPBACK_NAMES = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** Whether any role works without a token: then every request is open to any page the user visits. */
export const isOpenMode = (config: Parameters<typeof hasToken>[0]) => !hasToken(config, 'worker') || !hasToken(config, 'admin');

/** The request's host (name and port), or undefined when it does not parse. */
function requestHost(c: Context): { hostname: string; port: string; host: string } | undefined {
  const header = c.req.header('host');
  try {
    // Without a Host header (app.request() in tests, some runtimes) the URL's own host stands in.
    const url = header === undefined ? new URL(c.req.url) : new URL(`http://${header}/`);
    return { hostname: url.hostname, port: url.port, host: url.host };
  } catch {
    return undefined;
  }
}

/**
 * The first middleware: refuses an unparseable Host (400) everywhere and, in
 * open mode, a Host that is not a loopback name on our port (421).
 */
export function hostGuard(config: Config): MiddlewareHandler {
  const open = isOpenMode(config);
  return async function checkHost(c, next) {
    const host = requestHost(c);
    if (!host) {
      // The request's one log line (src/api/request-log.ts) says which Host it was.
      logField(c, { host: (c.req.header('host') ?? '').slice(0, 100) });
      throw new LeaseholdError('invalid_request', 'the Host header is not a valid host name', 'host');
    }
    if (open) {
      // Port 0 means "any port": a server that took a free one (not in the
      // config), or a Worker, which is not told its port (src/runtime/cloudflare.ts).
      // The name is what stops a rebound page; the port only narrows it.
      const portOk = config.port === 0 || host.port === '' || host.port === String(config.port);
      if (!LOOPBACK_NAMES.has(host.hostname) || !portOk) {
        throw new LeaseholdError(
          'misdirected_request',
          `without tokens leasehold answers only to 127.0.0.1, localhost and [::1] on its own port, not ${host.host}: set LEASEHOLD_WORKER_TOKEN and LEASEHOLD_ADMIN_TOKEN to serve other names`,
          'host',
        );
      }
    }
    await next();
  };
}

/** What hostGuard refuses, on every route: a Host that does not parse (400), and in open mode one that is not loopback (421). */
export const HOST_REFUSALS = ['invalid_request', 'misdirected_request'] as const satisfies readonly ErrorCode[];
/** What refuseSimpleCrossSite refuses on a write: a foreign page on an open route (403); the body's type is BODY_REFUSALS' (src/api/http.ts). */
export const CROSS_SITE_REFUSALS = ['forbidden'] as const satisfies readonly ErrorCode[];

/**
 * For every non-GET API call that reads a body (every POST does, see
 * requestBody in src/api/router.ts): JSON only, so a web page cannot send it
 * as a simple request; and on an open route (no token for its role), nothing
 * from another origin. A DELETE reads no body and may come without a type:
 * a page cannot send one cross-site without a preflight.
 */
export function refuseSimpleCrossSite(c: Context, o: { routeIsOpen: boolean; readsBody: boolean }): void {
  const type = c.req.header('content-type') ?? '';
  if (o.readsBody && !/^application\/json\s*(;|$)/i.test(type)) {
    throw new LeaseholdError('unsupported_media_type', 'send Content-Type: application/json on every call that is not a GET or a DELETE (the body may be empty where the call takes no fields)', 'content-type');
  }
  const routeIsOpen = o.routeIsOpen;
  if (!routeIsOpen) return;
  const site = c.req.header('sec-fetch-site');
  if (site !== undefined && site !== 'same-origin' && site !== 'none') {
    throw new LeaseholdError('forbidden', `a ${site} request cannot make this call: the server has no token for it, so only non-browser clients and its own pages may`, 'sec-fetch-site');
  }
  const origin = c.req.header('origin');
  if (origin !== undefined && !sameHost(origin, c)) {
    throw new LeaseholdError('forbidden', `a request from origin ${JSON.stringify(origin.slice(0, 100))} cannot make this call: the server has no token for it`, 'origin');
  }
}

/**
 * The dashboard's second CSRF layer, for every form POST (login included):
 * a browser says where a request comes from (`Sec-Fetch-Site`, `Origin`);
 * anything but our own pages is refused even with a valid CSRF token.
 * Returns why, or undefined when the request may go on.
 */
export function crossOriginFormProblem(c: Context): string | undefined {
  const site = c.req.header('sec-fetch-site');
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return `a ${site} request cannot change anything here`;
  const origin = c.req.header('origin');
  if (origin !== undefined && !sameHost(origin, c)) return `a form from origin ${JSON.stringify(origin.slice(0, 100))} cannot change anything here`;
  return undefined;
}

function sameHost(origin: string, c: Context): boolean {
  try {
    return new URL(origin).host === requestHost(c)?.host;
  } catch {
    // "null" (a sandboxed frame, a file) and anything else unparseable is foreign.
    return false;
  }
}
