/**
 * A time zone's clock: its UTC offset at an instant, and the transition
 * (daylight saving, or a change of standard time) near an instant. Read from
 * the runtime's Intl tables, which every runtime we ship has. Pure.
 *
 * Assumed, as every zone of the tz database does today: offsets are whole
 * seconds, and a zone changes its offset at most once in any two days.
 *
 * An Intl lookup costs tens of microseconds, so each UTC day of a zone is
 * looked up once (its offsets at both ends, and where they differ the
 * instant of the change, found by halving) and kept.
 */

const SECOND = 1000;
const DAY = 24 * 3600 * SECOND;

/** The offset changes at `at` (the first instant of the new offset): local time = instant + offset. */
export interface Transition {
  at: number;
  /** Offset in ms before `at`, and from `at` on. */
  before: number;
  after: number;
}

export interface ZoneClock {
  /** Local time minus UTC at this instant, in ms. */
  offset(t: number): number;
  /** The transition within a day of `t`, if there is one (the nearest). */
  transitionNear(t: number): Transition | null;
}

const UTC_NAMES = new Set(['UTC', 'Etc/UTC', 'Etc/UCT', 'UCT', 'Etc/Universal', 'Universal', 'Etc/Zulu', 'Zulu', 'GMT', 'Etc/GMT']);

const utcClock: ZoneClock = { offset: () => 0, transitionNear: () => null };

/** Days kept per zone: a pass, a listing and the days around a transition need a handful. */
const DAYS_KEPT = 512;

type Day = { offset: number } | Transition;

/** Zones in use, kept with the days looked up (names are checked, so few: one per spelling of a zone). */
const ZONES_KEPT = 256;
const zones = new Map<string, ZoneClock>();

/** The clock of an IANA time zone (null: UTC). Throws a RangeError for a name that is not one. */
export function zoneClock(name: string | null): ZoneClock {
  if (name === null || UTC_NAMES.has(name)) return utcClock;
  const kept = zones.get(name);
  if (kept) return kept;
  const made = readZone(name);
  zones.set(name, made);
  if (zones.size > ZONES_KEPT) zones.delete(zones.keys().next().value!);
  return made;
}

function readZone(name: string): ZoneClock {
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone: name,
    hourCycle: 'h23',
    era: 'short',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  });
  const lookUp = (t: number) => {
    const f: Record<string, string> = {};
    for (const p of format.formatToParts(t)) f[p.type] = p.value;
    const year = f.era === 'BC' || f.era === 'B' ? 1 - Number(f.year) : Number(f.year);
    const local = Date.UTC(year, Number(f.month) - 1, Number(f.day), Number(f.hour), Number(f.minute), Number(f.second));
    return local - Math.floor(t / SECOND) * SECOND;
  };
  const days = new Map<number, Day>();
  const dayOf = (k: number): Day => {
    const kept = days.get(k);
    if (kept) return kept;
    const start = k * DAY;
    const before = lookUp(start);
    const after = lookUp(start + DAY);
    let day: Day = { offset: before };
    if (before !== after) {
      // The first whole second of the new offset, by halving (at most one change in the day).
      let lo = start;
      let hi = start + DAY;
      while (hi - lo > SECOND) {
        const mid = lo + Math.floor((hi - lo) / (2 * SECOND)) * SECOND;
        if (lookUp(mid) === before) lo = mid;
        else hi = mid;
      }
      day = { at: hi, before, after };
    }
    days.set(k, day);
    if (days.size > DAYS_KEPT) days.delete(days.keys().next().value!);
    return day;
  };
  return {
    offset(t) {
      const day = dayOf(Math.floor(t / DAY));
      return 'offset' in day ? day.offset : t < day.at ? day.before : day.after;
    },
    transitionNear(t) {
      const k = Math.floor(t / DAY);
      let nearest: Transition | null = null;
      for (const day of [dayOf(k - 1), dayOf(k), dayOf(k + 1)]) {
        if ('at' in day && Math.abs(day.at - t) <= DAY && (nearest === null || Math.abs(day.at - t) < Math.abs(nearest.at - t))) nearest = day;
      }
      return nearest;
    },
  };
}
