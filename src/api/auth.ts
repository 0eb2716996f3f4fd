/**
 * Bearer-token auth. Three roles: `worker` (claim, heartbeat, finish,
 * enqueue), `reader` (read-only observability: /metrics, GET /api/v1/metrics,
 * /alerts, /tuning; the read-only token, so a Prometheus scraper needs no
 * admin power) and `admin` (everything; the admin token is accepted for worker
 * and reader calls too). A role whose token is not configured is open: the
 * config check only allows that on a loopback address (and a read-only token
 * needs the admin token, so `reader` is open exactly when `admin` is).
 *
 * No token, or one that is nobody's: 401. A valid token of another role: 403.
 */
import type { MiddlewareHandler } from 'hono';
import type { Config } from '../core/config.ts';
import { LeaseholdError, type ErrorCode } from '../core/errors.ts';
import { matchToken, roleTokens, sameSecret, type NamedToken, type TokenRole } from '../core/tokens.ts';
import { clientAddress, type AuthThrottle, type ProxyTrust } from './throttle.ts';

export { sameSecret };

export type Role = 'worker' | 'reader' | 'admin';

type TokenConfig = Pick<Config, 'workerToken' | 'adminToken' | 'readonlyToken' | 'workerTokens' | 'adminTokens' | 'readonlyTokens'>;

/** Who a request authenticated as: the token's role and name; undefined while the role is open. */
export interface Principal {
  role: TokenRole;
  name: string;
}

declare module 'hono' {
  interface ContextVariableMap {
    principal: Principal | undefined;
  }
}

/** A token whose absence leaves a role open (any of the role's tokens). */
export function roleToken(role: Role, config: TokenConfig): string | undefined {
  const tokens = roleTokens(config);
  return (role === 'worker' ? tokens.worker : tokens.admin)[0]?.token;
}

/** The tokens each role takes: what requireRole admits, and what the OpenAPI document says each call takes. */
export const ROLE_TOKENS: Readonly<Record<Role, readonly TokenRole[]>> = {
  worker: ['worker', 'admin'],
  reader: ['readonly', 'admin'],
  admin: ['admin'],
};

/** What requireRole refuses: no token or nobody's (401), a valid token of another role (403), a client backed off for wrong tokens (429). */
export const ROLE_REFUSALS = ['unauthorized', 'forbidden', 'too_many_requests'] as const satisfies readonly ErrorCode[];

/** GET /metrics (the Prometheus text): the read-only token scrapes it, so a Prometheus needs no power to act. */
export const PROMETHEUS_ROLE: Role = 'reader';
const TOKEN_NAMES: Record<TokenRole, string> = { worker: 'worker', admin: 'admin', readonly: 'read-only' };

/** `throttle`: wrong tokens back a client off (src/api/throttle.ts). */
export function requireRole(role: Role, config: TokenConfig & ProxyTrust, throttle?: AuthThrottle): MiddlewareHandler {
  const own = roleToken(role, config);
  const tokens = roleTokens(config);
  const accepted: NamedToken[] = ROLE_TOKENS[role].flatMap((r) => tokens[r]);
  const others: NamedToken[] = (Object.keys(TOKEN_NAMES) as TokenRole[]).filter((r) => !ROLE_TOKENS[role].includes(r)).flatMap((r) => tokens[r]);
  const needs = ROLE_TOKENS[role].filter((r) => tokens[r].length > 0).map((r) => TOKEN_NAMES[r]).join(' or ');
  return async function authorize(c, next) {
    if (own) {
      const client = throttle ? clientAddress(c, config) : '';
      throttle?.check(client);
      const header = c.req.header('authorization') ?? '';
      const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
      if (!match) throw new LeaseholdError('unauthorized', 'send Authorization: Bearer <token>', 'authorization');
      // Every configured token is compared, so timing says nothing about which one (if any) matched.
      const found = matchToken(accepted, match[1]!).match;
      const other = matchToken(others, match[1]!).match;
      if (!found) {
        // A valid token of another role is not a guess: no back-off for it.
        if (other) throw new LeaseholdError('forbidden', `this call needs the ${needs} token; the ${TOKEN_NAMES[other.role]} token cannot make it`, 'authorization');
        throttle?.failed(client);
        throw new LeaseholdError('unauthorized', 'the bearer token is not valid', 'authorization');
      }
      throttle?.succeeded(client);
      c.set('principal', { role: found.role, name: found.name });
    }
    await next();
  };
}
