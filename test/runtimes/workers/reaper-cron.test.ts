/** The Worker's `scheduled` handler (wrangler.toml crons) runs reapOnce on D1. */
import { expect, test } from 'vitest';
import { claim, cronTick, enqueue, jobView, PAST_LEASE_OWNER_DEAD_MS, sleep } from './helpers.ts';

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
