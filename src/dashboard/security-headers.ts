/**
 * The headers of every dashboard answer: a strict content security policy
 * (scripts, styles and images from this origin only, no framing) and
 * no-store, so a page with a form token or job data is never cached.
 */
import type { Context, Hono } from 'hono';
import { secureHeaders } from 'hono/secure-headers';
import type { DashboardEnv } from './page.tsx';

export function registerSecurityHeaders(app: Hono<DashboardEnv>) {
  const headers = secureHeaders({
    contentSecurityPolicy: {
      defaultSrc: ["'none'"],
      scriptSrc: ["'self'"],
      styleSrc: ["'self'"],
      imgSrc: ["'self'"],
      connectSrc: ["'self'"],
      formAction: ["'self'"],
      baseUri: ["'none'"],
      frameAncestors: ["'none'"],
    },
    referrerPolicy: 'same-origin',
    xFrameOptions: 'DENY',
  });
  app.use('/dashboard', headers);
  app.use('/dashboard/*', headers);
  const noStore = async (c: Context, next: () => Promise<void>) => {
    await next();
    c.header('cache-control', 'no-store');
  };
  app.use('/dashboard', noStore);
  app.use('/dashboard/*', noStore);
}
