/**
 * When a schedule's occurrences fall: a cron expression read in an IANA time
 * zone, or a fixed interval from an anchor. Pure: every function takes the
 * instant it reasons about.
 *
 * croner matches the expression against wall-clock times only (it runs in
 * UTC here, where no clock jumps); this file maps those wall times to
 * instants in the zone (src/core/zone-clock.ts), so the daylight-saving rule
 * is ours, not a side effect of a library's stepping:
 *
 * - An expression with a fixed hour (`30 2 * * *`, `0,30 1 * * *`,
 *   `0 9-17 * * MON-FRI`) names times of day, and each runs once a day: a
 *   time the clock shows twice when it falls back runs at its first instance
 *   only; a time the clock skips when it springs forward runs once, at the
 *   first instant after the gap (02:00 and 02:30 in New York on that day both
 *   run as one occurrence at 03:00 EDT).
 * - An expression whose hour field is `*` or `*` with a step (`0 * * * *`,
 *   `*\/15 * * * *`, `* * * * * *`) follows the clock as it runs: every real
 *   instant whose wall time matches is an occurrence (both 01:30s on the
 *   fall-back night), and skipped wall times are not made up.
 *
 * That is the rule of cron(8) (Vixie cron), where "wildcard" jobs follow the
 * clock and fixed-time jobs are adjusted.
 *
 * Cost: parsed expressions are kept (a bounded cache keyed by expression and
 * zone), and an expression that is a fixed period in real time (every
 * second, every 5 minutes...) is computed by arithmetic, so a pass over many
 * every-second schedules after a long gap does a few operations per schedule.
 */
import { Cron } from 'croner';
import { zoneClock, type Transition, type ZoneClock } from './zone-clock.ts';

export interface ScheduleSpec {
  cron: string | null;
  /** IANA time zone the cron expression is read in; null: UTC. */
  timeZone: string | null;
  intervalMs: number | null;
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;

const NICKNAMES: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

/** The six fields (seconds first) of an expression, or null for a shape we do not take apart (croner still reads it). */
function fieldsOf(cron: string): string[] | null {
  const text = cron.trim();
  const parts = (NICKNAMES[text.toLowerCase()] ?? text).split(/\s+/);
  if (parts.length === 5) return ['0', ...parts];
  return parts.length === 6 ? parts : null;
}

const stepOf = (field: string): number | null => {
  if (field === '*') return 1;
  const m = /^(?:\*|0)\/([0-9]{1,2})$/.exec(field);
  return m ? Number(m[1]) : null;
};

/**
 * The expression as a fixed period in real time, when it is one in every zone
 * leasehold may read it in: every n seconds (n dividing 60), or at one second
 * of every n minutes (n dividing 15, so that every zone offset in use, a whole
 * number of quarter hours, keeps it on the same instants). Null otherwise.
 */
function periodOf(fields: string[] | null): { period: number; phase: number } | null {
  if (!fields) return null;
  const [sec, min, ...rest] = fields as [string, string, ...string[]];
  if (!rest.every((f) => f === '*' || f === '?')) return null;
  const secStep = stepOf(sec);
  if (secStep !== null && min === '*') return 60 % secStep === 0 ? { period: secStep * SECOND, phase: 0 } : null;
  const minStep = stepOf(min);
  if (minStep !== null && /^[0-9]{1,2}$/.test(sec) && Number(sec) < 60 && 15 % minStep === 0) return { period: minStep * MINUTE, phase: Number(sec) * SECOND };
  return null;
}

interface Compiled {
  /** The expression over wall-clock time: wall times are epoch ms read as UTC. */
  wall: Cron;
  zone: ZoneClock;
  /** The hour field is `*` (with or without a step): occurrences follow the clock, twice-shown times twice. */
  followsClock: boolean;
  fixedPeriod: { period: number; phase: number } | null;
}

/** Parsed expressions, most recently used last; enough for every schedule a pass fires. */
const CACHE_LIMIT = 1000;
const cache = new Map<string, Compiled>();

function compiled(spec: ScheduleSpec): Compiled {
  const key = `${spec.timeZone ?? 'UTC'}\u0000${spec.cron}`;
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key);
    cache.set(key, hit);
    return hit;
  }
  const fields = fieldsOf(spec.cron!);
  const made: Compiled = {
    wall: new Cron(spec.cron!, { timezone: 'UTC' }),
    zone: zoneClock(spec.timeZone),
    followsClock: fields !== null && fields[2]!.startsWith('*'),
    fixedPeriod: periodOf(fields),
  };
  cache.set(key, made);
  if (cache.size > CACHE_LIMIT) cache.delete(cache.keys().next().value!);
  return made;
}

