/** The Worker's `scheduled` handler (wrangler.toml crons) runs runMaintenancePass on D1. */
import { env } from 'cloudflare:test';
import { expect, test } from 'vitest';
import { DB_CLOCK } from '../../../src/core/clock.ts';
import { createStore } from '../../../src/db/store/create-store.ts';
import { d1Db } from '../../../src/runtime/cloudflare.ts';
import { claim, cronTick, enqueue, get, jobView, PAST_LEASE_OWNER_DEAD_MS, sleep } from './helpers.ts';

test('a cron tick requeues a job whose lease expired, with the reason in its events', async () => {
  const e = await enqueue('cron');
  const [a] = await claim('cron', 'gone', { leaseMs: 1000 });
  expect(a!.id).toBe(e.id);

  await sleep(PAST_LEASE_OWNER_DEAD_MS);
  await cronTick();

  const view = await jobView(e.id);
  expect(view.job).toMatchObject({ status: 'pending', lostAttempts: 1, lockedBy: null });
  expect(view.events.at(-1)).toMatchObject({ type: 'reaped', reason: 'reaped_due_to_expired_lease', actor: 'reaper', from: 'running', to: 'pending' });

  // A second tick finds nothing more to do.
  await cronTick();
  expect((await jobView(e.id)).events).toHaveLength(view.events.length);
});

test('a cron tick fails a job that lost its worker too many times', async () => {
  const e = await enqueue('cron-fail', { payload: {}, maxAttempts: 1 });
  await claim('cron-fail', 'gone', { leaseMs: 1000 });
  await sleep(PAST_LEASE_OWNER_DEAD_MS);
  await cronTick();
  const view = await jobView(e.id);
  expect(view.job.status).toBe('failed');
  expect(view.events.at(-1)).toMatchObject({ type: 'reaped', actor: 'reaper', to: 'failed' });
});

test('the cron pass records itself in D1: /healthz and /metrics see when it last completed, and the leases that expired meanwhile, counted at read time', async () => {
  await enqueue('cron-watch');
  await claim('cron-watch', 'gone', { leaseMs: 1000 });
  await sleep(PAST_LEASE_OWNER_DEAD_MS);
  // No pass has run since the lease and grace passed: the figure is read now, from D1's clock.
  const before = await get('/healthz', null);
  expect(before.status).toBe(200);
  expect(before.json.maintenance.expiredLeases).toBeGreaterThanOrEqual(1);
  expect(String((await get('/metrics')).json)).toContain('leasehold_expired_leases_past_grace{queue="cron-watch"} 1');

  await cronTick();
  const after = await get('/healthz', null);
  expect(after.json.ok).toBe(true);
  expect(after.json.maintenance).toMatchObject({ late: false });
  expect(Date.parse(after.json.maintenance.lastPassAt)).toBeGreaterThanOrEqual(Date.parse(before.json.databaseTime));
  expect(after.json.maintenance.lastPassAgeMs).toBeLessThan(5_000);
  const text = String((await get('/metrics')).json);
  expect(text).toContain('leasehold_expired_leases_past_grace{queue="cron-watch"} 0');
  expect(Number(/^leasehold_maintenance_passes_total (\d+)$/m.exec(text)?.[1])).toBeGreaterThanOrEqual(1);
});

// Last in this file: the hold it writes stays in force for the file's storage.
test("a cron tick writes no hold of its own, and obeys one a server wrote to the shared database (a reap_held event, nothing taken)", async () => {
  const store = createStore(d1Db(env.DB));
  const e = await enqueue('cron-held');
  await claim('cron-held', 'gone', { leaseMs: 1000 });
  await sleep(PAST_LEASE_OWNER_DEAD_MS);
  await cronTick();
  expect(await store.reaperHoldRead({ now: DB_CLOCK })).toBeNull();
  const again = await enqueue('cron-held-2');
  expect((await claim('cron-held-2', 'gone', { leaseMs: 1000 }))[0]!.id).toBe(again.id);
  await sleep(PAST_LEASE_OWNER_DEAD_MS);
  // A Node server on the same database (Turso) just started.
  await store.reaperHoldBegin({ now: DB_CLOCK, holdMs: 60_000, gapMs: null, cause: 'the server just started' });
  await cronTick();
  const view = await jobView(again.id);
  expect(view.job.status).toBe('running');
  expect(view.events.at(-1)).toMatchObject({ type: 'reap_held', reason: 'server_gap', message: expect.stringContaining('the server just started') });
  expect((await jobView(e.id)).job.status).not.toBe('running');
});
