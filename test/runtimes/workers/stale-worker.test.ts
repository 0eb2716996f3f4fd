/**
 * The classic stale-worker story on Cloudflare Workers: the real entry
 * (SELF = src/runtime/cloudflare.ts) over a local D1 database, the reaper run
 * by the Worker's `scheduled` handler, time passing on the database's clock.
 */
import { expect, test } from 'vitest';
import { claim, cronTick, enqueue, get, jobView, PAST_LEASE_OWNER_DEAD_MS, post, sleep } from './helpers.ts';

const api = '/api/v1';

test('healthz answers with the database time', async () => {
  const res = await get('/healthz', null);
  expect(res.status).toBe(200);
  expect(res.json.ok).toBe(true);
  expect(Math.abs(Date.parse(res.json.databaseTime) - Date.now())).toBeLessThan(60_000);
});

test('A stalls, the cron reaper requeues, B finishes, A is fenced off', async () => {
  const e = await enqueue('story', { payload: { to: 'x@example.com' } });
  const [a] = await claim('story', 'A', { leaseMs: 1000 });
  expect(a).toMatchObject({ id: e.id, attempt: 1, fencingToken: 1 });
  expect((await post(`${api}/jobs/${e.id}/heartbeat`, { workerId: 'A', lockToken: a!.lockToken })).status).toBe(200);

  // Before lease + grace, the cron tick leaves it alone.
  await cronTick();
  expect((await jobView(e.id)).job.status).toBe('running');

  // A goes silent; real time passes on the database clock.
  await sleep(PAST_LEASE_OWNER_DEAD_MS);
  await cronTick();
  const requeued = (await jobView(e.id)).job;
  expect(requeued).toMatchObject({ status: 'pending', lostAttempts: 1, lockedBy: null });

  // B claims it (backoff base is 1 ms in this run) and gets the next fencing token.
  let [b] = await claim('story', 'B');
  for (let i = 0; !b && i < 20; i++) {
    await sleep(50);
    [b] = await claim('story', 'B');
  }
  expect(b).toMatchObject({ id: e.id, attempt: 2, fencingToken: 2 });

  // A comes back: its heartbeat and completion are refused.
  const hb = await post(`${api}/jobs/${e.id}/heartbeat`, { workerId: 'A', lockToken: a!.lockToken });
  expect(hb.status).toBe(409);
  expect(hb.json.error.code).toBe('lease_lost');
  const doneA = await post(`${api}/jobs/${e.id}/complete`, { workerId: 'A', lockToken: a!.lockToken, result: 'from A' });
  expect(doneA.status).toBe(409);
  expect(doneA.json.error.code).toBe('lease_lost');

  // B completes.
  const doneB = await post(`${api}/jobs/${e.id}/complete`, { workerId: 'B', lockToken: b!.lockToken, result: 'from B' });
  expect(doneB.status, JSON.stringify(doneB.json)).toBe(200);

  const final = await jobView(e.id);
  expect(final.job).toMatchObject({ status: 'completed', result: 'from B', attempt: 2 });
  expect(final.events.map((x) => [x.type, x.reason, x.workerId])).toEqual([
    ['enqueued', null, null],
    ['claimed', null, 'A'],
    ['reaped', 'reaped_due_to_expired_lease', 'A'],
    // B's claim may run the job a second time (A was only stalled): counted on D1 too.
    ['duplicate_execution', 'reaped: reaped_due_to_expired_lease', 'B'],
    ['claimed', null, 'B'],
    ['stale_write_rejected', 'heartbeat', 'A'],
    ['stale_write_rejected', 'complete', 'A'],
    ['completed', null, 'B'],
  ]);
});