// Wall-clock matches: a wall time is epoch ms read as UTC. croner's nextRun is
// strictly after the date it is given and previousRuns strictly before, to the ms.
const wallAfter = (c: Compiled, w: number) => c.wall.nextRun(new Date(w))?.getTime() ?? null;
const wallAtOrAfter = (c: Compiled, w: number) => wallAfter(c, w - 1);
const wallBefore = (c: Compiled, w: number) => c.wall.previousRuns(1, new Date(w))[0]?.getTime() ?? null;
const wallAtOrBefore = (c: Compiled, w: number) => wallBefore(c, w + 1);

const local = (c: Compiled, t: number) => t + c.zone.offset(t);
const fallsBack = (tr: Transition | null): tr is Transition => tr !== null && tr.before > tr.after;
/** t lies in the repeated hour after a fall-back (its wall time was shown once already). */
const inSecondPass = (tr: Transition | null, t: number): tr is Transition => fallsBack(tr) && t >= tr.at && t < tr.at + tr.before - tr.after;
/** t lies in the hour before a fall-back (its wall time will be shown again). */
const inFirstPass = (tr: Transition | null, t: number): tr is Transition => fallsBack(tr) && t < tr.at && t >= tr.at - (tr.before - tr.after);

/** The instants whose wall time is w, in order: none (in a gap), one, or two (in a fold). */
function instantsOf(c: Compiled, w: number): { instants: number[]; gap: Transition | null } {
  const tr = c.zone.transitionNear(w);
  if (!tr) return { instants: [w - c.zone.offset(w)], gap: null };
  const instants = [w - tr.before, w - tr.after].filter((t, i) => (i === 0 ? t < tr.at : t >= tr.at)).sort((a, b) => a - b);
  return { instants, gap: instants.length === 0 ? tr : null };
}

/** Fixed-hour rule: a wall time's first instance, or for a time in a gap the first instant after it. */
function onceAt(c: Compiled, w: number): number {
  const { instants, gap } = instantsOf(c, w);
  return gap ? gap.at : instants[0]!;
}

function nextCron(c: Compiled, after: number): number | null {
  if (c.fixedPeriod) {
    const { period, phase } = c.fixedPeriod;
    return phase + (Math.floor((after - phase) / period) + 1) * period;
  }
  const tr = c.zone.transitionNear(after);
  if (!c.followsClock) {
    // In the repeated hour, the times up to its end ran in its first pass already.
    const w = inSecondPass(tr, after) ? wallAtOrAfter(c, tr.at + tr.before) : wallAfter(c, local(c, after));
    return w === null ? null : onceAt(c, w);
  }
  let w = wallAfter(c, local(c, after));
  if (w !== null && inFirstPass(tr, after) && w >= tr.at + tr.before) {
    // Nothing more before the clock goes back: the next is in the repeated hour (or after it).
    const again = wallAtOrAfter(c, tr.at + tr.after);
    return again === null ? null : again - tr.after;
  }
  for (let i = 0; w !== null && i < 3; i++) {
    const { instants, gap } = instantsOf(c, w);
    const next = instants.find((t) => t > after);
    if (next !== undefined) return next;
    // A wall time the clock skipped: not made up; the first one after the gap.
    w = gap ? wallAtOrAfter(c, gap.at + gap.after) : wallAfter(c, w);
  }
  return null;
}

function latestCron(c: Compiled, now: number): number | null {
  if (c.fixedPeriod) {
    const { period, phase } = c.fixedPeriod;
    return phase + Math.floor((now - phase) / period) * period;
  }
  const tr = c.zone.transitionNear(now);
  if (!c.followsClock) {
    const w = inSecondPass(tr, now) ? wallBefore(c, tr.at + tr.before) : wallAtOrBefore(c, local(c, now));
    return w === null ? null : onceAt(c, w);
  }
  if (inSecondPass(tr, now)) {
    const w = wallAtOrBefore(c, local(c, now));
    if (w !== null && w >= tr.at + tr.after) return w - tr.after;
    // Nothing yet in the repeated hour: the last one before the clock went back.
    const before = wallBefore(c, tr.at + tr.before);
    return before === null ? null : before - tr.before;
  }
  let w = wallAtOrBefore(c, local(c, now));
  for (let i = 0; w !== null && i < 3; i++) {
    const { instants, gap } = instantsOf(c, w);
    const latest = instants.filter((t) => t <= now).at(-1);
    if (latest !== undefined) return latest;
    w = gap ? wallBefore(c, gap.at + gap.before) : wallBefore(c, w);
  }
  return null;
}

/**
 * What each field may hold, seconds first: numbers, `*`, lists, ranges and
 * steps everywhere; `?` and `L`/`W` in day of month; names (JAN, MON) in
 * month and day of week, where `?`, `L` and `#` also go. croner reads more
 * (a seventh field for the year, words in any field, `@reboot`): refused,
 * because it is not what the docs promise, and a year field in particular
 * reads as a schedule that silently stops.
 */
