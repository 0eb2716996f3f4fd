/**
 * Bearer-token auth. Two roles: `worker` (claim, heartbeat, finish, enqueue)
 * and `admin` (everything; the admin token is accepted for worker calls too).
 * A role whose token is not configured is open: the config check only allows
 * that on a loopback address.
 */
import type { MiddlewareHandler } from 'hono';
import type { Config } from '../core/config.ts';
import { LeaseholdError } from '../core/errors.ts';
import { clientAddress, type AuthThrottle } from './throttle.ts';

export type Role = 'worker' | 'admin';

/** Compares without an early exit, so response time does not leak a token prefix. */
export function sameSecret(a: string, b: string): boolean {
  const x = new TextEncoder().encode(a);
  const y = new TextEncoder().encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < Math.max(x.length, y.length); i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
}

/** `throttle`: wrong tokens back a client off (src/api/throttle.ts). */
export function requireRole(role: Role, config: Pick<Config, 'workerToken' | 'adminToken' | 'trustProxy'>, throttle?: AuthThrottle): MiddlewareHandler {
  const own = role === 'admin' ? config.adminToken : config.workerToken;
  const accepted = [config.adminToken, role === 'worker' ? config.workerToken : undefined].filter((t): t is string => !!t);
  return async function authorize(c, next) {
    if (own) {
      const client = throttle ? clientAddress(c, config.trustProxy === 'true') : '';
      throttle?.check(client);
      const header = c.req.header('authorization') ?? '';
      const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
      if (!match) throw new LeaseholdError('unauthorized', 'send Authorization: Bearer <token>', 'authorization');
      if (!accepted.some((t) => sameSecret(t, match[1]!))) {
        const isOtherRole = role === 'admin' && config.workerToken && sameSecret(config.workerToken, match[1]!);
        if (isOtherRole) throw new LeaseholdError('forbidden', 'this call needs the admin token; the worker token cannot make it', 'authorization');
        throttle?.failed(client);
        throw new LeaseholdError('unauthorized', 'the bearer token is not valid', 'authorization');
      }
      throttle?.succeeded(client);
    }
    await next();
  };
}
