/**
 * The operator CLI (src/cli/ops.ts) against a real `leasehold serve` process:
 * jobs list/show/retry/cancel/requeue (one and in bulk), queues, workers,
 * --json, --dry-run, the cap, errors as one line, and the line that says
 * which database or server a data command uses.
 */
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { servedForCli } from '../support/cli-server.ts';
import { postJson } from '../support/process-helpers.ts';

const ADMIN = 'a'.repeat(24);
const WORKER = 'w'.repeat(24);

const served = servedForCli('cli-ops', { LEASEHOLD_ADMIN_TOKEN: ADMIN, LEASEHOLD_WORKER_TOKEN: WORKER }, { LEASEHOLD_ADMIN_TOKEN: ADMIN });
const { cli } = served;

const admin = { authorization: `Bearer ${ADMIN}` };
const api = served.api;

async function enqueue(queue: string, n: number): Promise<string[]> {
  const res = await postJson(api(`/queues/${queue}/jobs`), { jobs: Array.from({ length: n }, (_, i) => ({ payload: { i } })) }, admin);
  return res.json.jobs.map((j: { id: string }) => j.id);
}

async function job(id: string) {
  const res = await fetch(api(`/jobs/${id}`), { headers: admin });
  return (await res.json()) as { job: Record<string, any>; events: Record<string, any>[] };
}

test('jobs list and show: a table by default, the API answer with --json, and the server named on stderr', async () => {
  const ids = await enqueue('listq', 3);
  const table = await cli(['jobs', 'list', '--queue', 'listq']);
  expect(table.status).toBe(0);
  expect(table.stderr).toContain(`leasehold jobs: server ${served.server.url}`);
  const lines = table.stdout.trim().split('\n');
  expect(lines[0]).toMatch(/^id\s+queue\s+status\s+attempt\s+owner\s+lease/);
  expect(lines.slice(1).map((l) => l.split(/\s+/)[0])).toEqual([...ids].reverse());
  expect(lines[1]).toMatch(/listq\s+pending\s+0\/5/);

  const json = await cli(['jobs', 'list', '--queue', 'listq', '--limit', '2', '--json']);
  const page = JSON.parse(json.stdout);
  expect(page.jobs.map((j: { id: string }) => j.id)).toEqual([ids[2], ids[1]]);
  expect(page.next).toBe(ids[1]);
  expect((await cli(['jobs', 'list', '--queue', 'listq', '--limit', '2'])).stderr).toContain(`leasehold jobs: more: --after ${ids[1]}`);

  const show = await cli(['jobs', 'show', ids[0]!]);
  expect(show.status).toBe(0);
  expect(show.stdout).toMatch(/^job:\s+\S+/m);
  expect(show.stdout).toMatch(/^status:\s+pending$/m);
  // The enqueue has no event row (drizzle/0015): read from the job row, and marked so.
  expect(show.stdout).toMatch(/enqueued \(from the job row\)\s+- -> pending/);
  const shown = JSON.parse((await cli(['jobs', 'show', ids[0]!, '--json'])).stdout);
  expect(shown.job).toMatchObject({ id: ids[0], queue: 'listq', status: 'pending' });
}, 180_000);

test('jobs list --where: one clause or several (all must hold), the server\'s 400 for a bad one in one line', async () => {
  const res = await postJson(api('/queues/whereq/jobs'), { jobs: [{ payload: { customerId: 42, name: 'Acme' } }, { payload: { customerId: 7, name: 'Acme' } }, { payload: { customerId: 42, name: 'Bolt' } }] }, admin);
  const [a, , c] = res.json.jobs.map((j: { id: string }) => j.id);
  const ids = async (...args: string[]) => {
    const out = await cli(['jobs', 'list', '--queue', 'whereq', '--json', ...args]);
    expect(out.status, out.stderr).toBe(0);
    return JSON.parse(out.stdout).jobs.map((j: { id: string }) => j.id);
  };
  expect(await ids('--where', 'payload.customerId = 42')).toEqual([c, a]);
  expect(await ids('--where', 'payload.customerId = 42', '--where=payload.name ^= "Ac"')).toEqual([a]);
  const bad = await cli(['jobs', 'list', '--where', 'payload.customerId ~ 42']);
  expect(bad.status).toBe(1);
  expect(bad.stderr).toMatch(/leasehold jobs: 400 invalid_request: where: after the path, expected one of/);
}, 180_000);

