/** Plain-text tables and values for the CLI's readable output (--json prints the API's answer instead). */
import { fmtDuration, fmtRelative } from '../dashboard/format.ts';

export { fmtDuration };

const MAX_CELL = 60;

/** Columns padded to their widest cell; a cell longer than 60 characters is cut with an ellipsis. */
export function table(header: readonly string[], rows: readonly (readonly unknown[])[]): string {
  const cells = rows.map((r) => r.map(cell));
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]!.length)));
  return [header, ...cells].map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n');
}

/** One value as a cell: null and undefined as "-", newlines flattened, long text cut. */
export function cell(v: unknown): string {
  if (v === null || v === undefined || v === '') return '-';
  const text = (typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v)).replace(/\s*\n\s*/g, ' ');
  return text.length > MAX_CELL ? `${text.slice(0, MAX_CELL - 1)}…` : text;
}

/** An ISO time from the API as "3.0 s ago" / "in 3.0 s" from `now`, or "-". */
export function relative(isoTime: string | null | undefined, now: number): string {
  if (!isoTime) return '-';
  return fmtRelative(Date.parse(isoTime), now);
}

/** "key: value" lines, keys aligned. */
export function facts(entries: readonly (readonly [string, unknown])[]): string {
  const width = Math.max(...entries.map(([k]) => k.length));
  return entries.map(([k, v]) => `${`${k}:`.padEnd(width + 1)} ${v === null || v === undefined || v === '' ? '-' : typeof v === 'object' ? JSON.stringify(v) : String(v)}`).join('\n');
}

/** "1 job" / "2 jobs". */
export const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
