/**
 * Zombies the reaper cannot see: a handler that never returns while its
 * heartbeat runs keeps a live lease, so the reaper leaves it until its
 * deadline (an hour by default). It is shown as suspect on the zombies page,
 * the jobs list and its job page, and named by the long_running alert, when
 * it has run longer than its queue's normal runtime allows (max(3 x p99 of
 * the queue's jobs completed in the last hour, lease), or 10 leases without
 * history), or past stallMs without progress. Nothing takes it back early.
 * The real app (open dashboard on loopback), default settings (lease 30 s,
 * heartbeat 5 s), the manual clock; the worker's heartbeats are real requests.
 */
import { afterEach, expect, test } from 'vitest';
import { databaseClock } from '../../src/core/clock.ts';
import { setup, type TestBed } from '../support/helpers.ts';

let t: TestBed;
afterEach(() => {
  expect(t.errors).toEqual([]);
  t.close();
});

const api = '/api/v1';

/** Enqueue, claim, let `ms` pass, complete: one healthy job with that runtime. */
async function runJob(q: string, ms: number) {
  const e = await t.enqueue(q);
  const [c] = await t.claim(q, 'W');
  t.clock.advance(ms);
  expect((await t.post(`${api}/jobs/${e.id}/complete`, { workerId: 'W', lockToken: c!.lockToken })).status).toBe(200);
}

interface Hanging {
  id: string;
  lockToken: string;
}

/** A claimed job whose handler hangs (its worker keeps heartbeating it: heartbeatFor). */
async function hangingJob(q: string): Promise<Hanging> {
  const e = await t.enqueue(q);
  const [c] = await t.claim(q, 'A');
  expect(c!.id).toBe(e.id);
  return { id: e.id, lockToken: c!.lockToken };
}

/** `ms` pass while the worker heartbeats its jobs every 5 s, as the SDK does (with the same progress, if given). */
async function heartbeatFor(jobs: Hanging[], ms: number, progress?: unknown) {
  for (let left = ms; left > 0; left -= 5_000) {
    t.clock.advance(Math.min(5_000, left));
    for (const j of jobs) {
      const body = { workerId: 'A', lockToken: j.lockToken, ...(progress === undefined ? {} : { progress }) };
      expect((await t.post(`${api}/jobs/${j.id}/heartbeat`, body)).status).toBe(200);
    }
  }
}

const zombieRow = (html: string, id: string) => {
  const start = html.indexOf(`<tr id="zombie-${id}"`);
  return start < 0 ? null : html.slice(start, html.indexOf('</tr>', start));
};
const longRunning = async (q: string) =>
  ((await t.get(`${api}/alerts`)).json.alerts as { name: string; queue: string; state: string; value: number; threshold: number; message: string }[]).find(
    (a) => a.queue === q && a.name === 'long_running',
  )!;

