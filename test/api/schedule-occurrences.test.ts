/**
 * A schedule's occurrences are its own: a client (here the worker token,
 * which may enqueue) cannot take one over by enqueueing a job under the key
 * an occurrence used to carry, before the pass gets there, and a client's
 * own enqueue is never swallowed by an occurrence either.
 */
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { sql } from 'drizzle-orm';
import { createStore } from '../../src/db/store/create-store.ts';
import { schedulesOnce } from '../../src/maintenance/schedules.ts';
import { setup, type TestBed } from '../support/helpers.ts';

const api = '/api/v1';
const ADMIN = 'admin-token-0123456789';
const WORKER = 'worker-token-0123456789';
const admin = { authorization: `Bearer ${ADMIN}` };
const worker = { authorization: `Bearer ${WORKER}` };
const utc = (s: string) => Date.parse(s);
const TEN_YEARS = 10 * 365 * 24 * 3600 * 1000;

describe('occurrences cannot be taken by an enqueue', () => {
  let t: TestBed;
  beforeEach(async () => {
    t = await setup({ adminToken: ADMIN, workerToken: WORKER });
    t.clock.set(utc('2030-01-01T09:59:30Z'));
  });
  afterEach(() => {
    expect(t.errors).toEqual([]);
    t.close();
  });
  const pass = () => schedulesOnce(createStore(t.db), t.clock.now(), t.config);

  test("a worker that pre-enqueues the next occurrences' old keys with a ten-year delay changes nothing the schedule runs", async () => {
    const created = await t.post(`${api}/schedules`, { name: 'report', queue: 'reports', cron: '0 * * * *', payload: { kind: 'honest' }, jobOptions: { priority: 3 } }, admin);
    expect(created.status).toBe(201);
    // The attacker reads the next runs (or guesses them: the key format was public) and takes them first.
    const planted: string[] = [];
    for (const at of ['2030-01-01T10:00:00.000Z', '2030-01-01T11:00:00.000Z']) {
      const res = await t.post(`${api}/queues/reports/jobs`, { payload: { kind: 'attacker' }, idempotencyKey: `schedule:report:${at}`, delayMs: TEN_YEARS }, worker);
      expect(res.status).toBeLessThan(300);
      planted.push(res.json.job.id);
    }

    for (const at of ['2030-01-01T10:00:05Z', '2030-01-01T11:00:05Z']) {
      t.clock.set(utc(at));
      expect(await pass()).toMatchObject({ enqueued: 1, alreadyEnqueued: 0, errors: [] });
      const { lastJobId } = (await t.get(`${api}/schedules/report`, admin)).json.schedule;
      expect(planted).not.toContain(lastJobId);
      const job = (await t.get(`${api}/jobs/${lastJobId}`, admin)).json.job;
      // The schedule's own payload and options, due now: not the attacker's payload ten years out.
      expect(job).toMatchObject({ payload: { kind: 'honest' }, priority: 3, status: 'pending', schedule: 'report', occurrenceAt: new Date(utc(at) - 5_000).toISOString() });
      expect(Date.parse(job.availableAt)).toBeLessThanOrEqual(t.clock.now());
    }
    // The planted jobs are the attacker's own, untouched (no dedup counted onto them).
    for (const id of planted) {
      const job = (await t.get(`${api}/jobs/${id}`, admin)).json.job;
      expect(job).toMatchObject({ payload: { kind: 'attacker' }, schedule: null, occurrenceAt: null });
    }
    // A worker claiming now gets the schedule's jobs only.
    const claimed = (await t.post(`${api}/queues/reports/claim`, { workerId: 'w1', limit: 10 }, worker)).json.jobs;
    expect(claimed.map((j: { payload: unknown }) => j.payload)).toEqual([{ kind: 'honest' }, { kind: 'honest' }]);
  });

  test("a client's enqueue is never deduplicated onto an occurrence's job", async () => {
    await t.post(`${api}/schedules`, { name: 'tick', queue: 'ticks', intervalMs: 60_000 }, admin);
    t.clock.set(utc('2030-01-01T10:00:31Z'));
    expect(await pass()).toMatchObject({ enqueued: 1 });
    const { lastJobId } = (await t.get(`${api}/schedules/tick`, admin)).json.schedule;
    const res = await t.post(`${api}/queues/ticks/jobs`, { payload: { mine: true }, idempotencyKey: 'schedule:tick:2030-01-01T10:00:30.000Z' }, worker);
    expect(res.status).toBe(201);
    expect(res.json.job.id).not.toBe(lastJobId);
    expect(res.json.job.payload).toEqual({ mine: true });
  });

  test('the database holds one job per occurrence: a second insert of the same occurrence gets the first job back', async () => {
    await t.post(`${api}/schedules`, { name: 'tick', queue: 'ticks', intervalMs: 60_000 }, admin);
    const store = createStore(t.db);
    const schedule = (await store.scheduleGet({ name: 'tick' }))!;
    const occurrence = schedule.next_run_at;
    const first = await store.scheduleEnqueueOccurrence({ schedule, occurrence, now: t.clock.now(), defaults: t.config });
    const again = await store.scheduleEnqueueOccurrence({ schedule, occurrence, now: t.clock.now(), defaults: t.config });
    expect(first.deduplicated).toBe(false);
    expect(again).toMatchObject({ deduplicated: true, job: { id: first.job.id } });
    // No path that writes jobs outside the schedule can set these columns twice either: the unique index refuses it.
    const refused = await t.db
      .run(sql`INSERT INTO jobs (queue_name, payload, max_attempts, available_at, schedule_name, occurrence_at, created_at, updated_at)
        VALUES ('ticks', 'null', 1, 0, 'tick', ${occurrence}, 0, 0)`)
      .then(() => 'stored', (err: Error) => String(err.cause ?? err));
    expect(refused).toMatch(/UNIQUE constraint failed: jobs.schedule_name, jobs.occurrence_at/);
  });
});