const FIELD_SHAPES: { name: string; shape: RegExp }[] = [
  { name: 'second', shape: /^[0-9*,/-]+$/ },
  { name: 'minute', shape: /^[0-9*,/-]+$/ },
  { name: 'hour', shape: /^[0-9*,/-]+$/ },
  { name: 'day of month', shape: /^(?:[0-9*,/?-]|L|W)+$/i },
  { name: 'month', shape: /^(?:[0-9*,/-]|JAN|FEB|MAR|APR|MAY|JUN|JUL|AUG|SEP|OCT|NOV|DEC)+$/i },
  { name: 'day of week', shape: /^(?:[0-9*,/?#-]|L|SUN|MON|TUE|WED|THU|FRI|SAT)+$/i },
];

/** An expression of a shape the docs do not promise (not 5 or 6 fields, nor a nickname), or a field holding what it may not; null when fine. */
export function cronShapeProblem(cron: string): string | null {
  const text = cron.trim();
  if (text.startsWith('@')) {
    return NICKNAMES[text.toLowerCase()] ? null : `cron nickname ${JSON.stringify(text)} is not one of ${Object.keys(NICKNAMES).join(', ')}`;
  }
  const parts = text.split(/\s+/);
  if (parts.length !== 5 && parts.length !== 6) {
    return `cron must have 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first), got ${parts.length}${parts.length === 7 ? ': a seventh (year) field is not supported' : ''}`;
  }
  const shapes = parts.length === 5 ? FIELD_SHAPES.slice(1) : FIELD_SHAPES;
  for (const [i, part] of parts.entries()) {
    const { name, shape } = shapes[i]!;
    if (!shape.test(part)) return `cron's ${name} field ${JSON.stringify(part)} is not a number, *, list, range or step${name.startsWith('day') || name === 'month' ? ' (or a name or modifier that field takes)' : ''}`;
  }
  return null;
}

/** What is wrong with a spec (for a 400 naming the field), or null when it is usable. */
export function scheduleSpecProblem(spec: ScheduleSpec): { field: string; message: string } | null {
  if ((spec.cron === null) === (spec.intervalMs === null)) return { field: 'cron', message: 'give cron (with an optional timeZone) or intervalMs, not both and not neither' };
  if (spec.intervalMs !== null && spec.timeZone !== null) return { field: 'timeZone', message: 'timeZone goes with cron, not with intervalMs' };
  if (spec.cron === null) return null;
  const shape = cronShapeProblem(spec.cron);
  if (shape) return { field: 'cron', message: shape };
  try {
    new Cron(spec.cron, { timezone: 'UTC' });
  } catch (err) {
    return { field: 'cron', message: `cron is not a valid cron expression: ${(err as Error).message}` };
  }
  try {
    zoneClock(spec.timeZone);
  } catch {
    return { field: 'timeZone', message: `timeZone must be an IANA time zone such as Europe/Berlin, got ${JSON.stringify(spec.timeZone)}` };
  }
  if (compiled(spec).wall.nextRun(new Date(0)) === null) return { field: 'cron', message: 'cron never matches a time' };
  return null;
}

/** The first occurrence strictly after `afterMs`; for an interval, counted from `anchorMs`. Null: none. */
export function nextOccurrence(spec: ScheduleSpec, afterMs: number, anchorMs = afterMs): number | null {
  if (spec.intervalMs !== null) {
    const steps = afterMs < anchorMs ? 0 : Math.floor((afterMs - anchorMs) / spec.intervalMs) + 1;
    return anchorMs + steps * spec.intervalMs;
  }
  return nextCron(compiled(spec), afterMs);
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
  const latest = latestCron(compiled(spec), nowMs);
  return latest !== null && latest >= fromMs ? latest : fromMs;
}

/**
 * How many occurrences in [fromMs, latestMs) a pass skips when it runs only
 * latestMs (both occurrences; fromMs counts as one). Exact by arithmetic for
 * an interval or a fixed-period expression; otherwise counted one occurrence
 * at a time, at most `maxSteps` of them: `steps` says how many were used, and
 * `exact: false` that the count stopped there (it is a lower bound).
 */
export function missedOccurrences(spec: ScheduleSpec, fromMs: number, latestMs: number, maxSteps: number): { count: number; exact: boolean; steps: number } {
  if (latestMs <= fromMs) return { count: 0, exact: true, steps: 0 };
  const fixed = spec.intervalMs !== null ? { period: spec.intervalMs, phase: fromMs } : spec.cron === null ? null : compiled(spec).fixedPeriod;
  if (fixed) {
    // fromMs, and every occurrence strictly between it and latestMs.
    const between = Math.ceil((latestMs - fixed.phase) / fixed.period) - Math.floor((fromMs - fixed.phase) / fixed.period) - 1;
    return { count: 1 + Math.max(0, between), exact: true, steps: 0 };
  }
  let count = 1;
  let at = fromMs;
  for (let steps = 0; steps < maxSteps; steps++) {
    const next = nextOccurrence(spec, at, fromMs);
    if (next === null || next >= latestMs) return { count, exact: true, steps: steps + 1 };
    count++;
    at = next;
  }
  return { count, exact: false, steps: maxSteps };
}
