/** The dashboard's schedules page: each schedule's timing, next runs, last run and the job it made (open mode). */
import { afterEach, beforeEach, expect, test } from 'vitest';
import { createStore } from '../../src/db/store/create-store.ts';
import { schedulesOnce } from '../../src/maintenance/schedules.ts';
import { setup, type TestBed } from '../support/helpers.ts';

let t: TestBed;
beforeEach(async () => {
  t = await setup();
  t.clock.set(Date.parse('2030-01-01T09:59:00Z'));
});
afterEach(() => {
  expect(t.errors).toEqual([]);
  t.close();
});

const page = async () => (await t.app.request('/dashboard/schedules')).text();

test('lists schedules with next runs, last run and a link to the job that run enqueued; paused ones say so', async () => {
  expect(await page()).toContain('No schedules');
  await t.post('/api/v1/schedules', { name: 'hourly', queue: 'reports', cron: '0 * * * *', timeZone: 'Europe/Berlin' });
  await t.post('/api/v1/schedules', { name: 'off', queue: 'reports', intervalMs: 60_000, paused: true });
  let html = await page();
  expect(html).toMatch(/<tr id="schedule-hourly">.*0 \* \* \* \* \(Europe\/Berlin\).*2030-01-01 10:00:00Z · 2030-01-01 11:00:00Z · 2030-01-01 12:00:00Z/s);
  expect(html).toMatch(/<tr id="schedule-off">.*every 60000 ms.*<td class="next-runs">paused<\/td>/s);
  t.clock.set(Date.parse('2030-01-01T10:00:01Z'));
  await schedulesOnce(createStore(t.db), t.clock.now(), t.config);
  const [job] = (await t.get('/api/v1/jobs?queue=reports')).json.jobs;
  html = await page();
  expect(html).toMatch(new RegExp(`<tr id="schedule-hourly">.*2030-01-01 10:00:00Z</td><td><a href="/dashboard/jobs/${job.id}">#${job.id}</a>`, 's'));
  // The job's page names the schedule and the occurrence it runs.
  expect(await (await t.app.request(`/dashboard/jobs/${job.id}`)).text()).toMatch(/<dt>Schedule<\/dt><dd>hourly · occurrence 2030-01-01 10:00:00Z<\/dd>/);
  // The nav leads there.
  expect(await (await t.app.request('/dashboard')).text()).toContain('href="/dashboard/schedules"');
});

test("each skip is a line on the page, and each schedule shows its policies and what it skipped", async () => {
  await t.post('/api/v1/schedules', { name: 'busy', queue: 'reports', intervalMs: 60_000, overlap: 'skip' });
  await t.post('/api/v1/schedules', { name: 'gappy', queue: 'reports', intervalMs: 60_000, catchUp: 'all', catchUpWindowMs: 120_000 });
  expect(await page()).toContain('No occurrence has been skipped');
  const pass = () => schedulesOnce(createStore(t.db), t.clock.now(), t.config);
  t.clock.set(Date.parse('2030-01-01T10:00:01Z'));
  await pass();
  // Five minutes on: busy's job is still pending (overlap skip), gappy missed the ones before its two-minute window.
  t.clock.set(Date.parse('2030-01-01T10:05:01Z'));
  await pass();
  const html = await page();
  expect(html).toMatch(/<tr id="schedule-busy">.*catch-up latest, overlap skip.*<td class="skipped">4 missed, 1 overlapping<\/td>/s);
  expect(html).toMatch(/<tr id="schedule-gappy">.*catch-up all \(120 s\), overlap allow.*<td class="skipped">3 missed, 0 overlapping<\/td>/s);
  expect(html).toMatch(/<li class="skip skip-overlap">.*busy<\/a>: 1 occurrence skipped: the previous occurrence&#39;s job was still pending or running \(2030-01-01 10:05:00Z\)/);
  expect(html).toMatch(/<li class="skip skip-missed">.*gappy<\/a>: 3 occurrences missed \(2030-01-01 10:01:00Z … 2030-01-01 10:03:00Z\)/);
});
