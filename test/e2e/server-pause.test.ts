/**
 * The server process is paused (SIGSTOP) for longer than lease + grace while
 * a plain HTTP worker holds jobs and keeps heartbeating. On resume the
 * reaper must not take those jobs before the heartbeats sent meanwhile are
 * read: it notices the gap in its own passes and holds back for one heartbeat
 * interval plus grace. A job nobody heartbeats is still taken after that.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { postJson, startServerProcess, type ServerProcess } from '../support/process-helpers.ts';
import { until } from '../support/until.ts';

const T = { lease: 1_500, heartbeat: 300, grace: 300 };

let dir: string;
let server: ServerProcess;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-pause-'));
  server = await startServerProcess(['--database-url', `file:${join(dir, 'q.db')}`], {
    LEASEHOLD_LEASE_MS: String(T.lease),
    LEASEHOLD_HEARTBEAT_MS: String(T.heartbeat),
    LEASEHOLD_GRACE_MS: String(T.grace),
    LEASEHOLD_WORKER_ALIVE_MS: '600',
    LEASEHOLD_MAX_REAP_DEFER_MS: '300',
    LEASEHOLD_REAPER_INTERVAL_MS: '200',
  });
});

afterEach(async () => {
  server.child.kill('SIGCONT');
  server.child.kill('SIGKILL');
  await server.exited;
  rmSync(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('a paused server does not hand a live worker its own jobs back on resume', async () => {
  const url = server.url;
  for (let i = 0; i < 5; i++) expect((await postJson(`${url}/api/v1/queues/q/jobs`, { payload: i })).status).toBe(201);
  const claimed = (await postJson(`${url}/api/v1/queues/q/claim`, { workerId: 'plain-http', limit: 5 })).json.jobs as { id: string; lockToken: string }[];
  expect(claimed).toHaveLength(5);
  // Four are heartbeated by a worker that stays alive; the fifth's worker is gone.
  const live = claimed.slice(0, 4);
  const abandoned = claimed[4]!;

  const refused: number[] = [];
  let beating = true;
  const beats = (async () => {
    while (beating) {
      // Not awaited one by one: a real worker's timer keeps firing while the server does not answer.
      for (const job of live) {
        void postJson(`${url}/api/v1/jobs/${job.id}/heartbeat`, { workerId: 'plain-http', lockToken: job.lockToken })
          .then((r) => r.status !== 200 && refused.push(r.status))
          .catch(() => {});
      }
      await sleep(T.heartbeat);
    }
  })();

  await sleep(T.heartbeat * 2);
  server.child.kill('SIGSTOP');
  await sleep(T.lease + T.grace + 1_000);
  server.child.kill('SIGCONT');
  // Past the hold (heartbeat + grace) with room to spare.
  await sleep((T.heartbeat + T.grace) * 3);
  beating = false;
  await beats;

  expect(refused).toEqual([]);
  for (const job of live) {
    const done = await postJson(`${url}/api/v1/jobs/${job.id}/complete`, { workerId: 'plain-http', lockToken: job.lockToken, result: 'mine' });
    expect(done.status, `job ${job.id}: ${JSON.stringify(done.json)}`).toBe(200);
  }
  // The abandoned job is still taken back once the hold is over.
  await until('the abandoned job is requeued', async () => {
    const j = (await (await fetch(`${url}/api/v1/jobs/${abandoned.id}`)).json()) as { job: { status: string; attemptCount?: number } };
    return j.job.status !== 'running' ? j : undefined;
  });
  // The reaper said what it held back and why. The abandoned job's lease
  // certainly ran out during the pause, so the first pass after the resume held
  // it; a live job's buffered heartbeat may be read before that pass, and then
  // there is nothing to hold for it, so its trail is not the one to check.
  type Trail = { events: { type: string; reason: string | null; message: string | null }[] };
  const trail = (await (await fetch(`${url}/api/v1/jobs/${abandoned.id}`)).json()) as Trail;
  const held = trail.events.find((e) => e.type === 'reap_held');
  expect(held?.reason).toBe('server_gap');
  expect(held?.message).toMatch(/the reaper did not run for \d+\.\d s \(the server was paused or stalled\)/);
  for (const job of live) {
    const liveTrail = (await (await fetch(`${url}/api/v1/jobs/${job.id}`)).json()) as Trail;
    for (const e of liveTrail.events.filter((e) => e.type === 'reap_held')) expect(e.reason).toBe('server_gap');
  }
  expect(server.output()).toMatch(/reaper: .*held \d+, .*the reaper did not run for/);
});
