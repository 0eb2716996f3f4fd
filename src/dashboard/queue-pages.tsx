/**
 * One page of queues for the dashboard's per-queue pages (overview, alerts,
 * metrics, tuning). 10,000 queues once made the overview fragment 19.7 MB,
 * rendered again on every 2 s poll; a page now shows QUEUES_PER_PAGE of them,
 * the queues in trouble first, then by name, with an optional name filter.
 *
 * The page and filter travel in the query string (?page=2&q=mail) of both the
 * page and its polled fragment, so a poll keeps showing the page the operator
 * chose; the pager's links are plain links to the full page.
 */
import type { Context } from 'hono';

export const QUEUES_PER_PAGE = 50;
const MAX_PAGE = 100_000;

export interface QueueSelection {
  /** 1-based. */
  page: number;
  /** Part of a queue's name (case-insensitive); '' for every queue. */
  filter: string;
}

/** ?page= and ?q= from the request; a string says what is wrong with them. */
export function parseQueueSelection(c: Context): QueueSelection | string {
  const pageText = c.req.query('page') || undefined;
  const filter = (c.req.query('q') ?? '').trim();
  if (pageText !== undefined && !/^[1-9][0-9]{0,5}$/.test(pageText)) return `page: a whole number from 1 to ${MAX_PAGE}`;
  if (filter.length > 200) return 'q: at most 200 characters (part of a queue name)';
  return { page: pageText === undefined ? 1 : Math.min(MAX_PAGE, Number(pageText)), filter };
}

/** The query string for a selection ('' for the first page of every queue). */
export function queueSelectionQuery(s: QueueSelection): string {
  const p = new URLSearchParams();
  if (s.filter) p.set('q', s.filter);
  if (s.page > 1) p.set('page', String(s.page));
  const text = p.toString();
  return text ? `?${text}` : '';
}

export interface QueuePage<T> {
  items: T[];
  /** The page shown (past the last page: the last page). */
  page: number;
  pages: number;
  /** Queues that match the filter, and all queues. */
  matching: number;
  total: number;
  filter: string;
}

/**
 * The selected page of `all`: those whose name contains the filter, ordered by
 * trouble (larger first: firing alerts, expired leases, ...) and then by name.
 */
export function pageOfQueues<T>(all: readonly T[], s: QueueSelection, name: (t: T) => string, trouble: (t: T) => number): QueuePage<T> {
  const needle = s.filter.toLowerCase();
  const matching = needle ? all.filter((t) => name(t).toLowerCase().includes(needle)) : [...all];
  const ranked = matching.map((t) => ({ t, score: trouble(t), name: name(t) }));
  ranked.sort((a, b) => b.score - a.score || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const pages = Math.max(1, Math.ceil(ranked.length / QUEUES_PER_PAGE));
  const page = Math.min(s.page, pages);
  const items = ranked.slice((page - 1) * QUEUES_PER_PAGE, page * QUEUES_PER_PAGE).map((r) => r.t);
  return { items, page, pages, matching: ranked.length, total: all.length, filter: s.filter };
}

/** The filter form, outside the polled region so a poll does not wipe what is being typed. */
export function QueueFilterForm(props: { action: string; filter: string }) {
  return (
    <form method="get" action={props.action} class="queue-filter" role="search">
      <label>
        Queue name contains <input type="search" name="q" value={props.filter} maxlength={200} />
      </label>{' '}
      <button type="submit">Filter</button>
      {props.filter ? (
        <>
          {' '}
          <a href={props.action}>all queues</a>
        </>
      ) : null}
    </form>
  );
}

/** "Queues 51-100 of 2,000" and links to the pages around this one; nothing when every queue fits. */
export function QueuePager(props: { base: string; p: QueuePage<unknown> }) {
  const { p } = props;
  if (p.pages === 1 && !p.filter) return null;
  const link = (page: number, label: string, rel?: string) => (
    <a href={`${props.base}${queueSelectionQuery({ page, filter: p.filter })}`} rel={rel}>
      {label}
    </a>
  );
  const first = p.matching === 0 ? 0 : (p.page - 1) * QUEUES_PER_PAGE + 1;
  const last = Math.min(p.matching, p.page * QUEUES_PER_PAGE);
  const of = p.filter ? `${fmt(p.matching)} matching “${p.filter}” (of ${fmt(p.total)})` : fmt(p.total);
  return (
    <nav class="pager queue-pager" aria-label="queue pages">
      <span class="hint">
        Queues {fmt(first)}–{fmt(last)} of {of}, those in trouble first · page {p.page} of {p.pages}
      </span>{' '}
      {p.page > 1 ? (
        <>
          {link(1, '« first')} {link(p.page - 1, '‹ previous', 'prev')}{' '}
        </>
      ) : null}
      {p.page < p.pages ? (
        <>
          {link(p.page + 1, 'next ›', 'next')} {link(p.pages, 'last »')}
        </>
      ) : null}
    </nav>
  );
}

const fmt = (n: number) => n.toLocaleString('en-US');
