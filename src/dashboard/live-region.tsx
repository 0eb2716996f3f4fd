/** The htmx-polled region a page's live part sits in. */
import type { Child } from 'hono/jsx';

/** The polled region: its content is re-fetched from `src` every 2 s and swapped in. `id`: a second region on one page. */
export function Live(props: { src: string; id?: string; children?: Child }) {
  return (
    <div id={props.id ?? 'live'} hx-get={props.src} hx-trigger="every 2s" hx-swap="innerHTML">
      {props.children}
    </div>
  );
}
