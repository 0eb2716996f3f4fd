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
import { LeaseholdError } from '../core/errors.ts';
import { clientAddress, type AuthThrottle } from './throttle.ts';

export type Role = 'worker' | 'reader' | 'admin';

type TokenConfig = Pick<Config, 'workerToken' | 'adminToken' | 'readonlyToken'>;

/** The token whose absence leaves a role open. */
export function roleToken(role: Role, config: TokenConfig): string | undefined {
  return role === 'worker' ? config.workerToken : config.adminToken;
}

/** Compares without an early exit, so response time does not leak a token prefix. */
export function sameSecret(a: string, b: string): boolean {
  const x = new TextEncoder().encode(a);
  const y = new TextEncoder().encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < Math.max(x.length, y.length); i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
}

const ROLE_TOKENS: Record<Role, (keyof TokenConfig)[]> = {
  worker: ['workerToken', 'adminToken'],
  reader: ['readonlyToken', 'adminToken'],
  admin: ['adminToken'],
};
const TOKEN_NAMES: Record<keyof TokenConfig, string> = { workerToken: 'worker', adminToken: 'admin', readonlyToken: 'read-only' };

/** `throttle`: wrong tokens back a client off (src/api/throttle.ts). */
export function requireRole(role: Role, config: TokenConfig & Pick<Config, 'trustProxy'>, throttle?: AuthThrottle): MiddlewareHandler {
  const own = roleToken(role, config);
  const accepted = ROLE_TOKENS[role].map((k) => config[k]).filter((t): t is string => !!t);
  const others = (Object.keys(TOKEN_NAMES) as (keyof TokenConfig)[]).filter((k) => !ROLE_TOKENS[role].includes(k));
  const needs = ROLE_TOKENS[role].filter((k) => config[k]).map((k) => TOKEN_NAMES[k]).join(' or ');
  return async function authorize(c, next) {
    if (own) {
      const client = throttle ? clientAddress(c, config.trustProxy === 'true') : '';
      throttle?.check(client);
      const header = c.req.header('authorization') ?? '';
      const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
      if (!match) throw new LeaseholdError('unauthorized', 'send Authorization: Bearer <token>', 'authorization');
      if (!accepted.some((t) => sameSecret(t, match[1]!))) {
        const other = others.find((k) => config[k] && sameSecret(config[k], match[1]!));
        // A valid token of another role is not a guess: no back-off for it.
        if (other) throw new LeaseholdError('forbidden', `this call needs the ${needs} token; the ${TOKEN_NAMES[other]} token cannot make it`, 'authorization');
        throttle?.failed(client);
        throw new LeaseholdError('unauthorized', 'the bearer token is not valid', 'authorization');
      }
      throttle?.succeeded(client);
    }
    await next();
  };
}
