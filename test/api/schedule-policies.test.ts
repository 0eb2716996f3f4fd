/**
 * Schedule policies through the API and the pass: strict cron shapes (a
 * 7-field expression is refused naming the field), catch-up 'latest' /
 * 'all' / 'none', overlap 'skip', and every skip written as a row and a
 * counter on the schedule.
 */
import { sql } from 'drizzle-orm';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { createStore } from '../../src/db/store/create-store.ts';
import { schedulesOnce } from '../../src/maintenance/schedules.ts';
import { setup, type TestBed } from '../support/helpers.ts';

const api = '/api/v1';
const ADMIN = 'admin-token-0123456789';
const admin = { authorization: `Bearer ${ADMIN}` };
const utc = (s: string) => Date.parse(s);

describe('schedule policies', () => {
  let t: TestBed;
  beforeEach(async () => {
    t = await setup({ adminToken: ADMIN });
    t.clock.set(utc('2030-01-01T10:00:00.500Z'));
  });
  afterEach(() => t.close());
  const pass = () => schedulesOnce(createStore(t.db), t.clock.now(), t.config);
  const jobs = async () => (await t.db.all<{ occurrence_at: number }>(sql`SELECT occurrence_at FROM jobs WHERE schedule_name IS NOT NULL ORDER BY occurrence_at`)).map((r) => new Date(Number(r.occurrence_at)).toISOString());

  test.each([
    ['* * * * * * *', /7|seventh/],
    ['0 0 12 * * * 2030', /year/],
    ['@reboot', /nickname/],
    ['0 0 * * * foo', /day of week/],
    ['* * *', /5 fields/],
  ])('cron %j is refused with a 400 naming cron, nothing created', async (cron, why) => {
    const res = await t.post(`${api}/schedules`, { name: 's', queue: 'q', cron }, admin);
    expect(res.status).toBe(400);
    expect(res.json.error.field).toBe('cron');
    expect(res.json.error.message).toMatch(why);
    expect((await t.get(`${api}/schedules/s`, admin)).status).toBe(404);
  });

  test('bad policies are refused naming the field', async () => {
    for (const [body, field] of [[{ catchUp: 'some' }, 'catchUp'], [{ overlap: 'never' }, 'overlap'], [{ catchUpWindowMs: 10 }, 'catchUpWindowMs']] as const) {
      const res = await t.post(`${api}/schedules`, { name: 's', queue: 'q', intervalMs: 1000, ...body }, admin);
      expect(res.status).toBe(400);
      expect(res.json.error.field).toBe(field);
    }
  });

  test("catchUp 'all' runs each missed occurrence within its window, the older ones skipped and recorded", async () => {
    const res = await t.post(`${api}/schedules`, { name: 'fill', queue: 'q', intervalMs: 60_000, catchUp: 'all', catchUpWindowMs: 180_000 }, admin);
    expect(res.json.schedule).toMatchObject({ catchUp: 'all', catchUpWindowMs: 180_000, overlap: 'allow', skipped: { missed: 0, overlap: 0 } });
    // First run 10:01:00.5; ten minutes later the window (3 min back from 10:11:00.6) holds 10:09..10:11.
    t.clock.set(utc('2030-01-01T10:11:00.600Z'));
    expect(await pass()).toMatchObject({ enqueued: 3, missedSkipped: 8, errors: [] });
    expect(await jobs()).toEqual(['2030-01-01T10:09:00.500Z', '2030-01-01T10:10:00.500Z', '2030-01-01T10:11:00.500Z']);
    const s = (await t.get(`${api}/schedules/fill`, admin)).json.schedule;
    expect(s.skipped).toEqual({ missed: 8, overlap: 0 });
    const skips = await createStore(t.db).scheduleSkipsList({ name: 'fill', limit: 10 });
    expect(skips).toMatchObject([{ reason: 'missed', count: 8, first_occurrence_at: utc('2030-01-01T10:01:00.500Z'), last_occurrence_at: utc('2030-01-01T10:08:00.500Z') }]);
    expect(await pass()).toMatchObject({ enqueued: 0, alreadyEnqueued: 0 });
  });

  test("catchUp 'latest' runs the latest once; 'none' runs nothing found late", async () => {
    await t.post(`${api}/schedules`, { name: 'late', queue: 'q', intervalMs: 300_000 }, admin);
    await t.post(`${api}/schedules`, { name: 'never', queue: 'q', intervalMs: 300_000, catchUp: 'none' }, admin);
    // Due 10:05, 10:10, 10:15 (each .5); found at 10:17, two minutes after the latest: late for 'none'.
    t.clock.set(utc('2030-01-01T10:17:00Z'));
    expect(await pass()).toMatchObject({ enqueued: 1, missedSkipped: 2 + 3, errors: [] });
    expect(await jobs()).toEqual(['2030-01-01T10:15:00.500Z']);
    expect((await t.get(`${api}/schedules/never`, admin)).json.schedule.skipped).toEqual({ missed: 3, overlap: 0 });
    expect((await t.get(`${api}/schedules/late`, admin)).json.schedule.skipped).toEqual({ missed: 2, overlap: 0 });
    // On time again: 'none' runs it.
    t.clock.set(utc('2030-01-01T10:20:01Z'));
    expect(await pass()).toMatchObject({ enqueued: 2 });
  });

  test("overlap 'skip' skips an occurrence while the previous one's job is pending, and runs again once it finished", async () => {
    await t.post(`${api}/schedules`, { name: 'one', queue: 'q', intervalMs: 60_000, overlap: 'skip' }, admin);
    t.clock.set(utc('2030-01-01T10:01:01Z'));
    expect(await pass()).toMatchObject({ enqueued: 1 });
    t.clock.set(utc('2030-01-01T10:02:01Z'));
    expect(await pass()).toMatchObject({ enqueued: 0, overlapSkipped: 1 });
    expect((await t.get(`${api}/schedules/one`, admin)).json.schedule.skipped).toEqual({ missed: 0, overlap: 1 });
    const metrics = await (await t.app.request('/metrics', { headers: admin })).text();
    expect(metrics).toContain('leasehold_schedule_skipped_total{schedule="one",reason="overlap"} 1');
    expect(metrics).toContain('leasehold_schedule_skipped_total{schedule="one",reason="missed"} 0');
    const [skip] = await createStore(t.db).scheduleSkipsList({ name: 'one', limit: 1 });
    expect(skip).toMatchObject({ reason: 'overlap', count: 1, first_occurrence_at: utc('2030-01-01T10:02:00.500Z') });
    await t.db.run(sql`UPDATE jobs SET status = 'cancelled', cancelled_at = 1, finished_at = 1 WHERE schedule_name = 'one'`);
    t.clock.set(utc('2030-01-01T10:03:01Z'));
    expect(await pass()).toMatchObject({ enqueued: 1 });
  });

  test('two passes that read the same schedule enqueue its occurrence once, and the second writes nothing', async () => {
    await t.post(`${api}/schedules`, { name: 'race', queue: 'q', intervalMs: 60_000 }, admin);
    t.clock.set(utc('2030-01-01T10:01:01Z'));
    const store = createStore(t.db);
    const [s] = await store.schedulesDue({ now: t.clock.now(), limit: 1 });
    const fire = () => store.scheduleFireIfUnchanged({ schedule: s!, occurrence: s!.next_run_at, nextRunAt: s!.next_run_at + 60_000, now: t.clock.now(), defaults: t.config });
    const outcomes = await Promise.all([fire(), fire()]);
    expect(outcomes.map((o) => o.outcome).sort()).toEqual(['enqueued', 'moved']);
    const dedup = await t.db.all(sql`SELECT dedup_count FROM jobs WHERE schedule_name = 'race'`);
    expect(dedup).toEqual([expect.objectContaining({ dedup_count: 0 })]);
  });
});
