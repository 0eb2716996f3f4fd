/**
 * /dashboard/login: the operator's name and a token (admin or read-only),
 * throttled per client, every failure folded into the audit trail; and
 * /dashboard/logout, which revokes the session. With no admin token set
 * (open) there is nothing to log in to.
 */
import type { Hono } from 'hono';
import { deleteCookie, setCookie } from 'hono/cookie';
import type { AppDeps } from '../api/deps.ts';
import { AuthThrottle, clientAddress } from '../api/throttle.ts';
import { crossOriginFormProblem } from '../api/web-guards.ts';
import { LeaseholdError } from '../core/errors.ts';
import { storableText } from '../core/text.ts';
import { alongside, once } from './acting.ts';
import { ErrorPage } from './error-page.tsx';
import { Layout } from './layout.tsx';
import { alreadySubmitted, htmlDocument, type DashboardEnv } from './page.tsx';
import type { DashboardSessions } from './session-cookie.ts';
import { OPERATOR_NAME_MAX, operatorName, SESSION_COOKIE } from './session.ts';

/** Failed logins from one client within this long of its entry add to that entry's count. */
const FAILED_LOGIN_WINDOW_MS = 60_000;

const page = htmlDocument;

/** Only dashboard-local paths are followed after login or an action. */
function safeLocal(path: unknown, fallback: string): string {
  return typeof path === 'string' && /^\/dashboard(?:[/?][A-Za-z0-9/_?=&%.-]*)?$/.test(path) && !path.includes('//') ? path : fallback;
}

/** Registered before the session guard: the login page is what a visitor without a session sees. */
export function registerLoginPage(app: Hono<DashboardEnv>, deps: AppDeps, sessions: DashboardSessions) {
  const { store, config, clock } = deps;
  const { keys, open, cookieOptions } = sessions;
  const throttle = deps.authThrottle ?? new AuthThrottle();

  app.get('/dashboard/login', (c) => {
    if (open) return c.redirect('/dashboard', 303);
    return page(c, <LoginPage next={safeLocal(c.req.query('next'), '/dashboard')} />);
  });

  app.post('/dashboard/login', async (c) => {
    if (open) return c.redirect('/dashboard', 303);
    const crossOrigin = crossOriginFormProblem(c);
    if (crossOrigin) return page(c, <ErrorPage title="Refused" message={`${crossOrigin}: log in from this dashboard's own page.`} />, 403);
    const form = await c.req.parseBody();
    const next = safeLocal(form.next, '/dashboard');
    const client = clientAddress(c, config);
    const typed = typeof form.name === 'string' ? storableText(form.name.trim(), OPERATOR_NAME_MAX) : '';
    try {
      throttle.check(client);
    } catch (err) {
      if (!(err instanceof LeaseholdError)) throw err;
      c.header('retry-after', String(err.details?.retryAfterSeconds ?? 1));
      return page(c, <LoginPage next={next} name={typed} error={`Too many wrong tokens from your address: ${err.message.replace(/^too many wrong tokens from this client: /, '')}.`} />, 429);
    }
    const named = operatorName(form.name);
    if ('problem' in named) return page(c, <LoginPage next={next} name={typed} error={named.problem} />, 400);
    const token = typeof form.token === 'string' ? form.token : '';
    // Every admin and read-only token compared every time, so timing does not tell which one matched.
    const login = keys.login(token);
    const by = { actor: named.name, credential: login?.tok ?? null, source: 'dashboard' as const, client: client || null };
    if (!login) {
      throttle.failed(client);
      // Folded per client and minute: a flood of guesses is one entry with a count, not a row each.
      await store.auditLoginFailed({ by: { ...by, role: 'none' }, reason: 'the token is not valid', windowMs: FAILED_LOGIN_WINDOW_MS, now: clock.now() });
      return page(c, <LoginPage next={next} name={named.name} error="That token is not valid." />, 401);
    }
    throttle.succeeded(client);
    const { cookie } = await keys.issue(login.role, Date.now(), { tok: login.tok, name: named.name });
    await store.auditInsert({ by: { ...by, role: login.role }, action: 'login', target: 'dashboard', now: clock.now() });
    setCookie(c, SESSION_COOKIE, cookie, cookieOptions(c));
    return c.redirect(next, 303);
  });
}

/** Registered after the session guard: logging out needs the session (and is the one POST a read-only login may send). */
export function registerLogout(app: Hono<DashboardEnv>, deps: AppDeps, sessions: DashboardSessions) {
  const { store, config, clock } = deps;
  const { open } = sessions;
  app.post('/dashboard/logout', async (c) => {
    const session = c.get('session');
    const also = alongside(c, { action: 'logout', target: 'dashboard', now: clock.now() }, config);
    if (!(await once(store, () => store.sessionRevoke({ sid: session.sid, expiresAt: session.exp, now: Date.now(), also })))) return alreadySubmitted(c);
    deleteCookie(c, SESSION_COOKIE, { path: '/dashboard' });
    return c.redirect(open ? '/dashboard' : '/dashboard/login', 303);
  });
}

export function LoginPage(props: { error?: string | undefined; next: string; name?: string | undefined }) {
  return (
    <Layout title="Log in" nav="none">
      {props.error ? <p class="notice error" role="alert" id="login-error">{props.error}</p> : null}
      <form method="post" action="/dashboard/login" class="login">
        <input type="hidden" name="next" value={props.next} />
        <label>
          Your name <span class="hint">(every action you take is recorded with it)</span>
          <input type="text" name="name" autocomplete="name" required maxlength={100} value={props.name ?? ''} autofocus={!props.name} />
        </label>
        <label>
          Admin or read-only token
          <input type="password" name="token" autocomplete="current-password" required autofocus={!!props.name} />
        </label>
        <button type="submit">Log in</button>
      </form>
    </Layout>
  );
}
