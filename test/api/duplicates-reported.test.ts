/**
 * POST /jobs/:id/duplicates (the SDK's ctx.reportDuplicate) through the real
 * app: the owner's report is an event with its key, counted in /metrics and
 * the metrics API, and feeds the duplicate_executions alert with the
 * duplicates leasehold sees itself; a stale or foreign report is refused
 * (409) and counts nothing; a bad key is a 400 naming it and changes nothing.
 */
import { afterEach, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';

const api = '/api/v1';
let t: TestBed;
afterEach(() => t?.close());

const reported = async () => {
  const text = await (await t.app.request('/metrics')).text();
  return Number(/^leasehold_duplicates_reported_total\{queue="q"\} (\d+)$/m.exec(text)?.[1] ?? 'NaN');
};
const alert = async () => (await t.get(`${api}/alerts`)).json.alerts.find((a: { queue: string; name: string }) => a.queue === 'q' && a.name === 'duplicate_executions');

test("the owner's report is an event with its key and counted; a stale one is refused and counts nothing", async () => {
  t = await setup();
  const job = await t.enqueue('q');
  const [c] = await t.claim('q', 'w1');
  const ok = await t.post(`${api}/jobs/${job.id}/duplicates`, { workerId: 'w1', lockToken: c!.lockToken, key: 'payment pi_123' });
  expect(ok).toMatchObject({ status: 200, json: { ok: true } });
  const stale = await t.post(`${api}/jobs/${job.id}/duplicates`, { workerId: 'w1', lockToken: 'not-the-token', key: 'payment pi_123' });
  expect(stale.status).toBe(409);
  expect(stale.json.error).toMatchObject({ code: 'lease_lost', field: 'lockToken' });
  const foreign = await t.post(`${api}/jobs/${job.id}/duplicates`, { workerId: 'w2', lockToken: c!.lockToken, key: 'payment pi_123' });
  expect(foreign.status).toBe(409);
  expect((await t.post(`${api}/jobs/424242/duplicates`, { workerId: 'w1', lockToken: 'x', key: 'k' })).status).toBe(404);
  expect(await reported()).toBe(1);
  expect((await t.get(`${api}/metrics`)).json.queues.find((q: { queue: string }) => q.queue === 'q').duplicatesReported).toEqual({ total: 1, lastHour: 1, last5m: 1 });
  const events = await t.events(job.id);
  expect(events.filter((e) => e.type === 'duplicate_reported')).toMatchObject([{ reason: 'payment pi_123', workerId: 'w1' }]);
  expect(events.filter((e) => e.type === 'stale_write_rejected').map((e) => e.reason)).toEqual(['report_duplicate', 'report_duplicate']);
});

test('a bad key is a 400 that names it and records nothing', async () => {
  t = await setup();
  const job = await t.enqueue('q');
  const [c] = await t.claim('q', 'w1');
  const before = (await t.events(job.id)).length;
  for (const key of ['', 'x'.repeat(201), 7, null, 'nul\u0000']) {
    const res = await t.post(`${api}/jobs/${job.id}/duplicates`, { workerId: 'w1', lockToken: c!.lockToken, key });
    expect(res.status).toBe(400);
    expect(res.json.error.field).toBe('key');
  }
  expect((await t.post(`${api}/jobs/${job.id}/duplicates`, { workerId: 'w1', lockToken: c!.lockToken })).json.error.field).toBe('key');
  expect((await t.events(job.id)).length).toBe(before);
  expect(await reported()).toBe(0);
});

test('reported duplicates feed the duplicate_executions alert with the ones leasehold sees', async () => {
  t = await setup();
  const job = await t.enqueue('q');
  const [c] = await t.claim('q', 'w1');
  for (let i = 0; i < 5; i++) await t.post(`${api}/jobs/${job.id}/duplicates`, { workerId: 'w1', lockToken: c!.lockToken, key: `row-${i}` });
  expect(await alert()).toMatchObject({ state: 'ok', value: 5, threshold: 5 });
  await t.post(`${api}/jobs/${job.id}/duplicates`, { workerId: 'w1', lockToken: c!.lockToken, key: 'row-5' });
  expect(await alert()).toMatchObject({ state: 'firing', value: 6, threshold: 5 });
  expect((await alert()).message).toContain('handlers reported 6 duplicates found downstream');
  t.clock.advance(5 * 60_000 + 1);
  expect(await alert()).toMatchObject({ state: 'ok', value: 0 });
});

test("the dashboard overview's duplicate runs count the reported ones too", async () => {
  t = await setup();
  const job = await t.enqueue('q');
  const [c] = await t.claim('q', 'w1');
  const cell = async () => /<td class="([^"]*duplicates)"[^>]*>\s*([^<\s]+)/.exec(await (await t.app.request('/dashboard')).text())?.slice(1);
  expect(await cell()).toEqual(['duplicates', '0']);
  await t.post(`${api}/jobs/${job.id}/duplicates`, { workerId: 'w1', lockToken: c!.lockToken, key: 'payment pi_123' });
  expect(await cell()).toEqual(['warn duplicates', '1']);
});
