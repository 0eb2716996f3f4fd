/**
 * A job's stored values on a page (payload, result, checkpoint, progress,
 * last error, the events' messages), each within a byte budget of HTML.
 *
 * A 1 MiB payload of arrays nested 256 deep, pretty-printed whole, made a
 * 250 MiB job page that took 6.6 s to render and stalled every other request
 * meanwhile, and the page re-polls every 2 s. So here:
 * - indentation stops at MAX_INDENT_DEPTH levels: deeper values are printed
 *   compact, on one line, so a line never starts with more than
 *   2 x MAX_INDENT_DEPTH spaces;
 * - printing stops once the field's budget is spent (the budget counts the
 *   bytes the escaped text takes in the page), and the page says how large
 *   the whole value is and links to it: the same route answers the raw JSON,
 *   shown in the browser or downloaded;
 * - a value longer than PARSE_LIMIT characters is not parsed at all: its
 *   stored (compact) text is cut instead.
 * The text is still escaped by JSX; the budget is only how much of it is shown.
 */
import { fmtCount } from './format.ts';

/** Levels of nesting that get their own indented lines. */
export const MAX_INDENT_DEPTH = 6;
/** Longer stored text is shown as stored (compact), not parsed and pretty-printed. */
const PARSE_LIMIT = 256 * 1024;
/** One event's message takes at most this much of the events' shared budget. */
export const EVENT_MESSAGE_BYTES = 1024;

export interface Clipped {
  text: string;
  /** False when the page shows only the start of the value. */
  complete: boolean;
}

/** What a cut text takes in the page. */
export interface Budgeted extends Clipped {
  pageBytes: number;
}

const FULL = Symbol('budget spent');

/**
 * JSON pretty-printed with at most `maxDepth` levels of indentation, and
 * generated only until `limit` characters are written.
 */
export function prettyBounded(value: unknown, limit: number, maxDepth = MAX_INDENT_DEPTH): Clipped {
  const out: string[] = [];
  let length = 0;
  const emit = (s: string) => {
    out.push(s);
    length += s.length;
    if (length > limit) throw FULL;
  };
  const walk = (v: unknown, depth: number): void => {
    if (v === null || typeof v !== 'object' || depth >= maxDepth) return emit(JSON.stringify(v) ?? 'null');
    const inner = `\n${'  '.repeat(depth + 1)}`;
    const close = `\n${'  '.repeat(depth)}`;
    if (Array.isArray(v)) {
      if (v.length === 0) return emit('[]');
      emit('[');
      for (let i = 0; i < v.length; i++) {
        emit(i === 0 ? inner : `,${inner}`);
        walk(v[i], depth + 1);
      }
      return emit(`${close}]`);
    }
    const keys = Object.keys(v);
    if (keys.length === 0) return emit('{}');
    emit('{');
    keys.forEach((key, i) => {
      emit(`${i === 0 ? inner : `,${inner}`}${JSON.stringify(key)}: `);
      walk((v as Record<string, unknown>)[key], depth + 1);
    });
    emit(`${close}}`);
  };
  try {
    walk(value, 0);
    return { text: out.join(''), complete: true };
  } catch (err) {
    if (err !== FULL) throw err;
    return { text: out.join(''), complete: false };
  }
}

/** Bytes one UTF-16 unit takes in the page once escaped (hono/jsx escapes & < > " '). */
function pageBytes(code: number): number {
  if (code === 38) return 5; // &amp;
  if (code === 60 || code === 62) return 4; // &lt; &gt;
  if (code === 34) return 6; // &quot;
  if (code === 39) return 5; // &#39;
  if (code < 0x80) return 1;
  if (code < 0x800) return 2;
  // A surrogate pair is 4 bytes, 2 for each half.
  return code >= 0xd800 && code <= 0xdfff ? 2 : 3;
}

/** The longest start of `text` that takes at most `budget` bytes in the page, never half a character. */
export function clipToBudget(text: string, budget: number): Budgeted {
  let used = 0;
  for (let i = 0; i < text.length; i++) {
    const bytes = pageBytes(text.charCodeAt(i));
    if (used + bytes > budget) {
      let end = i;
      const last = text.charCodeAt(end - 1);
      if (end > 0 && last >= 0xd800 && last <= 0xdbff) {
        end--;
        used -= 2;
      }
      return { text: text.slice(0, end), complete: false, pageBytes: used };
    }
    used += bytes;
  }
  return { text, complete: true, pageBytes: used };
}

/** Stored JSON text as the page shows it: pretty-printed (bounded), or as stored when it is not JSON or too long to parse. */
export function clipJson(stored: string, budget: number): Clipped {
  if (stored.length <= PARSE_LIMIT) {
    let value: unknown;
    let parsed = true;
    try {
      value = JSON.parse(stored);
    } catch {
      parsed = false;
    }
    if (parsed) {
      const printed = prettyBounded(value, budget);
      const clipped = clipToBudget(printed.text, budget);
      return { text: clipped.text, complete: printed.complete && clipped.complete };
    }
  }
  return clipToBudget(stored, budget);
}

/** UTF-8 bytes of a string, without encoding it. */
export function utf8Bytes(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    n += code < 0x80 ? 1 : code < 0x800 || (code >= 0xd800 && code <= 0xdfff) ? 2 : 3;
  }
  return n;
}

/** Where a job's stored value is answered whole, as JSON: `?inline` shows it in the browser. */
export const rawHref = (jobId: number, field: RawField, inline = false) => `/dashboard/jobs/${jobId}/raw/${field}${inline ? '?inline' : ''}`;
export const RAW_FIELDS = ['payload', 'result', 'checkpoint', 'progress', 'error', 'events'] as const;
export type RawField = (typeof RAW_FIELDS)[number];

/** The "part of it is shown" line under a cut value, with the links to all of it. */
export function CutNotice(props: { jobId: number; field: RawField; what: string }) {
  return (
    <p class="hint cut" id={`cut-${props.field}`}>
      {props.what} <a href={rawHref(props.jobId, props.field, true)}>show the rest</a> · <a href={rawHref(props.jobId, props.field)}>download</a> (JSON)
    </p>
  );
}

/** One stored value in a `<pre>`, within `budget` bytes, with the cut notice when it did not fit. */
export function StoredValue(props: { jobId: number; field: RawField; stored: string | null; budget: number; json: boolean; id?: string }) {
  if (props.stored === null) return <pre class="json" id={props.id}>—</pre>;
  const shown = props.json ? clipJson(props.stored, props.budget) : clipToBudget(props.stored, props.budget);
  return (
    <>
      <pre class="json" id={props.id}>
        {shown.complete ? shown.text : `${shown.text}…`}
      </pre>
      {shown.complete ? null : <CutNotice jobId={props.jobId} field={props.field} what={`Cut to fit the page: the whole value is ${fmtCount(utf8Bytes(props.stored))} bytes.`} />}
    </>
  );
}
