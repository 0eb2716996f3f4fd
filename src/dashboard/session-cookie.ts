/**
 * What the login page and the session guard share, built once per app: the
 * session keys (derived from the tokens), whether the dashboard is open (no
 * admin token: loopback development) and the session cookie's options.
 */
import type { Context } from 'hono';
import type { Config } from '../core/config.ts';
import { roleTokens } from '../core/tokens.ts';
import { SESSION_TTL_MS, SessionKeys } from './session.ts';

export interface DashboardSessions {
  keys: SessionKeys;
  /** No admin token is set: nobody logs in, every visitor acts as the open operator. */
  open: boolean;
  cookieOptions(c: Context): { path: string; httpOnly: boolean; sameSite: 'Strict'; secure: boolean; maxAge: number };
}

export function dashboardSessions(config: Config): DashboardSessions {
  const tokens = roleTokens(config);
  const keys = new SessionKeys(tokens);
  const trustProxy = config.trustProxy === 'true';
  const open = tokens.admin.length === 0;
  const cookieOptions = (c: Context) => ({
    path: '/dashboard',
    httpOnly: true,
    sameSite: 'Strict' as const,
    // Served over HTTPS directly, or behind a proxy we were told to trust that says so.
    secure: new URL(c.req.url).protocol === 'https:' || (trustProxy && c.req.header('x-forwarded-proto')?.split(',')[0]?.trim() === 'https'),
    maxAge: Math.floor(SESSION_TTL_MS / 1000),
  });
  return { keys, open, cookieOptions };
}
