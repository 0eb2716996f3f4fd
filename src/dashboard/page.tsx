/** The dashboard's page plumbing, shared by every group of routes. */
import type { Context } from 'hono';
import { html } from 'hono/html';
import type { Child } from 'hono/jsx';
import type { Session } from './session.ts';
import { ErrorPage } from './error-page.tsx';
import { Layout, type NavKey } from './layout.tsx';
import { MaintenanceBanner, type MaintenanceBannerState } from './maintenance-banner.tsx';
import type { FormNonce } from '../db/store/port.ts';

/** What a re-sent form (its one-time token already used) is told. */
export const ALREADY_SUBMITTED = 'This form was already submitted: nothing was changed this time. Reload the page for a fresh form, and check what the first submission did.';

/** What the session middleware puts on every dashboard request. */
export type DashboardEnv = {
  Variables: {
    session: Session;
    csrf: string;
    formNonce: FormNonce | undefined;
    /** Whether the reaper looks stopped, read for every full page (maintenance-banner.tsx). */
    maintenance: MaintenanceBannerState | undefined;
  };
};

type PageStatus = 200 | 400 | 401 | 403 | 404 | 409 | 429;

/** Any page body as a full HTML document. */
export function htmlDocument(c: Context, body: Child, status: PageStatus = 200) {
  return c.html(html`<!DOCTYPE html>${body}`, status);
}

/** A page inside the dashboard's layout (nav, logout form with the session's CSRF token). */
export function layoutPage(c: Context<DashboardEnv>, p: { title: string; nav: NavKey; loggedIn: boolean }, children: Child, status: PageStatus = 200) {
  return htmlDocument(
    c,
    <Layout
      title={p.title}
      nav={p.nav}
      csrf={c.get('csrf')}
      loggedIn={p.loggedIn}
      operator={p.loggedIn ? c.get('session')?.name : undefined}
      banner={<MaintenanceBanner state={c.get('maintenance')} />}
    >
      {children}
    </Layout>,
    status,
  );
}

/** What a form sent a second time gets: 409, nothing changed. */
export function alreadySubmitted(c: Context) {
  return htmlDocument(c, <ErrorPage title="Already submitted" message={ALREADY_SUBMITTED} />, 409);
}

/** What a read-only login gets for any action: 403, nothing changed. */
export function readOnlyRefusal(c: Context) {
  return htmlDocument(c, <ErrorPage title="Refused" message="This login is read-only: log in with the admin token to act. Nothing was changed." />, 403);
}