test('jobs cancel, retry and requeue one job; requeue of a live lease is the server\'s 409 in one line until --force', async () => {
  const [a, b] = await enqueue('oneq', 2);
  const cancel = await cli(['jobs', 'cancel', a!, '--reason', 'not needed']);
  expect(cancel.status).toBe(0);
  expect(cancel.stdout).toContain(`job ${a} cancelled: now cancelled`);
  const after = await job(a!);
  expect(after.job.status).toBe('cancelled');
  expect(after.events.at(-1)).toMatchObject({ type: 'cancelled', reason: 'not needed', actor: expect.stringMatching(/^cli/) });
  expect((await cli(['jobs', 'retry', a!])).stdout).toContain('now pending');

  // A running job with a live lease: the server refuses a plain requeue.
  await postJson(api('/queues/oneq/claim'), { workerId: 'w-live', limit: 2, leaseMs: 60_000 }, { authorization: `Bearer ${WORKER}` });
  const refused = await cli(['jobs', 'requeue', b!]);
  expect(refused.status).toBe(1);
  const errorLines = refused.stderr.trim().split('\n').filter((l) => !l.includes(': server '));
  expect(errorLines).toHaveLength(1);
  // The reaper's own reason, from the server (src/core/reaper.ts).
  expect(errorLines[0]).toMatch(new RegExp(`^leasehold jobs: 409 conflict: .*the lease runs for [\\d.]+ s more`));
  expect((await job(b!)).job.status).toBe('running');

  const noReason = await cli(['jobs', 'requeue', b!, '--force']);
  expect(noReason.status).toBe(1);
  expect(noReason.stderr).toContain('400 invalid_request: a forced requeue needs a reason');
  const forced = await cli(['jobs', 'requeue', b!, '--force', '--reason', 'worker stuck']);
  expect(forced.status).toBe(0);
  expect(forced.stdout).toContain(`job ${b} force-requeued: now pending`);
  expect((await job(b!)).events.at(-1)).toMatchObject({ type: 'force_requeued_by_operator', reason: 'worker stuck' });
}, 180_000);

test('bulk: --dry-run lists the jobs it would touch and changes nothing; --limit acts on the lowest ids; above the cap is refused', async () => {
  const ids = await enqueue('bulkq', 4);
  const dry = await cli(['jobs', 'cancel', '--queue', 'bulkq', '--dry-run', '--limit', '2']);
  expect(dry.status).toBe(0);
  const rows = dry.stdout.trim().split('\n');
  expect(rows[0]).toMatch(/^id\s+status/);
  expect(rows.slice(1, 3).map((l) => l.split(/\s+/)[0])).toEqual(ids.slice(0, 2));
  expect(dry.stdout).toContain('dry run: 4 matching pending jobs in queue bulkq; 2 would be cancelled (limit 2, server cap 100). Nothing changed.');
  for (const id of ids) expect((await job(id)).job.status).toBe('pending');

  const dryJson = JSON.parse((await cli(['jobs', 'cancel', '--queue', 'bulkq', '--dry-run', '--json'])).stdout);
  expect(dryJson).toMatchObject({ dryRun: true, matching: 4, wouldChange: 4, cap: 100 });

  const capped = await cli(['jobs', 'cancel', '--queue', 'bulkq', '--limit', '500', '--reason', 'x']);
  expect(capped.status).toBe(1);
  expect(capped.stderr).toContain('leasehold jobs: 400 invalid_request: limit must be between 1 and 100, got 500 (field limit)');

  const noReason = await cli(['jobs', 'cancel', '--queue', 'bulkq']);
  expect(noReason.status).toBe(1);
  expect(noReason.stderr).toContain('(field reason)');

  const done = await cli(['jobs', 'cancel', '--queue', 'bulkq', '--limit', '2', '--reason', 'bad batch']);
  expect(done.status).toBe(0);
  expect(done.stdout).toContain(`2 jobs cancelled of 4 matching pending jobs in queue bulkq (limit 2, server cap 100): ${ids[0]} ${ids[1]}`);
  expect(await Promise.all(ids.map(async (id) => (await job(id)).job.status))).toEqual(['cancelled', 'cancelled', 'pending', 'pending']);

  const retried = JSON.parse((await cli(['jobs', 'retry', '--queue', 'bulkq', '--status', 'cancelled', '--reason', 'undo', '--json'])).stdout);
  expect(retried).toMatchObject({ dryRun: false, changed: 2, ids: ids.slice(0, 2) });
}, 180_000);

