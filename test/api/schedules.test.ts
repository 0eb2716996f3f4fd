/**
 * Recurring jobs: the occurrence arithmetic (with daylight-saving days), the
 * /schedules API, and schedulesOnce, the maintenance service that enqueues
 * each due occurrence exactly once, also with two passes at once on two
 * connections, and runs only the latest of several missed occurrences.
 */
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { createStore } from '../../src/db/store/create-store.ts';
import { latestDueOccurrence, nextOccurrence, nextOccurrences, scheduleSpecProblem } from '../../src/core/schedule.ts';
import { runMaintenancePass } from '../../src/maintenance/pass.ts';
import { MISSED_COUNT_STEPS_PER_PASS, schedulesOnce } from '../../src/maintenance/schedules.ts';
import { openLibsql } from '../../src/runtime/libsql.ts';
import { setup, type TestBed } from '../support/helpers.ts';

const api = '/api/v1';
const utc = (s: string) => Date.parse(s);
const isoOf = (ms: number) => new Date(ms).toISOString();

describe('occurrences', () => {
  const ny = (cron: string) => ({ cron, timeZone: 'America/New_York', intervalMs: null });

  test('a daily 02:30 in New York: on the spring-forward day it runs once, at 03:00 EDT; the next day at 02:30 EDT again', () => {
    // 2030-03-10: clocks go from 02:00 EST to 03:00 EDT; 02:30 does not exist.
    const runs = nextOccurrences(ny('30 2 * * *'), utc('2030-03-09T12:00:00Z'), 3);
    expect(runs.map(isoOf)).toEqual(['2030-03-10T07:00:00.000Z', '2030-03-11T06:30:00.000Z', '2030-03-12T06:30:00.000Z']);
  });

  test('a daily 01:30 in New York: on the fall-back day (01:30 happens twice) it runs once', () => {
    // 2030-11-03: 01:30 EDT (05:30Z), then the clocks go back and 01:30 EST (06:30Z) comes again.
    const runs = nextOccurrences(ny('30 1 * * *'), utc('2030-11-02T12:00:00Z'), 3);
    expect(runs.map(isoOf)).toEqual(['2030-11-03T05:30:00.000Z', '2030-11-04T06:30:00.000Z', '2030-11-05T06:30:00.000Z']);
  });

  test('hourly across the fall-back night: every real hour once, none twice', () => {
    const runs = nextOccurrences(ny('0 * * * *'), utc('2030-11-03T03:30:00Z'), 5);
    expect(runs.map(isoOf)).toEqual(['2030-11-03T04:00:00.000Z', '2030-11-03T05:00:00.000Z', '2030-11-03T06:00:00.000Z', '2030-11-03T07:00:00.000Z', '2030-11-03T08:00:00.000Z']);
  });

  test('intervals count from their anchor; the latest due occurrence skips the missed ones', () => {
    const every = { cron: null, timeZone: null, intervalMs: 60_000 };
    expect(nextOccurrence(every, 1_000_030_000, 1_000_000_000)).toBe(1_000_060_000);
    expect(latestDueOccurrence(every, 1_000_000_000, 1_000_000_000 + 10 * 60_000 + 5)).toBe(1_000_000_000 + 10 * 60_000);
    expect(latestDueOccurrence(ny('0 * * * *'), utc('2030-01-01T05:00:00Z'), utc('2030-01-01T09:59:00Z'))).toBe(utc('2030-01-01T09:00:00Z'));
    expect(latestDueOccurrence(ny('0 * * * *'), utc('2030-01-01T05:00:00Z'), utc('2030-01-01T04:59:00Z'))).toBe(null);
  });

  test('bad specs are named', () => {
    expect(scheduleSpecProblem({ cron: '61 * * * *', timeZone: null, intervalMs: null })?.field).toBe('cron');
    expect(scheduleSpecProblem({ cron: '0 * * * *', timeZone: 'Mars/Base', intervalMs: null })?.field).toBe('timeZone');
    expect(scheduleSpecProblem({ cron: '0 * * * *', timeZone: null, intervalMs: 60_000 })?.field).toBe('cron');
    expect(scheduleSpecProblem({ cron: null, timeZone: null, intervalMs: null })?.field).toBe('cron');
    expect(scheduleSpecProblem({ cron: null, timeZone: 'UTC', intervalMs: 60_000 })?.field).toBe('timeZone');
    expect(scheduleSpecProblem({ cron: '0 9 * * MON-FRI', timeZone: 'Europe/Berlin', intervalMs: null })).toBe(null);
  });
});

