/**
 * onLost 'hold' through the API: set per queue (PATCH settings) or per job
 * (enqueue); a lost attempt is held by the reaper pass, never claimed, shown
 * with its lost attempt and effects, and ended only by a person: release
 * (runs again), complete by hand, fail, each needing a reason; bad input is
 * a 400 naming the field, and a job that is not held a 409 saying its status.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';

const api = '/api/v1';
let t: TestBed;
afterEach(() => {
  expect(t.errors).toEqual([]);
  t.close();
});

// lease 30 s, grace 10 s: an unbeaten claim is the reaper's after 40 s (plus the owner's liveness, 15 s).
const rules = { leaseMs: 30_000, graceMs: 10_000, workerAliveMs: 15_000, maxReapDeferMs: 30_000 };
const PAST_EVERYTHING = 30_000 + 10_000 + 30_000 + 1_000;

const jobOf = async (id: string) => (await t.get(`${api}/jobs/${id}`)).json.job;

/** A job of `queue` claimed by a worker that then vanishes, and the reaper's pass after its lease is long gone. */
async function lostAttempt(queue = 'pay', job: Record<string, unknown> = { payload: { charge: 7 } }) {
  const e = await t.enqueue(queue, job);
  const [c] = await t.claim(queue, 'doomed');
  expect(c!.id).toBe(e.id);
  await t.post(`${api}/jobs/${e.id}/checkpoint`, { workerId: 'doomed', lockToken: c!.lockToken, checkpoint: { step: 'charged' } });
  expect((await t.post(`${api}/jobs/${e.id}/effects/start`, { workerId: 'doomed', lockToken: c!.lockToken, key: 'charge' })).status).toBeLessThan(300);
  t.clock.advance(PAST_EVERYTHING);
  const pass = await t.post(`${api}/reaper/run`);
  expect(pass.status).toBe(200);
  return { id: e.id, pass: pass.json };
}

