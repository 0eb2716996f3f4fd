/**
 * When a schedule's occurrences fall: a cron expression read in an IANA time
 * zone (croner, which runs on Node, Deno, Bun and Workers), or a fixed
 * interval from an anchor. Pure: every function takes the instant it reasons
 * about.
 *
 * Daylight saving: a cron time that does not exist on the day the clocks
 * spring forward runs at the first instant after the gap (02:30 in New York
 * on that day runs at 03:00 EDT); a time that happens twice when they fall
 * back runs once, at its first (daylight-time) instance.
 */
import { Cron } from 'croner';

export interface ScheduleSpec {
  cron: string | null;
  /** IANA time zone the cron expression is read in; null: UTC. */
  timeZone: string | null;
  intervalMs: number | null;
}

function cronOf(spec: ScheduleSpec): Cron {
  return new Cron(spec.cron!, { timezone: spec.timeZone ?? 'UTC' });
}

/** What is wrong with a spec (for a 400 naming the field), or null when it is usable. */
export function scheduleSpecProblem(spec: ScheduleSpec): { field: string; message: string } | null {
  if ((spec.cron === null) === (spec.intervalMs === null)) return { field: 'cron', message: 'give cron (with an optional timeZone) or intervalMs, not both and not neither' };
  if (spec.intervalMs !== null && spec.timeZone !== null) return { field: 'timeZone', message: 'timeZone goes with cron, not with intervalMs' };
  if (spec.cron === null) return null;
  try {
    new Cron(spec.cron);
  } catch (err) {
    return { field: 'cron', message: `cron is not a valid cron expression: ${(err as Error).message}` };
  }
  try {
    if (cronOf(spec).nextRun(new Date(0)) === null) return { field: 'cron', message: 'cron never matches a time' };
  } catch {
    return { field: 'timeZone', message: `timeZone must be an IANA time zone such as Europe/Berlin, got ${JSON.stringify(spec.timeZone)}` };
  }
  return null;
}

/** The first occurrence strictly after `afterMs`; for an interval, counted from `anchorMs`. Null: none. */
export function nextOccurrence(spec: ScheduleSpec, afterMs: number, anchorMs = afterMs): number | null {
  if (spec.intervalMs !== null) {
    const steps = afterMs < anchorMs ? 0 : Math.floor((afterMs - anchorMs) / spec.intervalMs) + 1;
    return anchorMs + steps * spec.intervalMs;
  }
  return cronOf(spec).nextRun(new Date(afterMs))?.getTime() ?? null;
}

/** The next `n` occurrences after `afterMs` (for the dashboard and the API). */
export function nextOccurrences(spec: ScheduleSpec, afterMs: number, n: number, anchorMs = afterMs): number[] {
  const out: number[] = [];
  let at = afterMs;
  while (out.length < n) {
    const next = nextOccurrence(spec, at, anchorMs);
    if (next === null) break;
    out.push(next);
    at = next;
  }
  return out;
}

/**
 * The latest occurrence in [fromMs, nowMs], `fromMs` being an occurrence
 * itself (the schedule's next_run_at): the one a pass enqueues when it finds
 * several missed. Null when fromMs is still in the future.
 */
export function latestDueOccurrence(spec: ScheduleSpec, fromMs: number, nowMs: number): number | null {
  if (fromMs > nowMs) return null;
  if (spec.intervalMs !== null) return fromMs + Math.floor((nowMs - fromMs) / spec.intervalMs) * spec.intervalMs;
  const [previous] = cronOf(spec).previousRuns(1, new Date(nowMs + 1));
  const latest = previous?.getTime();
  return latest !== undefined && latest >= fromMs ? latest : fromMs;
}
