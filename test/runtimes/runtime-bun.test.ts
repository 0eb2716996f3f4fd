/**
 * The single binary (`npm run build:binary`, src/cli/bun.ts): built here,
 * copied alone into an empty directory and run there with no node_modules and
 * an environment of PATH only: server, reaper, stale-write fencing, shutdown,
 * and the reap / stats / migrate / enqueue / work commands.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, expect, test } from 'vitest';
import { defaultConfig } from '../../src/core/config.ts';
import { embeddedMigrations } from '../../src/runtime/embedded-migrations.ts';
import { openDatabase } from '../../src/runtime/node.ts';
import { FAST_LEASES } from '../support/process-helpers.ts';
import { until } from '../support/until.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const BUN = join(ROOT, 'node_modules', '.bin', 'bun');
const FAST = { ...FAST_LEASES, LEASEHOLD_REAPER_INTERVAL_MS: '200' };
const ENV = { PATH: '/usr/local/bin:/usr/bin:/bin' };

let buildDir: string;
let binary: string;
let dir: string;
const children: ChildProcess[] = [];

beforeAll(() => {
  buildDir = mkdtempSync(join(tmpdir(), 'leasehold-build-'));
  binary = join(buildDir, 'leasehold');
  const res = spawnSync(BUN, ['scripts/build-binary.ts', '--outfile', binary], { cwd: ROOT, encoding: 'utf8', timeout: 150_000 });
  if (res.status !== 0) throw new Error(`build failed (${res.status ?? res.signal}):\n${res.stdout}\n${res.stderr}`);
}, 180_000);
afterAll(() => rmSync(buildDir, { recursive: true, force: true }));

beforeEach(() => {
  // The binary alone in an empty directory.
  dir = mkdtempSync(join(tmpdir(), 'leasehold-bin-'));
  copyFileSync(binary, join(dir, 'leasehold'));
  chmodSync(join(dir, 'leasehold'), 0o755);
});
afterEach(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  children.length = 0;
  rmSync(dir, { recursive: true, force: true });
});

/** Runs a command of the binary to the end. */
const cli = (...args: string[]) => spawnSync('./leasehold', args, { cwd: dir, env: ENV, encoding: 'utf8', timeout: 20_000 });

interface Running {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** Starts a long-running command of the binary; resolves once its output matches `ready`. */
function start(args: string[], env: Record<string, string>, ready: RegExp): Promise<Running & { match: RegExpExecArray }> {
  const child = spawn('./leasehold', args, { cwd: dir, env: { ...ENV, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${args[0]} did not get ready in time:\n${output}`)), 15_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = ready.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve({ child, output: () => output, exited, match });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${args[0]} exited with ${code} before it was ready:\n${output}`));
    });
  });
}

const serve = async () => {
  const s = await start(['serve', '--port', '0', '--database-url', 'file:./x.db'], FAST, /leasehold listening on (http:\/\/\S+)/);
  return { ...s, url: s.match[1]! };
};

async function post(url: string, body: unknown) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as any };
}


const withTimeout = <T>(p: Promise<T>, ms: number, what: string) =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`timed out: ${what}`)), ms))]);