test('queues: list, show, pause, resume and settings', async () => {
  await enqueue('qq', 1);
  const list = await cli(['queues']);
  expect(list.status).toBe(0);
  expect(list.stdout).toMatch(/^queue\s+pending\s+ready\s+running\s+expired/);
  expect(list.stdout).toMatch(/^qq\s+1\s+1\s+0/m);

  expect((await cli(['queues', 'pause', 'qq'])).stdout).toContain('queue qq paused');
  expect(JSON.parse((await cli(['queues', 'show', 'qq', '--json'])).stdout).queue.paused).toBe(true);
  expect((await cli(['queues', 'resume', 'qq'])).stdout).toContain('queue qq resumed');

  const set = await cli(['queues', 'settings', 'qq', 'leaseMs=60000', 'heartbeatMs=10000']);
  expect(set.status).toBe(0);
  expect(set.stdout).toMatch(/^leaseMs\s+60000\s+this queue$/m);
  expect(set.stdout).toMatch(/^graceMs\s+10000\s+server default$/m);
  const shown = JSON.parse((await cli(['queues', 'show', 'qq', '--json'])).stdout).queue;
  expect(shown).toMatchObject({ paused: false, settings: { leaseMs: 60_000, heartbeatMs: 10_000 } });
  expect(set.stdout).toMatch(/^maxRunning\s+none\s+off$/m);
  const limited = await cli(['queues', 'settings', 'qq', 'maxRunning=3']);
  expect(limited.stdout).toMatch(/^maxRunning\s+3\s+this queue$/m);
  expect(JSON.parse((await cli(['queues', 'show', 'qq', '--json'])).stdout).queue.settings.maxRunning).toBe(3);
  const zero = await cli(['queues', 'settings', 'qq', 'maxRunning=0']);
  expect(zero.status).toBe(1);
  expect(zero.stderr).toMatch(/400 invalid_request: maxRunning/);
  expect((await cli(['queues', 'settings', 'qq', 'maxRunning=null'])).stdout).toMatch(/^maxRunning\s+none\s+off$/m);
  const rate = await cli(['queues', 'settings', 'qq', 'rateLimit=100/60000']);
  expect(rate.stdout).toMatch(/^rateLimit\s+100\/60000\s+this queue \(0 used this window\)$/m);
  expect((await cli(['queues', 'settings', 'qq', 'rateLimit=null'])).stdout).toMatch(/^rateLimit\s+none\s+off$/m);

  // The lease rules are the server's: a heartbeat over half the lease is its 400.
  const broken = await cli(['queues', 'settings', 'qq', 'heartbeatMs=40000']);
  expect(broken.status).toBe(1);
  expect(broken.stderr).toMatch(/400 invalid_request: heartbeatMs must be at most half the lease/);
  const bad = await cli(['queues', 'settings', 'qq', 'lease=5']);
  expect(bad.status).toBe(2);
  expect(bad.stderr).toContain('give key=milliseconds or key=null');

  // Dead letters and snoozes are settings too; indexed fields have their own subcommand.
  const dead = await cli(['queues', 'settings', 'qq', 'deadLetterQueue=qq-dead', 'maxSnoozes=7']);
  expect(dead.stdout).toMatch(/^deadLetterQueue\s+qq-dead\s+this queue$/m);
  expect(dead.stdout).toMatch(/^maxSnoozes\s+7\s+this queue$/m);
  expect((await cli(['queues', 'settings', 'qq', 'deadLetterQueue=null'])).stdout).toMatch(/^deadLetterQueue\s+none\s+off$/m);
  expect((await cli(['queues', 'indexed-fields', 'qq'])).stdout.trim()).toBe('queue qq: no indexed fields');
  expect((await cli(['queues', 'indexed-fields', 'qq', 'payload.customerId', 'result.status'])).stdout.trim()).toBe('queue qq: indexed fields payload.customerId, result.status');
  expect(JSON.parse((await cli(['queues', 'show', 'qq', '--json'])).stdout).queue.indexedFields).toEqual(['payload.customerId', 'result.status']);
  const badPath = await cli(['queues', 'indexed-fields', 'qq', "payload.x'--"]);
  expect(badPath.status).toBe(1);
  expect(badPath.stderr).toMatch(/400 invalid_request: fields/);
  expect((await cli(['queues', 'indexed-fields', 'qq', 'none'])).stdout.trim()).toBe('queue qq: no indexed fields');
  expect((await cli(['queues', 'indexed-fields', 'qq', 'none', 'payload.a'])).status).toBe(2);
}, 180_000);

