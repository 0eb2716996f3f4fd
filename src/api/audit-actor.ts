/**
 * Who an API call acts as, for job events and the operator audit: the
 * `actor` body field where the route takes one, else the name of the token
 * it sent ("admin" for the single LEASEHOLD_ADMIN_TOKEN, as before named
 * tokens existed). The token's own name is always kept as the credential.
 */
import type { Context } from 'hono';
import { DEFAULT_TOKEN_NAME } from '../core/tokens.ts';
import { clientAddress, type ProxyTrust } from './throttle.ts';
import type { AuditActor } from '../db/store/port.ts';

export function apiActor(c: Context, config: ProxyTrust, bodyActor?: string): AuditActor {
  const p = c.get('principal');
  const tokenActor = !p || p.name === DEFAULT_TOKEN_NAME ? (p?.role ?? 'admin') : p.name;
  return {
    actor: bodyActor ?? tokenActor,
    role: p?.role ?? 'admin',
    credential: p?.name ?? null,
    source: 'api',
    client: clientAddress(c, config) || null,
  };
}
