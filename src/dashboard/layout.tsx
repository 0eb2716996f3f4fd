/**
 * The frame of every dashboard page: head, navigation, the logout form and
 * the banner slot. Every value here and in the pages is rendered as JSX text
 * or attribute, which hono/jsx escapes; nothing in the dashboard uses raw HTML.
 */
import type { Child } from 'hono/jsx';

export type NavKey = 'overview' | 'jobs' | 'zombies' | 'dead-letters' | 'workers' | 'schedules' | 'metrics' | 'alerts' | 'tuning' | 'audit' | 'none';

/** `banner`: shown above the page's title on every page (the reaper-late banner). */
export function Layout(props: { title: string; nav: NavKey; csrf?: string | undefined; loggedIn?: boolean; operator?: string | undefined; banner?: Child; children?: Child }) {
  const link = (key: NavKey, href: string, label: string) => (
    <a href={href} class={props.nav === key ? 'active' : undefined} aria-current={props.nav === key ? 'page' : undefined}>
      {label}
    </a>
  );
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="htmx-config" content='{"includeIndicatorCSS": false}' />
        <title>{props.title} · leasehold</title>
        <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
        <link rel="stylesheet" href="/dashboard.css" />
        <script src="/htmx.min.js" defer></script>
      </head>
      <body>
        <header>
          <strong class="brand">leasehold</strong>
          <nav>
            {link('overview', '/dashboard', 'Overview')}
            {link('jobs', '/dashboard/jobs', 'Jobs')}
            {link('zombies', '/dashboard/zombies', 'Zombies')}
            {link('dead-letters', '/dashboard/dead-letters', 'Dead letters')}
            {link('workers', '/dashboard/workers', 'Workers')}
            {link('schedules', '/dashboard/schedules', 'Schedules')}
            {link('metrics', '/dashboard/metrics', 'Metrics')}{link('alerts', '/dashboard/alerts', 'Alerts')}{link('tuning', '/dashboard/tuning', 'Tuning')}
            {link('audit', '/dashboard/audit', 'Audit')}
          </nav>
          {props.loggedIn && props.csrf ? (
            <form method="post" action="/dashboard/logout" class="logout">
              <input type="hidden" name="_csrf" value={props.csrf} />
              {props.operator ? <span class="operator" id="operator">{props.operator}</span> : null}
              <button type="submit">Log out</button>
            </form>
          ) : null}
        </header>
        <main>
          {props.banner}
          <h1>{props.title}</h1>
          {props.children}
        </main>
      </body>
    </html>
  );
}
