import { sameSecret } from '../api/auth.ts';
/**
 * Dashboard sessions and CSRF tokens, on WebCrypto only (every runtime).
 *
 * - The session is a cookie `payload.signature`: payload is base64url JSON
 *   `{ sid, role, exp, tok }`, signature HMAC-SHA256 over it. The key is
 *   derived from the admin token, so changing it logs everyone out; `tok` is
 *   a MAC of the token the session logged in with, so changing or removing
 *   the read-only token ends read-only sessions too. With no admin token
 *   (loopback development) the key is random per app instance.
 * - The CSRF token of a session is HMAC("csrf:" + sid): every POST form carries
 *   it and every state-changing request must send it back.
 */
type DashboardRole = 'admin' | 'readonly';

export interface Session {
  sid: string;
  role: DashboardRole;
  /** Expiry, epoch ms. */
  exp: number;
  /**
   * A MAC of the token that logged this session in, so a session ends when
   * its token is changed or removed (the admin token also keys every cookie).
   */
  tok: string;
}

export const SESSION_COOKIE = 'leasehold_session';
export const SESSION_TTL_MS = 12 * 3600 * 1000;

const enc = new TextEncoder();

function b64url(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function fromB64url(text: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return undefined;
  try {
    const s = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
    return Uint8Array.from(s, (ch) => ch.charCodeAt(0));
  } catch {
    return undefined;
  }
}


export class SessionKeys {
  private key: Promise<CryptoKey>;

  /** The tokens a session may have been issued for, by role. */
  private readonly tokens: Record<DashboardRole, string | undefined>;

  constructor(adminToken: string | undefined, readonlyToken?: string) {
    this.tokens = { admin: adminToken, readonly: readonlyToken };
    this.key = (async () => {
      let secret: Uint8Array;
      if (adminToken) {
        // Derive: HMAC(admin token, purpose), so the cookie key is not the token itself.
        const tokenKey = await crypto.subtle.importKey('raw', enc.encode(adminToken), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
        secret = new Uint8Array(await crypto.subtle.sign('HMAC', tokenKey, enc.encode('leasehold dashboard session key v1')));
      } else {
        secret = crypto.getRandomValues(new Uint8Array(32));
      }
      return crypto.subtle.importKey('raw', secret as BufferSource, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
    })();
  }

  private async mac(text: string): Promise<string> {
    return b64url(new Uint8Array(await crypto.subtle.sign('HMAC', await this.key, enc.encode(text))));
  }

  /** Which token a session stands for; '' for the open (token-less) dashboard. */
  private async tokenMac(role: DashboardRole): Promise<string> {
    const token = this.tokens[role];
    return token ? (await this.mac(`token:${role}:${token}`)).slice(0, 22) : '';
  }

  async issue(role: DashboardRole, nowMs: number): Promise<{ cookie: string; session: Session }> {
    const sid = b64url(crypto.getRandomValues(new Uint8Array(16)));
    const session: Session = { sid, role, exp: nowMs + SESSION_TTL_MS, tok: await this.tokenMac(role) };
    const payload = b64url(enc.encode(JSON.stringify(session)));
    return { cookie: `${payload}.${await this.mac(`session:${payload}`)}`, session };
  }

  /** The session a cookie value carries, if its signature holds and it has not expired. */
  async verify(cookie: string | undefined, nowMs: number): Promise<Session | undefined> {
    if (!cookie || cookie.length > 1024) return undefined;
    const [payload, signature, extra] = cookie.split('.');
    if (!payload || !signature || extra !== undefined) return undefined;
    const bytes = fromB64url(signature);
    if (!bytes) return undefined;
    const ok = await crypto.subtle.verify('HMAC', await this.key, bytes as BufferSource, enc.encode(`session:${payload}`));
    if (!ok) return undefined;
    try {
      const raw = fromB64url(payload);
      const s = JSON.parse(new TextDecoder().decode(raw)) as Partial<Session>;
      if (typeof s.sid !== 'string' || (s.role !== 'admin' && s.role !== 'readonly') || typeof s.exp !== 'number' || typeof s.tok !== 'string') return undefined;
      if (s.exp <= nowMs) return undefined;
      // Issued for a token that has since been rotated or removed: over.
      if (!sameSecret(s.tok, await this.tokenMac(s.role))) return undefined;
      return { sid: s.sid, role: s.role, exp: s.exp, tok: s.tok };
    } catch {
      return undefined;
    }
  }

  csrfToken(session: Session): Promise<string> {
    return this.mac(`csrf:${session.sid}`);
  }

  async csrfValid(session: Session, token: unknown): Promise<boolean> {
    if (typeof token !== 'string' || token.length === 0 || token.length > 200) return false;
    return sameSecret(await this.csrfToken(session), token);
  }
}