test('learned runtime: a heartbeating job past 3 x p99 of its queue is suspect on the zombies, jobs and job pages, named by long_running, and left running', async () => {
  t = await setup({});
  // Healthy jobs of 'reports' take 20 s: the threshold is max(3 x 20 s, lease 30 s) = 60 s.
  for (let i = 0; i < 3; i++) await runJob('reports', 20_000);
  const job = await hangingJob('reports');
  await heartbeatFor([job], 60_000);
  // At 60 s: slow, not yet suspect; its lease is live and its heartbeat on time, so nothing else lists it.
  expect(zombieRow((await t.get('/dashboard/zombies')).text, job.id)).toBeNull();
  expect(await longRunning('reports')).toMatchObject({ state: 'ok', threshold: 60_000 });

  await heartbeatFor([job], 5_000);
  const row = zombieRow((await t.get('/dashboard/zombies')).text, job.id);
  expect(row).not.toBeNull();
  expect(row).toContain('class="suspect"');
  expect(row).toContain('1 m 5 s · suspect: past 1 m 0 s · deadline in 58 m 55 s');
  expect(row).toContain('max(3 x p99 runtime 20 s, lease 30 s), learned from 3 completed in the last hour');
  expect(row).toContain('lease live: force on job page');

  const list = (await t.get('/dashboard/jobs?queue=reports&status=running')).text;
  expect(list).toContain('running · suspect');
  expect(list).toContain('suspect: running 1 m 5 s, past 1 m 0 s · deadline in 58 m 55 s');

  const page = (await t.get(`/dashboard/jobs/${job.id}`)).text;
  expect(page).toMatch(/<dd id="job-runtime" class="bad suspect"[^>]*>1 m 5 s \(this attempt\) · suspect: past its queue&#39;s normal runtime, max\(3 x p99 runtime 20 s, lease 30 s\)/);

  const alert = await longRunning('reports');
  expect(alert).toMatchObject({ state: 'firing', value: 65_000, threshold: 60_000 });
  expect(alert.message).toContain(`1 is suspect (heartbeating, so the reaper leaves it until the deadline): jobs ${job.id}`);
  const text = (await t.get('/metrics')).text;
  expect(text).toContain('leasehold_suspect_jobs{queue="reports"} 1');

  // Detection only: a reaper pass takes nothing, and the job is still running.
  const pass = (await t.post(`${api}/reaper/run`)).json;
  expect([...pass.requeued, ...pass.failed]).toEqual([]);
  expect((await t.get(`${api}/jobs/${job.id}`)).json.job.status).toBe('running');
});

test('a quick queue: suspect past its lease (the floor); a queue with nothing completed: past 10 leases', async () => {
  t = await setup({});
  for (let i = 0; i < 3; i++) await runJob('quick', 100); // p99 100 ms: max(300 ms, lease 30 s) = 30 s
  const quick = await hangingJob('quick');
  const fresh = await hangingJob('fresh'); // nothing completed: 10 x 30 s = 5 m
  await heartbeatFor([quick, fresh], 30_000);
  expect(zombieRow((await t.get('/dashboard/zombies')).text, quick.id)).toBeNull();
  await heartbeatFor([quick, fresh], 5_000);
  let zombies = (await t.get('/dashboard/zombies')).text;
  expect(zombieRow(zombies, quick.id)).toContain('35.0 s · suspect: past 30.0 s');
  expect(zombieRow(zombies, fresh.id)).toBeNull();

  await heartbeatFor([fresh], 265_000);
  expect(zombieRow((await t.get('/dashboard/zombies')).text, fresh.id)).toBeNull();
  await heartbeatFor([fresh], 5_000);
  zombies = (await t.get('/dashboard/zombies')).text;
  expect(zombieRow(zombies, fresh.id)).toContain('5 m 5 s · suspect: past 5 m 0 s');
  expect(zombieRow(zombies, fresh.id)).toContain('10 leases of 30 s (no completed job in the last hour to learn from)');
});

test('stallMs: a job heartbeating without progress is shown as suspect (stalled) on the jobs list and the zombies page', async () => {
  t = await setup({});
  await t.call('PATCH', `${api}/queues/q/settings`, { stallMs: 20_000 });
  const job = await hangingJob('q');
  // The first heartbeat (at 5 s) set the progress; 25 s without a change by 30 s.
  await heartbeatFor([job], 30_000, { step: 1 });
  const list = (await t.get('/dashboard/jobs?queue=q')).text;
  expect(list).toContain('running · stalled');
  expect(list).toContain('stalled: no progress for 25.0 s · suspect · deadline in 59 m 30 s');
  const row = zombieRow((await t.get('/dashboard/zombies')).text, job.id);
  expect(row).toContain('class="suspect"');
  expect(row).toContain('stalled 25.0 s');
});

test('on the database clock (every real server) the pages share one read of the thresholds and still show the suspect', async () => {
  t = await setup({}, { realClock: databaseClock });
  const job = await hangingJob('q');
  // Claimed 6 minutes ago by the database's clock, lease renewed just now: past 10 leases (nothing completed).
  await t.client.execute({ sql: 'UPDATE jobs SET started_at = started_at - 360000 WHERE id = ?', args: [Number(job.id)] });
  for (const path of ['/dashboard/zombies', '/dashboard/live/zombies', '/dashboard/jobs', `/dashboard/jobs/${job.id}`]) {
    const res = await t.get(path);
    expect(res.status, path).toBe(200);
    expect(res.text, path).toContain('suspect');
  }
  expect(zombieRow((await t.get('/dashboard/zombies')).text, job.id)).toContain('suspect: past 5 m 0 s');
});