describe('schedules through the API and the maintenance pass', () => {
  let t: TestBed;
  beforeEach(async () => {
    t = await setup();
    t.clock.set(utc('2030-01-01T09:59:30Z'));
  });
  afterEach(() => {
    expect(t.errors).toEqual([]);
    t.close();
  });
  const create = (body: Record<string, unknown>) => t.post(`${api}/schedules`, body);
  const jobs = async (queue: string) => (await t.get(`${api}/jobs?queue=${queue}&order=asc`)).json.jobs as { id: string; payload: unknown; schedule: string; occurrenceAt: string; priority: number }[];

  test('an hourly schedule enqueues each occurrence once, with its payload and options; a second pass adds nothing', async () => {
    const res = await create({ name: 'report', queue: 'reports', cron: '0 * * * *', payload: { kind: 'hourly' }, jobOptions: { priority: 7 } });
    expect(res.status).toBe(201);
    expect(res.json.schedule).toMatchObject({ name: 'report', queue: 'reports', paused: false, nextRunAt: '2030-01-01T10:00:00.000Z' });
    expect(res.json.schedule.nextRuns.slice(0, 3)).toEqual(['2030-01-01T10:00:00.000Z', '2030-01-01T11:00:00.000Z', '2030-01-01T12:00:00.000Z']);

    expect(await schedulesOnce(createStore(t.db), t.clock.now(), t.config)).toMatchObject({ enqueued: 0 });
    t.clock.set(utc('2030-01-01T10:00:05Z'));
    expect(await schedulesOnce(createStore(t.db), t.clock.now(), t.config)).toEqual({ enqueued: 1, alreadyEnqueued: 0, missedSkipped: 0, missedCountCapped: false, errors: [] });
    expect(await schedulesOnce(createStore(t.db), t.clock.now(), t.config)).toMatchObject({ enqueued: 0, alreadyEnqueued: 0 });
    const [listed] = await jobs('reports');
    // Lists carry summaries; the job itself has the payload.
    const job = (await t.get(`${api}/jobs/${listed!.id}`)).json.job;
    expect(job).toMatchObject({ payload: { kind: 'hourly' }, priority: 7, schedule: 'report', occurrenceAt: '2030-01-01T10:00:00.000Z', idempotencyKey: null });
    const shown = (await t.get(`${api}/schedules/report`)).json.schedule;
    expect(shown).toMatchObject({ lastRunAt: '2030-01-01T10:00:00.000Z', lastJobId: job!.id, nextRunAt: '2030-01-01T11:00:00.000Z' });
    // The reaper pass runs the service too, and says so.
    t.clock.set(utc('2030-01-01T11:00:01Z'));
    expect((await runMaintenancePass(t.db, t.clock.now(), t.config)).schedules).toMatchObject({ enqueued: 1 });
    expect(await jobs('reports')).toHaveLength(2);
  });

  test('after a long gap only the latest missed occurrence runs, once: never a burst', async () => {
    await create({ name: 'tick', queue: 'ticks', intervalMs: 60_000 });
    t.clock.set(utc('2030-01-01T10:10:45Z')); // ten intervals missed
    const report = await schedulesOnce(createStore(t.db), t.clock.now(), t.config);
    expect(report).toMatchObject({ enqueued: 1, missedSkipped: 10 });
    const list = await jobs('ticks');
    expect(list.map((j) => [j.schedule, j.occurrenceAt])).toEqual([['tick', '2030-01-01T10:10:30.000Z']]);
    expect((await t.get(`${api}/schedules/tick`)).json.schedule.nextRunAt).toBe('2030-01-01T10:11:30.000Z');
  });

  test('an every-second schedule after a day-long gap: one catch-up job, the 86,399 skipped counted exactly (by arithmetic)', async () => {
    await create({ name: 'sec', queue: 'secs', cron: '* * * * * *' });
    const start = t.clock.now();
    t.clock.set(start + 24 * 3600_000 + 500);
    const report = await schedulesOnce(createStore(t.db), t.clock.now(), t.config);
    expect(report).toEqual({ enqueued: 1, alreadyEnqueued: 0, missedSkipped: 86_399, missedCountCapped: false, errors: [] });
    const latest = new Date(start + 24 * 3600_000).toISOString();
    expect((await jobs('secs')).map((j) => j.occurrenceAt)).toEqual([latest]);
    expect((await t.get(`${api}/schedules/sec`)).json.schedule).toMatchObject({ lastRunAt: latest, nextRunAt: new Date(start + 24 * 3600_000 + 1000).toISOString() });
  });

  test('an expression that is not a fixed period is counted one occurrence at a time, within the pass bound: past it the count says "at least"', async () => {
    // Every 7 seconds within each minute (0, 7, ..., 56): 9 a minute, 12,960 a day.
    await create({ name: 'odd', queue: 'odd', cron: '*/7 * * * * *' });
    await create({ name: 'weekday', queue: 'weekday', cron: '0 9 * * MON-FRI', timeZone: 'Europe/Berlin' });
    t.clock.set(t.clock.now() + 24 * 3600_000);
    const report = await schedulesOnce(createStore(t.db), t.clock.now(), t.config);
    expect(report).toMatchObject({ enqueued: 2, missedCountCapped: true, errors: [] });
    expect(report.missedSkipped).toBeGreaterThanOrEqual(MISSED_COUNT_STEPS_PER_PASS);
    expect(report.missedSkipped).toBeLessThan(12_960);
    expect(await jobs('odd')).toHaveLength(1);
    expect(await jobs('weekday')).toHaveLength(1);
    // A short gap is counted exactly.
    t.clock.set(t.clock.now() + 60_000);
    expect(await schedulesOnce(createStore(t.db), t.clock.now(), t.config)).toMatchObject({ enqueued: 1, missedSkipped: 8, missedCountCapped: false });
  });

  test('two passes at once, on two connections to one database, make one job per occurrence', async () => {
    await create({ name: 'both', queue: 'q', intervalMs: 60_000 });
    const other = await openLibsql(t.url);
    try {
      for (let i = 1; i <= 5; i++) {
        t.clock.set(utc('2030-01-01T10:00:30Z') + (i - 1) * 60_000);
        const reports = await Promise.all([schedulesOnce(createStore(t.db), t.clock.now(), t.config), schedulesOnce(createStore(other.db), t.clock.now(), t.config)]);
        expect(reports.reduce((s, r) => s + r.enqueued, 0)).toBe(1);
        expect(reports.every((r) => r.errors.length === 0)).toBe(true);
      }
    } finally {
      other.close();
    }
    const keys = (await jobs('q')).map((j) => j.occurrenceAt);
    expect(keys).toHaveLength(5);
    expect(new Set(keys).size).toBe(5);
  });

  test('paused: nothing is enqueued; resuming runs from now, not the occurrences missed while paused', async () => {
    await create({ name: 'p', queue: 'q', cron: '*/5 * * * *', paused: true });
    t.clock.set(utc('2030-01-01T11:00:00Z'));
    expect(await schedulesOnce(createStore(t.db), t.clock.now(), t.config)).toMatchObject({ enqueued: 0 });
    const resumed = await t.call('PATCH', `${api}/schedules/p`, { paused: false });
    expect(resumed.json.schedule).toMatchObject({ paused: false, nextRunAt: '2030-01-01T11:05:00.000Z' });
    expect(await schedulesOnce(createStore(t.db), t.clock.now(), t.config)).toMatchObject({ enqueued: 0 });
    // A new timing also counts from now.
    const changed = await t.call('PATCH', `${api}/schedules/p`, { intervalMs: 120_000 });
    expect(changed.json.schedule).toMatchObject({ cron: null, intervalMs: 120_000, nextRunAt: '2030-01-01T11:02:00.000Z' });
  });

  test('bad input is a 400 naming the field; a taken name a 409; an unknown one a 404; nothing changes', async () => {
    expect((await create({ name: 'a', queue: 'q', cron: '0 * * * *' })).status).toBe(201);
    for (const [body, field] of [
      [{ name: 'b', queue: 'q', cron: '61 * * * *' }, 'cron'],
      [{ name: 'b', queue: 'q', cron: '0 * * * *', timeZone: 'Mars/Base' }, 'timeZone'],
      [{ name: 'b', queue: 'q', cron: '0 * * * *', intervalMs: 60_000 }, 'cron'],
      [{ name: 'b', queue: 'q' }, 'cron'],
      [{ name: 'b', queue: 'q', intervalMs: 10 }, 'intervalMs'],
      [{ name: 'b c', queue: 'q', intervalMs: 60_000 }, 'name'],
      [{ name: 'b', queue: 'q', intervalMs: 60_000, jobOptions: { priority: 5000 } }, 'jobOptions.priority'],
    ] as const) {
      const res = await create(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.error.field).toBe(field);
    }
    expect((await create({ name: 'a', queue: 'other', intervalMs: 60_000 })).status).toBe(409);
    expect((await t.call('PATCH', `${api}/schedules/a`, { cron: 'nope' })).status).toBe(400);
    expect((await t.call('PATCH', `${api}/schedules/zz`, { paused: true })).status).toBe(404);
    expect((await t.call('DELETE', `${api}/schedules/zz`, {})).status).toBe(404);
    const list = (await t.get(`${api}/schedules`)).json.schedules;
    expect(list.map((s: { name: string; queue: string; cron: string }) => [s.name, s.queue, s.cron])).toEqual([['a', 'q', '0 * * * *']]);
    expect((await t.call('DELETE', `${api}/schedules/a`, {})).json).toEqual({ deleted: 'a' });
    expect((await t.get(`${api}/schedules`)).json.schedules).toEqual([]);
  });
});