describe("onLost 'hold' over HTTP", () => {
  test('a queue set to hold: the reaper holds the lost attempt, no claim takes it, and it is listed with what is known of the attempt', async () => {
    t = await setup(rules);
    const set = await t.call('PATCH', `${api}/queues/pay/settings`, { onLost: 'hold' });
    expect(set.status).toBe(200);
    expect(set.json.queue).toMatchObject({ settings: { onLost: 'hold' }, overrides: { onLost: 'hold' } });
    const { id, pass } = await lostAttempt();
    expect(pass).toMatchObject({ requeued: [], heldForOperator: [{ id, reason: 'reaped_due_to_expired_lease' }] });
    const job = await jobOf(id);
    expect(job).toMatchObject({ status: 'pending', heldAt: expect.any(String), lostAttempts: 0, checkpoint: { step: 'charged' } });
    expect(job.lostAttempt).toMatchObject({ worker: 'doomed', attempt: 1, lastHeartbeatAt: expect.any(String), why: expect.stringContaining('lease expired') });
    const events = await t.events(id);
    expect(events.at(-1)).toMatchObject({ type: 'held', reason: 'lost_attempt_held', from: 'running', to: 'pending' });
    t.clock.advance(3_600_000);
    expect(await t.claim('pay', 'fresh')).toEqual([]);
    const list = await t.get(`${api}/held-jobs?queue=pay`);
    expect(list.status).toBe(200);
    expect(list.json.jobs).toMatchObject([{ id, lostAttempt: { worker: 'doomed' }, effects: [{ key: 'charge', state: 'started', attempt: 1, workerId: 'doomed', doneAt: null }] }]);
    const [queue] = (await t.get(`${api}/queues`)).json.queues;
    expect(queue).toMatchObject({ name: 'pay', held: 1, ready: 0 });
    const alerts = (await t.get(`${api}/alerts`)).json.alerts;
    expect(alerts.find((a: { name: string }) => a.name === 'held_jobs')).toMatchObject({ queue: 'pay', state: 'firing', value: 1 });
    const metrics = await t.call('GET', '/metrics');
    expect(metrics.text).toContain('leasehold_held_jobs{queue="pay"} 1');
  });

  test("a job's own onLost at enqueue wins over its queue's", async () => {
    t = await setup(rules);
    const { id } = await lostAttempt('plain', { payload: {}, onLost: 'hold' });
    expect((await jobOf(id)).heldAt).not.toBeNull();
    await t.call('PATCH', `${api}/queues/pay/settings`, { onLost: 'hold' });
    const retried = await lostAttempt('pay', { payload: {}, onLost: 'retry' });
    expect(await jobOf(retried.id)).toMatchObject({ heldAt: null, lostAttempts: 1 });
  });

  test('release needs a reason, runs the job again exactly once, and is audited', async () => {
    t = await setup(rules);
    await t.call('PATCH', `${api}/queues/pay/settings`, { onLost: 'hold' });
    const { id } = await lostAttempt();
    const noReason = await t.post(`${api}/jobs/${id}/held/release`, {});
    expect(noReason.status).toBe(400);
    expect(noReason.json.error.field).toBe('reason');
    expect((await jobOf(id)).heldAt).not.toBeNull();
    const released = await t.post(`${api}/jobs/${id}/held/release`, { reason: 'checked the ledger: not charged', actor: 'ada' });
    expect(released.status).toBe(200);
    expect(released.json.job).toMatchObject({ status: 'pending', heldAt: null });
    const [again] = await t.claim('pay', 'fresh');
    expect(again).toMatchObject({ id, attempt: 2 });
    expect(await t.claim('pay', 'other')).toEqual([]);
    const audit = await t.get(`${api}/audit?action=job.release_held`);
    expect(audit.json.entries).toMatchObject([{ action: 'job.release_held', jobId: id, reason: 'checked the ledger: not charged' }]);
    expect((await t.events(id)).map((e) => e.type)).toContain('released_by_operator');
  });

  test('complete by hand with a result, and fail; acting on a job that is not held is a 409 saying its status', async () => {
    t = await setup(rules);
    await t.call('PATCH', `${api}/queues/pay/settings`, { onLost: 'hold' });
    const a = await lostAttempt();
    const b = await lostAttempt();
    const heldAt = (await jobOf(a.id)).heldAt as string;
    const done = await t.post(`${api}/jobs/${a.id}/held/complete`, { reason: 'the charge went out', result: { charged: true } });
    expect(done.status).toBe(200);
    // Neither the hold's far-off due time (year 275760) nor its message stays on the completed job.
    expect(done.json.job).toMatchObject({ status: 'completed', result: { charged: true }, heldAt: null, availableAt: heldAt, lastError: null });
    // Counted like any completion (the completed counter, the finished counts).
    const pay = async () => (await t.get(`${api}/metrics`)).json.queues.find((q: { queue: string }) => q.queue === 'pay');
    expect((await pay()).jobsTotal.completed).toBe(1);
    const failed = await t.post(`${api}/jobs/${b.id}/held/fail`, { reason: 'refunded by hand' });
    expect(failed.status).toBe(200);
    expect(failed.json.job).toMatchObject({ status: 'failed', lastError: expect.stringContaining('refunded by hand') });
    const twice = await t.post(`${api}/jobs/${a.id}/held/release`, { reason: 'oops' });
    expect(twice.status).toBe(409);
    expect(twice.json.error).toMatchObject({ code: 'conflict', status: 'completed', message: expect.stringContaining('is completed') });
    const plain = await t.enqueue('pay');
    const notHeld = await t.post(`${api}/jobs/${plain.id}/held/fail`, { reason: 'x' });
    expect(notHeld.status).toBe(409);
    expect(notHeld.json.error.message).toContain('pending but not held');
    expect((await t.post(`${api}/jobs/999999/held/release`, { reason: 'x' })).status).toBe(404);
  });

  test('bad input names the field and changes nothing', async () => {
    t = await setup(rules);
    const badQueue = await t.call('PATCH', `${api}/queues/pay/settings`, { onLost: 'sometimes' });
    expect(badQueue.status).toBe(400);
    expect(badQueue.json.error.field).toBe('onLost');
    const badJob = await t.post(`${api}/queues/pay/jobs`, { payload: {}, onLost: 'never' });
    expect(badJob.status).toBe(400);
    expect(badJob.json.error.field).toBe('onLost');
    const { id } = await lostAttempt();
    expect((await jobOf(id)).heldAt).toBeNull();
    const badReason = await t.post(`${api}/jobs/${id}/held/release`, { reason: '' });
    expect(badReason.status).toBe(400);
    expect(badReason.json.error.field).toBe('reason');
  });

  test("an operator's requeue of a running hold job holds it rather than queueing it", async () => {
    t = await setup(rules);
    await t.call('PATCH', `${api}/queues/pay/settings`, { onLost: 'hold' });
    const e = await t.enqueue('pay');
    await t.claim('pay', 'w1');
    const r = await t.post(`${api}/jobs/${e.id}/requeue`, { force: true, reason: 'host is being replaced' });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ job: { status: 'pending', heldAt: expect.any(String) }, requeue: { forced: true, held: true } });
    expect(await t.claim('pay', 'w2')).toEqual([]);
  });

  test("a worker's failure after it stopped its handler for a lost lease (abortedBy) holds a hold job; a bad abortedBy is a 400 naming it", async () => {
    t = await setup(rules);
    await t.call('PATCH', `${api}/queues/pay/settings`, { onLost: 'hold' });
    const e = await t.enqueue('pay');
    const [c] = await t.claim('pay', 'w1');
    const bad = await t.post(`${api}/jobs/${e.id}/fail`, { workerId: 'w1', lockToken: c!.lockToken, error: 'stopped', abortedBy: 'shutdown' });
    expect(bad.status).toBe(400);
    expect(bad.json.error.field).toBe('abortedBy');
    expect((await jobOf(e.id)).status).toBe('running');
    const failed = await t.post(`${api}/jobs/${e.id}/fail`, { workerId: 'w1', lockToken: c!.lockToken, error: 'JobAbortedError: fenced', abortedBy: 'lease_expired_locally' });
    expect(failed.status).toBe(200);
    expect(failed.json.job).toMatchObject({ status: 'pending', heldAt: expect.any(String), lostAttempt: { worker: 'w1', attempt: 1, why: expect.stringContaining('lease_expired_locally') } });
    const { events } = (await t.get(`${api}/jobs/${e.id}`)).json;
    expect(events.at(-1)).toMatchObject({ type: 'held', reason: 'lost_attempt_held' });
    expect(await t.claim('pay', 'w2')).toEqual([]);
  });
});
