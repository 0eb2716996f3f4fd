/**
 * The daylight-saving rule (src/core/schedule.ts), on the 2026 transition
 * days of New York (springs forward 03-08, falls back 11-01) and Berlin
 * (03-29, 10-25):
 * - a fixed-hour expression runs each wall-clock time once: a time the clock
 *   shows twice runs at its first instance, and the times in a
 *   spring-forward gap run once, at the first instant after it;
 * - an expression whose hour is `*` follows the clock: every real instant
 *   that matches, and nothing made up for a gap.
 * Checked on the occurrence arithmetic, and end to end through passes of
 * schedulesOnce every five minutes across each transition night.
 */
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { latestDueOccurrence, nextOccurrence, nextOccurrences } from '../../src/core/schedule.ts';
import { createStore } from '../../src/db/store/create-store.ts';
import { schedulesOnce } from '../../src/maintenance/schedules.ts';
import { setup, type TestBed } from '../support/helpers.ts';

const utc = (s: string) => Date.parse(s);
const isoOf = (ms: number) => new Date(ms).toISOString();
const zoned = (cron: string, timeZone: string) => ({ cron, timeZone, intervalMs: null });

interface Night {
  zone: string;
  day: string;
  /** From when to list (the day before, local afternoon) and where the night's passes stop. */
  from: string;
  until: string;
  /** Expression -> its occurrences from `from` up to `until`, in UTC. */
  runs: Record<string, string[]>;
}

const NIGHTS: Night[] = [
  {
    zone: 'America/New_York',
    day: '2026-03-08 (02:00 EST -> 03:00 EDT)',
    from: '2026-03-07T20:00:00Z',
    until: '2026-03-08T09:00:00Z',
    runs: {
      '0,30 1 * * *': ['2026-03-08T06:00:00.000Z', '2026-03-08T06:30:00.000Z'],
      // 02:15 and 02:45 do not exist: one run at 03:00 EDT.
      '15,45 2 * * *': ['2026-03-08T07:00:00.000Z'],
      '0,30 2 * * *': ['2026-03-08T07:00:00.000Z'],
    },
  },
  {
    zone: 'America/New_York',
    day: '2026-11-01 (02:00 EDT -> 01:00 EST)',
    from: '2026-10-31T20:00:00Z',
    until: '2026-11-01T09:00:00Z',
    runs: {
      // 01:00 and 01:30 come twice: the EDT ones run, the EST ones (06:00Z, 06:30Z) do not.
      '0,30 1 * * *': ['2026-11-01T05:00:00.000Z', '2026-11-01T05:30:00.000Z'],
      '15,45 2 * * *': ['2026-11-01T07:15:00.000Z', '2026-11-01T07:45:00.000Z'],
      '0,30 2 * * *': ['2026-11-01T07:00:00.000Z', '2026-11-01T07:30:00.000Z'],
    },
  },
  {
    zone: 'Europe/Berlin',
    day: '2026-03-29 (02:00 CET -> 03:00 CEST)',
    from: '2026-03-28T14:00:00Z',
    until: '2026-03-29T03:00:00Z',
    runs: {
      '0,30 1 * * *': ['2026-03-29T00:00:00.000Z', '2026-03-29T00:30:00.000Z'],
      '15,45 2 * * *': ['2026-03-29T01:00:00.000Z'],
      '0,30 2 * * *': ['2026-03-29T01:00:00.000Z'],
    },
  },
  {
    zone: 'Europe/Berlin',
    day: '2026-10-25 (03:00 CEST -> 02:00 CET)',
    from: '2026-10-24T14:00:00Z',
    until: '2026-10-25T03:00:00Z',
    runs: {
      '0,30 1 * * *': ['2026-10-24T23:00:00.000Z', '2026-10-24T23:30:00.000Z'],
      // 02:15 and 02:45 come twice: the CEST ones run, the CET ones (01:15Z, 01:45Z) do not.
      '15,45 2 * * *': ['2026-10-25T00:15:00.000Z', '2026-10-25T00:45:00.000Z'],
      '0,30 2 * * *': ['2026-10-25T00:00:00.000Z', '2026-10-25T00:30:00.000Z'],
    },
  },
];

