/**
 * Dashboard sessions, CSRF and one-time form tokens, on WebCrypto only (every
 * runtime).
 *
 * - The session is a cookie `payload.signature`: payload is base64url JSON
 *   `{ sid, role, exp, tok, name }` (`tok`: the name of the token it logged
 *   in with; `name`: the operator's name, what every action is recorded as).
 * - The key rule: each session is signed with a key derived from the token it
 *   logged in with, HMAC(token, purpose). So adding a token (a second admin
 *   token for rotation) changes no existing key and logs nobody out; changing
 *   or removing a token ends exactly the sessions it issued, admin or
 *   read-only; and a cookie can only claim the role of a token whose secret
 *   signed it. With no admin token (loopback development) the key is random
 *   per app instance.
 * - The CSRF token of a form is `nonce.issued.mac`, mac = HMAC("form:" + sid +
 *   nonce + issued) with the session's key: it is valid for its session only,
 *   until the session would have expired, and once (the action records the
 *   nonce as used in its own transaction; src/db/store/form-nonces.ts).
 */
import { matchToken, sameSecret, type NamedToken } from '../core/tokens.ts';

type DashboardRole = 'admin' | 'readonly';

export interface Session {
  sid: string;
  role: DashboardRole;
  /** Expiry, epoch ms. */
  exp: number;
  /** The name of the token this session logged in with ('open': no admin token is set). */
  tok: string;
  /** Who logged in: the operator's own name, as typed at login. */
  name: string;
}

export const SESSION_COOKIE = 'leasehold_session';
export const SESSION_TTL_MS = 12 * 3600 * 1000;
/** The longest operator name kept (characters, after trimming). */
export const OPERATOR_NAME_MAX = 100;
const OPEN = 'open';

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

const importKey = (secret: Uint8Array) => crypto.subtle.importKey('raw', secret as BufferSource, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);

async function derivedKey(token: string): Promise<CryptoKey> {
  // Derive: HMAC(token, purpose), so the cookie key is not the token itself.
  const tokenKey = await crypto.subtle.importKey('raw', enc.encode(token), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return importKey(new Uint8Array(await crypto.subtle.sign('HMAC', tokenKey, enc.encode('leasehold dashboard session key v2'))));
}

/** The operator's name from the login form: trimmed, 1-100 characters, no control characters; or what is wrong with it. */
export function operatorName(raw: unknown): { name: string } | { problem: string } {
  const name = typeof raw === 'string' ? raw.trim() : '';
  if (name === '') return { problem: 'Your name is required: every action you take is recorded with it.' };
  if ([...name].length > OPERATOR_NAME_MAX) return { problem: `Your name must be at most ${OPERATOR_NAME_MAX} characters.` };
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) return { problem: 'Your name cannot contain control characters.' };
  if (!name.isWellFormed()) return { problem: 'Your name contains half of a character (a lone UTF-16 surrogate): type it again.' };
  return { name };
}

export class SessionKeys {
  /** One key per token a session may be issued for, by "role:name". */
  private readonly keys = new Map<string, Promise<CryptoKey>>();
  private readonly tokens: NamedToken[];

  constructor(tokens: { admin: readonly NamedToken[]; readonly: readonly NamedToken[] }) {
    this.tokens = [...tokens.admin, ...tokens.readonly];
    for (const t of this.tokens) this.keys.set(`${t.role}:${t.name}`, derivedKey(t.token));
    if (tokens.admin.length === 0) this.keys.set(`admin:${OPEN}`, importKey(crypto.getRandomValues(new Uint8Array(32))));
  }

  /** The token a login form's secret is: every admin and read-only token compared, whichever matched. */
  login(secret: string): { role: DashboardRole; tok: string } | undefined {
    const { match } = matchToken(this.tokens, secret);
    if (!match) return undefined;
    return { role: match.role === 'admin' ? 'admin' : 'readonly', tok: match.name };
  }

  private keyOf(role: DashboardRole, tok: string): Promise<CryptoKey> | undefined {
    return this.keys.get(`${role}:${tok}`);
  }

  private async mac(key: Promise<CryptoKey>, text: string): Promise<string> {
    return b64url(new Uint8Array(await crypto.subtle.sign('HMAC', await key, enc.encode(text))));
  }

  /** `tok`: the token's name (login() says it); left out when the dashboard is open. */
  async issue(role: DashboardRole, nowMs: number, who: { tok?: string; name: string } = { name: 'operator' }): Promise<{ cookie: string; session: Session }> {
    const tok = who.tok ?? OPEN;
    const key = this.keyOf(role, tok);
    if (!key) throw new Error(`no ${role} token is named ${tok}`);
    const sid = b64url(crypto.getRandomValues(new Uint8Array(16)));
    const session: Session = { sid, role, exp: nowMs + SESSION_TTL_MS, tok, name: who.name };
    const payload = b64url(enc.encode(JSON.stringify(session)));
    return { cookie: `${payload}.${await this.mac(key, `session:${payload}`)}`, session };
  }

  /** The session a cookie value carries, if its signature holds under its token's key and it has not expired. */
  async verify(cookie: string | undefined, nowMs: number): Promise<Session | undefined> {
    if (!cookie || cookie.length > 2048) return undefined;
    const [payload, signature, extra] = cookie.split('.');
    if (!payload || !signature || extra !== undefined) return undefined;
    const bytes = fromB64url(signature);
    if (!bytes) return undefined;
    try {
      const raw = fromB64url(payload);
      const s = JSON.parse(new TextDecoder().decode(raw)) as Partial<Session>;
      if (typeof s.sid !== 'string' || (s.role !== 'admin' && s.role !== 'readonly') || typeof s.exp !== 'number' || typeof s.tok !== 'string' || typeof s.name !== 'string') {
        return undefined;
      }
      // Issued for a token that has since been rotated or removed: no key, over.
      const key = this.keyOf(s.role, s.tok);
      if (!key) return undefined;
      const ok = await crypto.subtle.verify('HMAC', await key, bytes as BufferSource, enc.encode(`session:${payload}`));
      if (!ok || s.exp <= nowMs) return undefined;
      return { sid: s.sid, role: s.role, exp: s.exp, tok: s.tok, name: s.name };
    } catch {
      return undefined;
    }
  }

  /** A fresh one-time form token for this session: `nonce.issued.mac`. */
  async formToken(session: Session, nowMs: number): Promise<string> {
    const nonce = b64url(crypto.getRandomValues(new Uint8Array(16)));
    const issued = String(nowMs);
    return `${nonce}.${issued}.${await this.mac(this.keyOf(session.role, session.tok)!, `form:${session.sid}:${nonce}:${issued}`)}`;
  }

  /**
   * The nonce of a form token, with when its record may be forgotten, if the
   * token was made for this session and is not older than a session can live.
   * Whether it was used already is the database's to say.
   */
  async formTokenValid(session: Session, token: unknown, nowMs: number): Promise<{ nonce: string; expiresAt: number } | undefined> {
    if (typeof token !== 'string' || token.length === 0 || token.length > 200) return undefined;
    const [nonce, issued, mac, extra] = token.split('.');
    if (!nonce || !issued || !mac || extra !== undefined || !/^[0-9]{1,15}$/.test(issued)) return undefined;
    const key = this.keyOf(session.role, session.tok);
    if (!key) return undefined;
    if (!sameSecret(await this.mac(key, `form:${session.sid}:${nonce}:${issued}`), mac)) return undefined;
    const issuedAt = Number(issued);
    if (issuedAt + SESSION_TTL_MS <= nowMs) return undefined;
    return { nonce, expiresAt: issuedAt + SESSION_TTL_MS };
  }
}
