/**
 * The dashboard as a browser uses it, through the app's own request handler:
 * GETs and form POSTs (redirects answered, not followed), a login that
 * answers the session cookie, and a page's CSRF token. `app` is read on every
 * call, so a file whose tests each build a new bed shares one browser.
 */
import { expect } from 'vitest';

type App = { request(path: string, init?: RequestInit): Response | Promise<Response> };

export interface BrowserRequest {
  /** Default: POST with a form, else GET. */
  method?: string;
  cookie?: string;
  /** Sent urlencoded, as a browser sends a form. */
  form?: Record<string, string>;
}

/** The `leasehold_session=...` cookie a login answered; throws when there is none. */
export function sessionCookie(res: Response): string {
  const set = res.headers.get('set-cookie') ?? '';
  const m = /leasehold_session=([^;]*)/.exec(set);
  if (!m) throw new Error(`no session cookie in ${JSON.stringify(set)}`);
  return `leasehold_session=${m[1]}`;
}

/** The CSRF token the dashboard put in a page's forms. */
export const csrfIn = (html: string): string => /name="_csrf" value="([^"]+)"/.exec(html)![1]!;

export function dashboardBrowser(app: () => App) {
  const req = async (path: string, init: BrowserRequest = {}): Promise<Response> => {
    const headers: Record<string, string> = {};
    if (init.cookie) headers.cookie = init.cookie;
    if (init.form) headers['content-type'] = 'application/x-www-form-urlencoded';
    return app().request(path, {
      method: init.method ?? (init.form ? 'POST' : 'GET'),
      headers,
      body: init.form ? new URLSearchParams(init.form).toString() : undefined,
      redirect: 'manual',
    });
  };
  return {
    req,
    /** Logs in with `token` under the operator name `name`: the session cookie (the login must answer 303). */
    async login(token: string, name = 'Ada'): Promise<string> {
      const res = await req('/dashboard/login', { form: { name, token, next: '/dashboard' } });
      expect(res.status).toBe(303);
      return sessionCookie(res);
    },
    /** The CSRF token of the forms on the page at `path`, as that session loads it. */
    async csrfOf(cookie: string, path: string): Promise<string> {
      return csrfIn(await (await req(path, { cookie })).text());
    },
  };
}
