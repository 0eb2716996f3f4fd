/**
 * The session and CSRF check in front of everything under /dashboard but the
 * login page: a visitor without a session is sent to log in (a polled
 * fragment gets a 401 to swap in); every form gets a fresh one-time token;
 * a POST must come from this origin, carry a valid unused token, and come
 * from an admin login (logging out aside).
 */
import type { Context, Hono } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import type { AppDeps } from '../api/deps.ts';
import { crossOriginFormProblem } from '../api/web-guards.ts';
import { ErrorPage } from './error-page.tsx';
import { alreadySubmitted, htmlDocument, readOnlyRefusal, type DashboardEnv } from './page.tsx';
import type { DashboardSessions } from './session-cookie.ts';
import { SESSION_COOKIE } from './session.ts';

type Env = DashboardEnv;

/** Who acts when the dashboard is open (loopback development, no admin token): nobody logged in. */
const OPEN_OPERATOR = 'open dashboard (no login)';

const page = htmlDocument;

export function registerSessionGuard(app: Hono<Env>, deps: Pick<AppDeps, 'store'>, sessions: DashboardSessions) {
  const { store } = deps;
  const { keys, open, cookieOptions } = sessions;
  const guard = async (c: Context<Env>, next: () => Promise<void>) => {
    if (c.req.path === '/dashboard/login') return next();
    let session = await keys.verify(getCookie(c, SESSION_COOKIE), Date.now());
    // Logged out: the cookie may still be signed and unexpired, but it is over.
    if (session && (await store.sessionIsRevoked({ sid: session.sid }))) session = undefined;
    if (!session) {
      if (open) {
        // Loopback development without an admin token: the dashboard is open,
        // but a session still exists so forms carry a CSRF token.
        const issued = await keys.issue('admin', Date.now(), { name: OPEN_OPERATOR });
        setCookie(c, SESSION_COOKIE, issued.cookie, cookieOptions(c));
        session = issued.session;
      } else if (c.req.method === 'GET' && !c.req.path.startsWith('/dashboard/live/')) {
        const url = new URL(c.req.url);
        return c.redirect(`/dashboard/login?next=${encodeURIComponent(url.pathname + url.search)}`, 303);
      } else {
        // A polled fragment swaps this in place (htmx 4 swaps 4xx responses).
        return c.html(<p class="notice error">Your session has expired: <a href="/dashboard/login">log in again</a>.</p>, 401);
      }
    }
    c.set('session', session);
    // A fresh one-time token for every form this answer renders (htmx fragments too).
    c.set('csrf', await keys.formToken(session, Date.now()));
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') {
      // Before the CSRF token: a page elsewhere cannot act even with a leaked one.
      const crossOrigin = crossOriginFormProblem(c);
      if (crossOrigin) return page(c, <ErrorPage title="Refused" message={`${crossOrigin}: nothing was changed.`} />, 403);
      const type = c.req.header('content-type') ?? '';
      const form = /^(application\/x-www-form-urlencoded|multipart\/form-data)/i.test(type) ? await c.req.parseBody() : {};
      const nonce = await keys.formTokenValid(session, form._csrf, Date.now());
      if (!nonce) {
        return page(c, <ErrorPage title="Refused" message="The form's CSRF token is missing or not valid for this session: nothing was changed. Reload the page and try again." />, 403);
      }
      // Used already: refused here with a clear answer; two copies racing are settled by the action's own batch.
      if (await store.formNonceUsed({ nonce: nonce.nonce })) return alreadySubmitted(c);
      c.set('formNonce', nonce);
      // Every state-changing route is refused to a read-only login here, once,
      // so a new POST route cannot forget it. Logging out changes nothing.
      if (session.role !== 'admin' && c.req.path !== '/dashboard/logout') return readOnlyRefusal(c);
    }
    return next();
  };
  app.use('/dashboard', guard);
  app.use('/dashboard/*', guard);
}
