/**
 * Bearer tokens, several per role, each with a name (for rotation
 * without downtime, and to say who did what in the audit).
 *
 * A role's tokens are its single setting (LEASEHOLD_ADMIN_TOKEN, named
 * "default") plus its list (LEASEHOLD_ADMIN_TOKENS=`name:token,name2:token2`).
 * To rotate: add the new token to the list, move clients over, remove the old
 * one. The rules, checked at start with one line per problem: a name is 1-40
 * of A-Z a-z 0-9 _ . - and unique within its role; a token is at least 16
 * characters and no two tokens are the same, in any role.
 */
export type TokenRole = 'admin' | 'worker' | 'readonly';

export interface NamedToken {
  role: TokenRole;
  name: string;
  token: string;
}

export type RoleTokens = Record<TokenRole, NamedToken[]>;

/** The token settings of Config (src/core/config.ts), which checks them with checkTokens. */
type TokenSettings = Record<'adminToken' | 'workerToken' | 'readonlyToken' | 'adminTokens' | 'workerTokens' | 'readonlyTokens', string | undefined>;

const SINGLE = { admin: 'adminToken', worker: 'workerToken', readonly: 'readonlyToken' } as const;
const LIST = { admin: 'adminTokens', worker: 'workerTokens', readonly: 'readonlyTokens' } as const;
const ROLES: readonly TokenRole[] = ['worker', 'admin', 'readonly'];

export const DEFAULT_TOKEN_NAME = 'default';
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$/;
const MIN_TOKEN = 16;

export interface TokenProblem {
  key: keyof TokenSettings;
  rule: string;
}

/** Every role's tokens, and what is wrong with the settings (empty when nothing). */
export function checkTokens(c: TokenSettings): RoleTokens & { errors: TokenProblem[] } {
  const errors: TokenProblem[] = [];
  const out: RoleTokens = { admin: [], worker: [], readonly: [] };
  for (const role of ROLES) {
    const single = c[SINGLE[role]];
    if (single !== undefined) {
      if (single.length < MIN_TOKEN) errors.push({ key: SINGLE[role], rule: `must be at least ${MIN_TOKEN} characters` });
      // Kept even when refused: the start refuses it, and an app built without
      // that check (a library user) must stay guarded by it, never turn open.
      out[role].push({ role, name: DEFAULT_TOKEN_NAME, token: single });
    }
    const list = c[LIST[role]];
    if (list === undefined) continue;
    const entries = list.split(',').map((e) => e.trim()).filter((e) => e !== '');
    if (entries.length === 0) errors.push({ key: LIST[role], rule: 'must be name:token pairs separated by commas, got no entry' });
    entries.forEach((entry, i) => {
      const colon = entry.indexOf(':');
      // The entry itself is never echoed: it holds a secret.
      if (colon <= 0) return errors.push({ key: LIST[role], rule: `entry ${i + 1} must be name:token (a name, a colon, then the token)` });
      const name = entry.slice(0, colon);
      const token = entry.slice(colon + 1);
      if (!NAME.test(name)) return errors.push({ key: LIST[role], rule: `entry ${i + 1}: the name must be 1-40 of A-Z a-z 0-9 _ . - (starting with a letter or digit)` });
      if (token.length < MIN_TOKEN) errors.push({ key: LIST[role], rule: `entry ${i + 1} (${name}): the token must be at least ${MIN_TOKEN} characters` });
      if (out[role].some((t) => t.name === name)) {
        const why = name === DEFAULT_TOKEN_NAME && single !== undefined ? ` (the name of ${envName(SINGLE[role])})` : '';
        return errors.push({ key: LIST[role], rule: `entry ${i + 1}: the name ${name} is used twice${why}` });
      }
      out[role].push({ role, name, token });
    });
  }
  // Fail closed: a role whose tokens were set but none could be read (malformed
  // entries) is guarded by a secret nobody has, not left open.
  for (const role of ROLES) {
    if (out[role].length === 0 && (c[SINGLE[role]] !== undefined || c[LIST[role]] !== undefined)) out[role].push({ role, name: 'unusable', token: unguessable() });
  }
  // One token for two roles would make a request's role a guess; for two names, its name.
  const all = ROLES.flatMap((r) => out[r]);
  all.forEach((t, i) => {
    const first = all.findIndex((u) => u.token === t.token);
    if (first === i) return;
    const other = all[first]!;
    const key = t.name === DEFAULT_TOKEN_NAME ? SINGLE[t.role] : LIST[t.role];
    const otherWhere = `the ${other.role === 'readonly' ? 'read-only' : other.role} token ${other.name}`;
    // The single settings' old wording, which operators may grep for.
    if (t.name === DEFAULT_TOKEN_NAME && other.name === DEFAULT_TOKEN_NAME) {
      errors.push({ key, rule: t.role === 'readonly' ? 'must differ from the admin and worker tokens' : `must differ from the ${other.role} token` });
    } else {
      errors.push({ key, rule: `${t.name}: must differ from ${otherWhere}` });
    }
  });
  return { ...out, errors };
}

const envName = (key: keyof TokenSettings) => `LEASEHOLD_${key.replace(/([A-Z])/g, '_$1').toUpperCase()}`;

/** Every role's tokens (the settings are checked at start; a broken entry is left out). */
export function roleTokens(c: TokenSettings): RoleTokens {
  const { admin, worker, readonly } = checkTokens(c);
  return { admin, worker, readonly };
}

/**
 * The token a presented secret is, if any. Every candidate is compared, in
 * full, whatever matched earlier: the time taken depends on how many tokens
 * are configured, not on which one (or which prefix) matched. `compared` says
 * how many were, for the tests.
 */
export function matchToken(candidates: readonly NamedToken[], presented: string): { match: NamedToken | undefined; compared: number } {
  let match: NamedToken | undefined;
  let compared = 0;
  for (const t of candidates) {
    compared++;
    if (sameSecret(t.token, presented) && match === undefined) match = t;
  }
  return { match, compared };
}

/** Compares without an early exit, so response time does not leak a token prefix. */
export function sameSecret(a: string, b: string): boolean {
  const x = new TextEncoder().encode(a);
  const y = new TextEncoder().encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < Math.max(x.length, y.length); i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
}

/** Whether a role has any token (a role without one is open: loopback only). */
export function hasToken(c: TokenSettings, role: TokenRole): boolean {
  return roleTokens(c)[role].length > 0;
}

/** A secret nobody holds (WebCrypto: every runtime). */
function unguessable(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}