describe.each(NIGHTS)('$zone on $day', ({ zone, from, until, runs }) => {
  test.each(Object.entries(runs))('%s: each wall-clock time once', (cron, expected) => {
    const spec = zoned(cron, zone);
    const all = nextOccurrences(spec, utc(from), 8);
    const listed = all.filter((t) => t <= utc(until));
    expect(listed.map(isoOf)).toEqual(expected);
    // The days after are ordinary again: each run at one of the expression's wall times.
    const [minutes, hour] = cron.split(' ') as [string, string];
    const wallTimes = minutes.split(',').map((m) => `${hour.padStart(2, '0')}:${m.padStart(2, '0')}`);
    const later = all.filter((t) => t > utc(until));
    expect(later.length).toBeGreaterThan(2);
    for (const t of later) expect(wallTimes).toContain(new Date(t).toLocaleTimeString('en-GB', { timeZone: zone, hour: '2-digit', minute: '2-digit' }));
    // The latest due occurrence agrees with the listing at every minute of the night, whatever the clock showed.
    const first = listed[0]!;
    for (let now = first; now <= utc(until); now += 60_000) {
      const due = listed.filter((t) => t <= now).at(-1)!;
      expect(isoOf(latestDueOccurrence(spec, first, now)!), `${cron} at ${isoOf(now)}`).toBe(isoOf(due));
      // And from any instant of the night, the next one is the next listed (or the next day's).
      expect(isoOf(nextOccurrence(spec, now)!), `${cron} after ${isoOf(now)}`).toBe(isoOf(all.find((t) => t > now)!));
    }
  });

  describe('through the maintenance pass, every five minutes across the night', () => {
    let t: TestBed;
    beforeEach(async () => {
      t = await setup();
    });
    afterEach(() => {
      expect(t.errors).toEqual([]);
      t.close();
    });

    test('each expression enqueues exactly its listed occurrences, once each', async () => {
      t.clock.set(utc(from));
      const names = Object.keys(runs).map((cron, i) => [`s${i}`, cron] as const);
      for (const [name, cron] of names) expect((await t.post('/api/v1/schedules', { name, queue: name, cron, timeZone: zone })).status).toBe(201);
      const store = createStore(t.db);
      for (let now = utc(from); now <= utc(until); now += 5 * 60_000) {
        t.clock.set(now);
        const report = await schedulesOnce(store, now, t.config);
        expect(report).toMatchObject({ missedSkipped: 0, errors: [] });
      }
      for (const [name, cron] of names) {
        const jobs = (await t.get(`/api/v1/jobs?queue=${name}&order=asc`)).json.jobs as { occurrenceAt: string }[];
        expect(jobs.map((j) => j.occurrenceAt), cron).toEqual(runs[cron]);
      }
    });
  });
});

describe('expressions whose hour is * follow the clock', () => {
  test('every 30 minutes across the fall-back night: every real half hour, both 01:00s and both 01:30s', () => {
    const runs = nextOccurrences(zoned('*/30 * * * *', 'America/New_York'), utc('2026-11-01T04:40:00Z'), 6);
    expect(runs.map(isoOf)).toEqual(['2026-11-01T05:00:00.000Z', '2026-11-01T05:30:00.000Z', '2026-11-01T06:00:00.000Z', '2026-11-01T06:30:00.000Z', '2026-11-01T07:00:00.000Z', '2026-11-01T07:30:00.000Z']);
  });

  test('every 20 minutes (counted, not a fixed period) across both New York nights: every real 20 minutes, none made up', () => {
    const spec = zoned('0,20,40 * * * *', 'America/New_York');
    for (const start of ['2026-03-08T05:50:00Z', '2026-11-01T04:50:00Z']) {
      const runs = nextOccurrences(spec, utc(start), 12);
      expect(runs.slice(1).map((r, i) => r - runs[i]!)).toEqual(Array(11).fill(20 * 60_000));
    }
  });

  test('hourly across the Berlin nights: the skipped 02:00 is not made up; the repeated 02:00 runs twice', () => {
    const spec = zoned('0 * * * *', 'Europe/Berlin');
    expect(nextOccurrences(spec, utc('2026-03-28T23:30:00Z'), 3).map(isoOf)).toEqual(['2026-03-29T00:00:00.000Z', '2026-03-29T01:00:00.000Z', '2026-03-29T02:00:00.000Z']);
    expect(nextOccurrences(spec, utc('2026-10-24T23:30:00Z'), 3).map(isoOf)).toEqual(['2026-10-25T00:00:00.000Z', '2026-10-25T01:00:00.000Z', '2026-10-25T02:00:00.000Z']);
  });

  test('every second across the fall-back: each real second once (by arithmetic), and the latest due is the last whole second', () => {
    const spec = zoned('* * * * * *', 'Europe/Berlin');
    const runs = nextOccurrences(spec, utc('2026-10-25T00:59:58.500Z'), 3);
    expect(runs.map(isoOf)).toEqual(['2026-10-25T00:59:59.000Z', '2026-10-25T01:00:00.000Z', '2026-10-25T01:00:01.000Z']);
    expect(latestDueOccurrence(spec, utc('2026-10-25T00:00:00Z'), utc('2026-10-25T01:00:00.999Z'))).toBe(utc('2026-10-25T01:00:00Z'));
  });
});