test('the binary serves from an empty directory: the reaper takes back an expired lease, the stale completion gets 409, SIGTERM stops it', async () => {
  expect(readdirSync(dir)).toEqual(['leasehold']);
  const server = await serve();
  expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  expect(server.url).not.toMatch(/:0$/);
  const api = `${server.url}/api/v1`;

  const enq = await post(`${api}/queues/bin/jobs`, { payload: { n: 1 } });
  expect(enq.status).toBe(201);
  const id = enq.json.job.id as string;

  // A producer waits on the job server-side (POST /jobs/wait): answered when B completes it.
  const waited = post(`${api}/jobs/wait`, { jobs: [{ id }], waitMs: 30_000 });

  const a = await post(`${api}/queues/bin/claim`, { workerId: 'A' });
  expect(a.status).toBe(200);
  const tokenA = a.json.jobs[0].lockToken as string;

  // A never heartbeats: the lease (1.5 s) expires, the in-process reaper requeues the job, B gets it.
  const b = await until('B claims the reaped job', async () => {
    const res = await post(`${api}/queues/bin/claim`, { workerId: 'B' });
    return res.json.jobs?.[0] as { id: string; lockToken: string } | undefined;
  });
  expect(b.id).toBe(id);
  expect((await post(`${api}/jobs/${id}/complete`, { workerId: 'B', lockToken: b.lockToken, result: 'from B' })).status).toBe(200);
  const late = await post(`${api}/jobs/${id}/complete`, { workerId: 'A', lockToken: tokenA, result: 'from A' });
  expect(late.status).toBe(409);
  expect((await waited).json.jobs.map((j: any) => [j.job.id, j.job.status, j.job.result])).toEqual([[id, 'completed', 'from B']]);

  // A wait still open at shutdown is answered at once, not after its 30 s.
  const pending = (await post(`${api}/queues/bin/jobs`, { payload: { n: 2 } })).json.job.id as string;
  const open = post(`${api}/jobs/wait`, { jobs: [{ id: pending }], waitMs: 30_000 });
  await new Promise((r) => setTimeout(r, 200));

  const detail = (await (await fetch(`${api}/jobs/${id}`)).json()) as any;
  expect(detail.job).toMatchObject({ status: 'completed', result: 'from B', attempt: 2 });
  expect(detail.events.find((e: any) => e.type === 'reaped')?.reason).toBe('reaped_due_to_expired_lease');
  expect(server.output()).toContain('reaper: requeued 1');

  server.child.kill('SIGTERM');
  expect((await withTimeout(open, 10_000, 'the open wait answered at shutdown')).json).toEqual({ jobs: [], missing: [], more: false });
  expect(await withTimeout(server.exited, 10_000, 'exit after SIGTERM')).toBe(0);
  expect(server.output()).toContain('SIGTERM, shutting down');

  // The one-shot commands, on the same database file.
  const reap = cli('reap', '--json', '--database-url', 'file:./x.db');
  expect(reap.status, reap.stderr).toBe(0);
  expect(JSON.parse(reap.stdout)).toMatchObject({ requeued: [], failed: [], raced: 0 });
  const stats = cli('stats', '--json', '--database-url', 'file:./x.db');
  expect(stats.status, stats.stderr).toBe(0);
  expect(JSON.parse(stats.stdout)).toEqual([expect.objectContaining({ name: 'bin', counts: expect.objectContaining({ completed: 1, pending: 1 }) })]);
  // Nothing but the binary and the database files were needed or written.
  expect(readdirSync(dir).filter((f) => !f.startsWith('x.db')).sort()).toEqual(['leasehold']);
}, 60_000);

test('the binary and Node keep the same migration bookkeeping, and the CLI commands run from the binary', async () => {
  const migrate = cli('migrate', '--database-url', 'file:./bin.db');
  expect(migrate.status, migrate.stderr).toBe(0);
  expect(cli('migrate', '--database-url', 'file:./bin.db').status).toBe(0);

  const rows = async (file: string) => {
    const opened = await openDatabase(defaultConfig({ databaseUrl: `file:${join(dir, file)}` }));
    try {
      return (await opened.client.execute('SELECT hash, created_at FROM __drizzle_migrations ORDER BY id')).rows.map((r) => [r.hash, Number(r.created_at)]);
    } finally {
      opened.close();
    }
  };
  // Node opening the binary's database finds nothing to apply (else it would add rows), and the rows match Node's own.
  const fromBinary = await rows('bin.db');
  expect(fromBinary).toHaveLength(embeddedMigrations().files.length);
  expect(fromBinary).toEqual(await rows('node.db'));
  // And the binary opening Node's database applies nothing either.
  expect(cli('migrate', '--database-url', 'file:./node.db').status).toBe(0);
  expect(await rows('node.db')).toEqual(fromBinary);

  // enqueue straight into the file, then `work -- CMD` over HTTP against the binary's server.
  const enq = cli('enqueue', '--queue', 'sh', '--payload', '{"hello":"bun"}', '--database-url', 'file:./x.db');
  expect(enq.status, enq.stderr).toBe(0);
  const id = JSON.parse(enq.stdout).job.id as string;
  const server = await serve();
  const worker = await start(['work', '--queue', 'sh', '--url', server.url, '--', '/bin/cat'], {}, /./);
  const done = await until('the worker completed the job', async () => {
    const detail = (await (await fetch(`${server.url}/api/v1/jobs/${id}`)).json()) as any;
    return detail.job.status === 'completed' && detail.job;
  });
  expect(done.result).toMatchObject({ exitCode: 0, json: { hello: 'bun' } });
  worker.child.kill('SIGTERM');
  server.child.kill('SIGTERM');
  expect(await withTimeout(worker.exited, 10_000, 'worker exit')).toBe(0);
  expect(await withTimeout(server.exited, 10_000, 'server exit')).toBe(0);
}, 60_000);

test('the binary is one file of a sensible size', () => {
  const size = statSync(binary).size;
  expect(size).toBeGreaterThan(50 * 1024 * 1024);
  expect(size).toBeLessThan(250 * 1024 * 1024);
});