test('workers: the registry as a table and as JSON', async () => {
  await postJson(api('/workers/beat'), { workerId: 'cli-w1', host: 'box-7', pid: 77, version: '9.9.9', queues: ['wq'], runningCount: 0 }, { authorization: `Bearer ${WORKER}` });
  const res = await cli(['workers', '--queue', 'wq']);
  expect(res.status).toBe(0);
  expect(res.stdout).toMatch(/^id\s+alive\s+last seen/);
  expect(res.stdout).toMatch(/^cli-w1\s+alive\s+.*\s+wq\s+box-7\s+77\s+9\.9\.9/m);
  expect(res.stderr).toMatch(/\d+ alive \(seen within 15000 ms\)/);
  const json = JSON.parse((await cli(['workers', '--json', '--queue', 'wq'])).stdout);
  expect(json.workers).toEqual([expect.objectContaining({ id: 'cli-w1', alive: true, host: 'box-7', pid: 77, heldJobs: 0, counters: null })]);

  // A worker that reports its counters: event-loop blocks (longest), heartbeat failures, leases lost.
  const counters = { eventLoopBlocks: 3, longestEventLoopBlockMs: 1200, heartbeatFailures: 4, leasesLost: 2 };
  await postJson(api('/workers/beat'), { workerId: 'cli-w2', queues: ['wq2'], runningCount: 0, ...counters }, { authorization: `Bearer ${WORKER}` });
  const hung = await cli(['workers', '--queue', 'wq2']);
  expect(hung.stdout).toMatch(/loop blocks \(longest\)\s+hb failures\s+leases lost/);
  expect(hung.stdout).toMatch(/^cli-w2\s+alive\s+.*\s+3 \(1200 ms\)\s+4\s+2\s+wq2/m);
}, 180_000);

test('errors: a refused token, an unreachable server and bad usage are one line each, with a non-zero exit', async () => {
  const refused = await cli(['jobs', 'list'], { LEASEHOLD_ADMIN_TOKEN: WORKER, LEASEHOLD_WORKER_TOKEN: undefined });
  expect(refused.status).toBe(1);
  expect(refused.stderr).toContain('leasehold jobs: 403 forbidden: this call needs the admin token; the worker token cannot make it (field authorization)');

  const nowhere = await cli(['workers', '--url', 'http://127.0.0.1:9']);
  expect(nowhere.status).toBe(1);
  expect(nowhere.stderr).toContain('leasehold workers: cannot reach the server at http://127.0.0.1:9');
  expect(nowhere.stderr).not.toMatch(/\bat .*:\d+:\d+/);

  const unknown = await cli(['jobs', 'frob']);
  expect(unknown.status).toBe(2);
  expect(unknown.stderr).toContain('unknown subcommand "frob"');
  expect((await cli(['jobs', 'retry'])).stderr).toContain('needs a job id, or --queue');
  expect((await cli(['jobs', 'cancel', '1', '--force'])).stderr).toContain('--force is only for requeue');
}, 180_000);

