/**
 * Dead letters and snooze over the real app (app.request): a queue's
 * deadLetterQueue setting, a job failing for good listed there with its
 * history, a redrive's dry run that changes nothing, a redrive that sends it
 * back to run again, and bad input refused by a 4xx naming the field.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';

let t: TestBed;
afterEach(() => t?.close());

describe('dead letters and redrive', () => {
  test('a job failing for good is listed in the dead-letter queue; a dry run changes nothing; the redrive sends it back and it runs again', async () => {
    t = await setup();
    expect((await t.call('PATCH', '/api/v1/queues/emails/settings', { deadLetterQueue: 'emails-dead' })).status).toBe(200);
    const job = await t.enqueue('emails', { payload: { to: 'a@example.com' }, maxAttempts: 1 });
    const [claimed] = await t.claim('emails', 'w1');
    const failed = await t.post(`/api/v1/jobs/${job.id}/fail`, { workerId: 'w1', lockToken: claimed!.lockToken, error: 'smtp refused' });
    expect(failed.json.job).toMatchObject({ status: 'failed', queue: 'emails', lastError: 'smtp refused' });
    expect((await t.get(`/api/v1/jobs/${job.id}`)).json.job).toMatchObject({ status: 'failed', queue: 'emails', deadLetterQueue: 'emails-dead', lastError: 'smtp refused' });
    expect((await t.events(job.id)).map((e) => e.type).slice(-2)).toEqual(['failed', 'dead_lettered']);

    const dry = await t.post('/api/v1/queues/emails-dead/redrive', { dryRun: true });
    expect(dry.status).toBe(200);
    expect(dry.json).toMatchObject({ dryRun: true, matching: 1, ids: [job.id], jobs: [{ id: job.id, queue: 'emails', died: 'failed (attempts_exhausted)', lastError: 'smtp refused' }] });
    expect((await t.get(`/api/v1/jobs/${job.id}`)).json.job).toMatchObject({ status: 'failed', deadLetterQueue: 'emails-dead' });

    // The claims waiting on the queue the job goes back to are woken by the redrive, not left to their next look.
    const woken: [string, number][] = [];
    const notify = t.engine.claimWaiters.notify.bind(t.engine.claimWaiters);
    t.engine.claimWaiters.notify = (queue: string, n: number) => (woken.push([queue, n]), notify(queue, n));
    const done = await t.post('/api/v1/queues/emails-dead/redrive', { reason: 'smtp fixed' });
    expect(done.json).toMatchObject({ dryRun: false, changed: 1, ids: [job.id], movedTo: [{ queue: 'emails', jobs: 1 }] });
    expect(woken).toEqual([['emails', 1]]);
    const [entry] = (await t.get('/api/v1/audit?action=jobs.bulk')).json.entries;
    expect(entry).toMatchObject({ action: 'jobs.bulk', queue: 'emails-dead', reason: 'smtp fixed', after: { redrive: 'emails-dead', changed: 1 } });
    expect((await t.get(`/api/v1/jobs/${job.id}`)).json.job).toMatchObject({ status: 'pending', queue: 'emails', attempt: 0, deadLetterQueue: null });
    const [again] = await t.claim('emails', 'w2');
    expect(again).toMatchObject({ id: job.id });
    expect((await t.post(`/api/v1/jobs/${job.id}/complete`, { workerId: 'w2', lockToken: again!.lockToken, result: 'sent' })).json.job).toMatchObject({ status: 'completed' });
    const metrics = await (await t.app.request('/metrics')).text();
    expect(metrics).toMatch(/leasehold_jobs_dead_lettered_total\{queue="emails"\} 1/);
    expect(metrics).toMatch(/leasehold_jobs_redriven_total\{queue="emails"\} 1/);
    expect(t.errors).toEqual([]);
  });

  test('bad input is refused by a 4xx that names the field, and changes nothing', async () => {
    t = await setup();
    const own = await t.call('PATCH', '/api/v1/queues/q/settings', { deadLetterQueue: 'q' });
    expect(own.status).toBe(400);
    expect(own.json.error.field).toBe('deadLetterQueue');
    for (const [body, field] of [
      [{ deadLetterQueue: 'has space' }, 'deadLetterQueue'],
      [{ deadLetterQueue: 7 }, 'deadLetterQueue'],
      [{ maxSnoozes: -1 }, 'maxSnoozes'],
      [{ maxSnoozes: 'many' }, 'maxSnoozes'],
    ] as const) {
      const res = await t.call('PATCH', '/api/v1/queues/q/settings', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.error.field).toBe(field);
    }
    expect((await t.get('/api/v1/queues/q')).json.queue?.settings ?? {}).not.toMatchObject({ deadLetterQueue: 'q' });
    const noReason = await t.post('/api/v1/queues/dead/redrive', {});
    expect(noReason.status).toBe(400);
    expect(noReason.json.error.field).toBe('reason');
    for (const [body, field] of [
      [{ dryRun: true, limit: 0 }, 'limit'],
      [{ dryRun: true, ids: ['abc'] }, 'ids[0]'],
      [{ dryRun: 'yes' }, 'dryRun'],
    ] as const) {
      const res = await t.post('/api/v1/queues/dead/redrive', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.error.field).toBe(field);
    }
    const job = await t.enqueue('q');
    const [claimed] = await t.claim('q', 'w1');
    for (const [body, field] of [
      [{ workerId: 'w1', lockToken: claimed!.lockToken }, 'delayMs'],
      [{ workerId: 'w1', lockToken: claimed!.lockToken, delayMs: -5 }, 'delayMs'],
      [{ workerId: 'w1', delayMs: 5 }, 'lockToken'],
    ] as const) {
      const res = await t.post(`/api/v1/jobs/${job.id}/snooze`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.error.field).toBe(field);
    }
    const stale = await t.post(`/api/v1/jobs/${job.id}/snooze`, { workerId: 'w1', lockToken: 'stale', delayMs: 5 });
    expect(stale.status).toBe(409);
    expect(stale.json.error.code).toBe('lease_lost');
    expect((await t.get(`/api/v1/jobs/${job.id}`)).json.job).toMatchObject({ status: 'running', snoozes: 0 });
    expect(t.errors).toEqual([]);
  });
});
