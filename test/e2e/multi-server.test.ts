/**
 * Beyond one process: two leasehold servers on one database file, with
 * workers on each, never double-claim and never accept a stale write; and a
 * server whose own clock is a minute off (more than the grace period) agrees
 * with the other on every lease, because leases come from the database clock.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '@libsql/client';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { createWorker, httpTransport, type Worker } from '../../src/worker/index.ts';
import { postJson, startServerProcess, type ServerProcess } from '../support/process-helpers.ts';
import { until } from '../support/until.ts';

const SKEW = join(import.meta.dirname, '..', 'support', 'fixtures', 'skew-clock.cjs');
const quiet = { info() {}, warn() {}, error() {} };
const LEASES = { LEASEHOLD_LEASE_MS: '2000', LEASEHOLD_HEARTBEAT_MS: '300', LEASEHOLD_GRACE_MS: '800', LEASEHOLD_WORKER_ALIVE_MS: '1200', LEASEHOLD_MAX_REAP_DEFER_MS: '600', LEASEHOLD_REAPER_INTERVAL_MS: '250' };

let dir: string;
let dbUrl: string;
const servers: ServerProcess[] = [];
const workers: Worker[] = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-multi-'));
  dbUrl = `file:${join(dir, 'shared.db')}`;
});
afterEach(async () => {
  await Promise.all(workers.map((w) => w.close({ drainTimeoutMs: 0 })));
  workers.length = 0;
  for (const s of servers) s.child.kill('SIGKILL');
  servers.length = 0;
  rmSync(dir, { recursive: true, force: true });
});


async function twoServers(envB: Record<string, string> = {}) {
  const a = await startServerProcess(['--database-url', dbUrl], LEASES);
  servers.push(a);
  const b = await startServerProcess(['--database-url', dbUrl], { ...LEASES, ...envB });
  servers.push(b);
  return [a, b] as const;
}

test('two servers on one database, workers on each: every job runs to completion once, no stale write accepted', async () => {
  const [a, b] = await twoServers();
  const total = 400;
  for (let i = 0; i < total; i += 100) {
    const res = await postJson(`${a.url}/api/v1/queues/multi/jobs`, { jobs: Array.from({ length: 100 }, (_, j) => ({ payload: { n: i + j } })) });
    expect(res.status).toBe(201);
  }
  const runs = new Map<number, number>();
  for (const [i, server] of [a, b, a, b].entries()) {
    const w = createWorker({
      transport: httpTransport({ url: server.url }),
      queue: 'multi',
      concurrency: 4,
      // Small claims keep the four workers contending for the same rows all
      // through the run; with the default (200) the first worker can take the
      // whole backlog before the last one starts.
      claimBatch: 8,
      workerId: `w${i}`,
      pollMs: 20,
      maxPollMs: 100,
      handleSignals: false,
      logger: quiet,
      async handler(ctx) {
        const n = (ctx.job.payload as { n: number }).n;
        runs.set(n, (runs.get(n) ?? 0) + 1);
        await new Promise((r) => setTimeout(r, Math.random() * 5));
        return { n };
      },
    });
    workers.push(w.start());
  }
  await until('all completed', () => workers.reduce((s, w) => s + w.stats.completed, 0) >= total);

  const db = createClient({ url: dbUrl });
  try {
    const statuses = await db.execute(`SELECT status, count(*) AS n FROM jobs GROUP BY status`);
    expect(statuses.rows.map((r) => [r.status, Number(r.n)])).toEqual([['completed', total]]);
    // One claim per job (a clean job's enqueue and completion have no event
    // row, drizzle/0015; each job is completed, checked above): nothing ran
    // twice, nothing was taken twice.
    const perJob = await db.execute(`SELECT j.id, (SELECT count(*) FROM events e WHERE e.job_id = j.id AND e.type = 'claimed') AS claims FROM jobs j`);
    expect(perJob.rows.length).toBe(total);
    expect(perJob.rows.every((r) => Number(r.claims) === 1)).toBe(true);
    expect((await db.execute(`SELECT count(*) AS n FROM events WHERE type IN ('enqueued', 'completed')`)).rows[0]!.n).toBe(0);
    // Every completion came from the worker that held the claim (the row's last transition names who completed it).
    const mismatched = await db.execute(`SELECT j.id FROM jobs j JOIN events k ON k.job_id = j.id AND k.type = 'claimed'
      WHERE j.last_event <> 'completed' OR j.last_event_actor IS NOT k.worker_id`);
    expect(mismatched.rows).toEqual([]);
    // Both servers did work: w0 and w2 talk to server a, w1 and w3 to b.
    const byWorker = await db.execute(`SELECT last_event_actor AS worker FROM jobs WHERE status = 'completed' GROUP BY last_event_actor`);
    const workersSeen = byWorker.rows.map((r) => String(r.worker));
    expect(workersSeen.some((w) => w === 'w0' || w === 'w2')).toBe(true);
    expect(workersSeen.some((w) => w === 'w1' || w === 'w3')).toBe(true);
  } finally {
    db.close();
  }
  expect([...runs.values()].every((n) => n === 1)).toBe(true);
  expect(runs.size).toBe(total);
});

test('a server whose own clock is a minute ahead agrees with the other on leases (the database keeps the time)', async () => {
  // B's JavaScript clock is 60 s ahead: far more than the 800 ms grace.
  const skewed = { NODE_OPTIONS: `--require ${SKEW}`, SKEW_MS: '60000' };
  const seen = Number(execFileSync(process.execPath, ['-e', 'process.stdout.write(String(Date.now()))'], { env: { ...process.env, ...skewed } }).toString());
  expect(seen - Date.now()).toBeGreaterThan(55_000); // the preload really moves a process's clock
  const [a, b] = await twoServers(skewed);
  const { json: enq } = await postJson(`${a.url}/api/v1/queues/clock/jobs`, { payload: {} });
  const id = enq.job.id as string;
  // Claimed through the skewed server...
  const { json: claim } = await postJson(`${b.url}/api/v1/queues/clock/claim`, { workerId: 'wb', leaseMs: 2000 });
  const job = claim.jobs[0];
  const leaseFromB = Date.parse(job.leaseExpiresAt);
  // ...its lease is two seconds from the real now, not from B's clock.
  expect(Math.abs(leaseFromB - (Date.now() + 2000))).toBeLessThan(1_500);
  // Both servers' reapers run all along; a heartbeat through A keeps the lease.
  for (let i = 0; i < 8; i++) {
    const hb = await postJson(`${a.url}/api/v1/jobs/${id}/heartbeat`, { workerId: 'wb', lockToken: job.lockToken });
    expect(hb.status).toBe(200);
    await new Promise((r) => setTimeout(r, 300));
  }
  // Neither reaper took the healthy job, though B "thinks" its lease ended a minute ago.
  const mid = await (await fetch(`${b.url}/api/v1/jobs/${id}`)).json() as { job: { status: string }; events: { type: string }[] };
  expect(mid.job.status).toBe('running');
  expect(mid.events.map((e) => e.type)).toEqual(['enqueued', 'claimed']);
  // Stop heartbeating: both agree it is reaped after lease + grace, not before.
  await until('reaped', async () => {
    const r = await (await fetch(`${a.url}/api/v1/jobs/${id}`)).json() as { job: { status: string } };
    return r.job.status === 'pending';
  }, 10_000);
  const done = await postJson(`${b.url}/api/v1/jobs/${id}/complete`, { workerId: 'wb', lockToken: job.lockToken });
  expect(done.status).toBe(409);
});
