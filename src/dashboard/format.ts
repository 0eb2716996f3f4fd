/** Small formatting helpers for the dashboard (pure; no HTML). */
export function fmtTime(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? '—' : new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

export function fmtDuration(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < 1000) return `${Math.round(abs)} ms`;
  if (abs < 60_000) return `${(abs / 1000).toFixed(1)} s`;
  if (abs < 3_600_000) return `${Math.floor(abs / 60_000)} m ${Math.floor((abs % 60_000) / 1000)} s`;
  if (abs < 86_400_000) return `${Math.floor(abs / 3_600_000)} h ${Math.floor((abs % 3_600_000) / 60_000)} m`;
  return `${Math.floor(abs / 86_400_000)} d ${Math.floor((abs % 86_400_000) / 3_600_000)} h`;
}

/** A duration, or — when there is none. */
export function fmtOptionalDuration(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? '—' : fmtDuration(ms);
}

/** A count with thousands separators: 1,000,000 reads at a glance, 1000000 does not. */
export function fmtCount(n: number): string {
  return n.toLocaleString('en-US');
}

/** "3.0 s ago" or "in 3.0 s". */
export function fmtRelative(at: number | null | undefined, now: number): string {
  if (at === null || at === undefined) return '—';
  return at <= now ? `${fmtDuration(now - at)} ago` : `in ${fmtDuration(at - now)}`;
}