test('enqueue, stats and reap: the server when a URL is given, else the configured database, and stderr says which', async () => {
  const viaServer = await cli(['enqueue', '--queue', 'dataq', '--payload', '{"n":1}']);
  expect(viaServer.status).toBe(0);
  expect(viaServer.stderr).toContain(`leasehold enqueue: server ${served.server.url}`);
  const id = JSON.parse(viaServer.stdout).job.id;
  expect((await job(id)).job).toMatchObject({ queue: 'dataq', payload: { n: 1 } });

  const stats = await cli(['stats', '--json']);
  expect(stats.stderr).toContain(`leasehold stats: server ${served.server.url}`);
  expect(JSON.parse(stats.stdout).find((q: { name: string }) => q.name === 'dataq')).toMatchObject({ counts: { pending: 1 } });
  const reap = await cli(['reap']);
  expect(reap.status).toBe(0);
  expect(reap.stderr).toContain(`leasehold reap: server ${served.server.url}`);
  expect(reap.stdout).toMatch(/^reaper: requeued \d+, failed \d+/);

  // No URL: the configured database, named.
  const file = `file:${join(served.dir, 'local.db')}`;
  const local = await cli(['stats', '--json'], { LEASEHOLD_URL: undefined, LEASEHOLD_DATABASE_URL: file });
  expect(local.status).toBe(0);
  expect(local.stderr).toContain(`leasehold stats: database ${file} (no --url or LEASEHOLD_URL given)`);
  expect(JSON.parse(local.stdout)).toEqual([]);
  const localEnqueue = await cli(['enqueue', '--queue', 'dataq', '--database-url', file], { LEASEHOLD_URL: undefined });
  expect(localEnqueue.stderr).toContain(`leasehold enqueue: database ${file}`);
  const localReap = await cli(['reap'], { LEASEHOLD_URL: undefined, LEASEHOLD_DATABASE_URL: file });
  expect(localReap.stderr).toContain(`leasehold reap: database ${file}`);
}, 180_000);

test('schedules: add, list, show, pause, resume, delete; the server refuses a bad cron in one line', async () => {
  const added = await cli(['schedules', 'add', 'nightly', '--queue', 'reports', '--cron', '30 2 * * *', '--tz', 'Europe/Berlin', '--payload', '{"kind":"nightly"}']);
  expect(added.status, added.stderr).toBe(0);
  expect(added.stdout).toMatch(/^timing\s+30 2 \* \* \* \(Europe\/Berlin\)$/m);
  expect((await cli(['schedules'])).stdout).toMatch(/^nightly\s+reports\s+30 2 \* \* \* \(Europe\/Berlin\)\s+no\s+\d{4}-/m);
  expect((await cli(['schedules', 'pause', 'nightly'])).stdout).toMatch(/^paused\s+yes$/m);
  const shown = JSON.parse((await cli(['schedules', 'show', 'nightly', '--json'])).stdout).schedule;
  expect(shown).toMatchObject({ name: 'nightly', queue: 'reports', paused: true, payload: { kind: 'nightly' }, nextRuns: [] });
  expect((await cli(['schedules', 'resume', 'nightly'])).stdout).toMatch(/^paused\s+no$/m);
  const bad = await cli(['schedules', 'add', 'broken', '--queue', 'reports', '--cron', '99 * * * *']);
  expect(bad.status).toBe(1);
  expect(bad.stderr).toMatch(/400 invalid_request: cron is not a valid cron expression.*\(field cron\)/);
  expect((await cli(['schedules', 'delete', 'nightly'])).stdout).toContain('schedule nightly deleted');
  expect((await cli(['schedules'])).stdout).toContain('(no schedules)');
}, 180_000);

test('queues delete: refused with the reason while the queue holds jobs, then deleted (with --purge for its finished ones)', async () => {
  const [id] = await enqueue('gone', 1);
  const busy = await cli(['queues', 'delete', 'gone']);
  expect(busy.status).toBe(1);
  expect(busy.stderr).toContain('409 conflict: queue gone still holds 1 pending and 0 running jobs');
  await cli(['jobs', 'cancel', id!, '--reason', 'not needed']);
  const kept = await cli(['queues', 'delete', 'gone']);
  expect(kept.status).toBe(1);
  expect(kept.stderr).toContain('1 finished jobs kept for retention (purge deletes them with the queue)');
  const done = await cli(['queues', 'delete', 'gone', '--purge']);
  expect(done.status).toBe(0);
  expect(done.stdout).toContain('queue gone deleted with 1 finished job');
  const missing = await cli(['queues', 'delete', 'gone']);
  expect(missing.status).toBe(1);
  expect(missing.stderr).toContain('404 not_found: no queue is named gone (field queue)');
  expect((await cli(['queues', 'delete'])).status).toBe(2);
}, 180_000);
