/**
 * `leasehold work -- CMD`: a real server in-process, a real `leasehold work`
 * process over HTTP, and real shell commands per job.
 */
import { silentLogger } from '../../src/core/log.ts';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { TailBuffer } from '../../src/cli/work.ts';
import { defaultConfig } from '../../src/core/config.ts';
import { startServer, type RunningServer } from '../../src/runtime/node.ts';
import { until } from '../support/until.ts';

/** until(), saying what was seen so far when it times out. */
const untilWork = <T>(what: string, check: Parameters<typeof until<T>>[1], timeoutMs = 15_000) => until(what, check, timeoutMs, () => `leasehold work said:\n${output}`);

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'leasehold.js');

let dir: string;
let server: RunningServer;
const children: ChildProcess[] = [];
const pids: number[] = [];
/** Everything the `leasehold work` processes printed, for failure messages. */
let output = '';

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-work-'));
  server = await startServer(
    defaultConfig({ databaseUrl: `file:${join(dir, 'x.db')}`, port: 0, leaseMs: 1500, heartbeatMs: 300, graceMs: 300, workerAliveMs: 600, maxReapDeferMs: 300, reaperIntervalMs: 200, backoffBaseMs: 50, backoffMaxMs: 100 }),
    { log: silentLogger },
  );
});

afterEach(async () => {
  for (const c of children) c.kill('SIGKILL');
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  children.length = 0;
  pids.length = 0;
  output = '';
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

interface WorkProcess {
  child: ChildProcess;
  stdout: () => string;
  exited: Promise<number | null>;
}

function work(cmd: string[], flags: string[] = []): WorkProcess {
  const child = spawn(process.execPath, [BIN, 'work', '--queue', 'sh', '--url', server.url, ...flags, '--', ...cmd], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (c: Buffer) => {
    out += c.toString();
    output += c.toString();
  });
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  return { child, stdout: () => out, exited: new Promise((r) => child.once('exit', (code) => r(code))) };
}

async function enqueue(payload: unknown, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await fetch(`${server.url}/api/v1/queues/sh/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ payload, ...extra }) });
  expect(res.status).toBe(201);
  return ((await res.json()) as { job: { id: string } }).job.id;
}

async function getJob(id: string): Promise<any> {
  const res = await fetch(`${server.url}/api/v1/jobs/${id}`);
  return ((await res.json()) as { job: unknown }).job;
}


const finished = (id: string) => untilWork(`job ${id} to finish`, async () => {
  const job = await getJob(id);
  return job.status === 'completed' || job.status === 'failed' ? job : undefined;
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function readPid(file: string): Promise<number> {
  const pid = await untilWork(`pid in ${file}`, () => (existsSync(file) && /^\d+\n/.test(readFileSync(file, 'utf8')) ? Number(readFileSync(file, 'utf8').trim()) : undefined));
  pids.push(pid);
  return pid;
}

test('a command that exits 0 completes the job with its stdout (the payload from stdin) and stderr', async () => {
  const payload = { to: 'a@b', n: [1, 2, 3], text: 'héllo' };
  const id = await enqueue(payload);
  const w = work(['sh', '-c', 'cat; echo done >&2']);
  const job = await finished(id);
  expect(job.status).toBe('completed');
  expect(job.result).toEqual({ exitCode: 0, stdout: JSON.stringify(payload), stderr: 'done\n', json: payload });
  await untilWork('the outcome line', () => w.stdout().includes(`job ${id} completed (exit 0)`));
});

test('the job id, attempt, keys and payload are in the environment', async () => {
  const id = await enqueue({ k: 1 }, { idempotencyKey: 'key-1' });
  work(['sh', '-c', 'printf "%s|%s|%s|%s|%s" "$LEASEHOLD_JOB_ID" "$LEASEHOLD_ATTEMPT" "$LEASEHOLD_IDEMPOTENCY_KEY" "$LEASEHOLD_FENCING_TOKEN" "$LEASEHOLD_PAYLOAD"']);
  const job = await finished(id);
  expect(job.result.stdout).toBe(`${id}|1|key-1|${job.fencingToken}|{"k":1}`);
});

test('a payload over 100 KB goes on stdin only, not in the environment', async () => {
  const big = { blob: 'x'.repeat(150_000) };
  const id = await enqueue(big);
  work(['sh', '-c', 'wc -c; echo "${LEASEHOLD_PAYLOAD:-unset}"']);
  const job = await finished(id);
  expect(job.status).toBe('completed');
  const [count, env] = job.result.stdout.trim().split(/\s+/);
  expect(Number(count)).toBe(JSON.stringify(big).length);
  expect(env).toBe('unset');
});

test('a non-zero exit fails and retries; exit 65 fails for good at once', async () => {
  const retried = await enqueue({}, { maxAttempts: 2 });
  const w = work(['sh', '-c', 'read -r line; case "$line" in *dataerr*) echo bad input >&2; exit 65;; *) echo boom >&2; exit 3;; esac']);
  const job = await finished(retried);
  expect(job.status).toBe('failed');
  expect(job.attempt).toBe(2);
  expect(job.lastError).toContain('exit 3');
  expect(job.lastError).toContain('boom');
  await untilWork('the failure lines', () => w.stdout().includes(`job ${retried} failed: exit 3`));

  const dataErr = await enqueue({ kind: 'dataerr' }, { maxAttempts: 5 });
  const bad = await finished(dataErr);
  expect(bad.status).toBe('failed');
  expect(bad.attempt).toBe(1);
  expect(bad.lastError).toContain('exit 65');
  expect(bad.lastError).toContain('NonRetryableError');
});

test('a command that cannot be started fails the job for good, naming the command', async () => {
  const id = await enqueue({}, { maxAttempts: 5 });
  work(['/nonexistent/leasehold-handler']);
  const job = await finished(id);
  expect(job.status).toBe('failed');
  expect(job.attempt).toBe(1);
  expect(job.lastError).toContain('/nonexistent/leasehold-handler');
  expect(job.lastError).toContain('ENOENT');
});

test('a command past the job deadline is killed and the job fails', async () => {
  const pidFile = join(dir, 'pid');
  const id = await enqueue({}, { timeoutMs: 800, maxAttempts: 1 });
  work(['sh', '-c', `echo $$ > ${pidFile}; exec sleep 30`]);
  const pid = await readPid(pidFile);
  const job = await finished(id);
  expect(job.status).toBe('failed');
  expect(job.lastError).toContain('deadline');
  await untilWork('the sleep to be gone', () => !alive(pid), 5_000);
});

test('the whole process group is killed: a grandchild of the shell goes too', async () => {
  const pidFile = join(dir, 'pid');
  const id = await enqueue({}, { timeoutMs: 800, maxAttempts: 1 });
  // No exec: sh forks sleep and waits; SIGTERM to sh alone would orphan the sleep.
  work(['sh', '-c', `sleep 30 & echo $! > ${pidFile}; wait`]);
  const pid = await readPid(pidFile);
  expect((await finished(id)).status).toBe('failed');
  await untilWork('the grandchild sleep to be gone', () => !alive(pid), 5_000);
});

test('without --url it works on the database directly', async () => {
  const id = await enqueue({ direct: true });
  const child = spawn(process.execPath, [BIN, 'work', '--queue', 'sh', '--database-url', `file:${join(dir, 'x.db')}`, '--', 'cat'], { stdio: 'ignore', env: { ...process.env, LEASEHOLD_URL: '' } });
  children.push(child);
  const job = await finished(id);
  expect(job.result).toMatchObject({ exitCode: 0, json: { direct: true } });
});

test('--worker-token, the setting every command takes, authenticates against a server that requires a token', async () => {
  const WORKER_TOKEN = 'w'.repeat(24);
  const ADMIN_TOKEN = 'a'.repeat(24);
  const secured = await startServer(defaultConfig({ databaseUrl: `file:${join(dir, 'secured.db')}`, port: 0, workerToken: WORKER_TOKEN, adminToken: ADMIN_TOKEN }), { log: silentLogger });
  try {
    const auth = { 'content-type': 'application/json', authorization: `Bearer ${WORKER_TOKEN}` };
    const res = await fetch(`${secured.url}/api/v1/queues/sh/jobs`, { method: 'POST', headers: auth, body: JSON.stringify({ payload: 'hi' }) });
    expect(res.status).toBe(201);
    const id = ((await res.json()) as { job: { id: string } }).job.id;
    const child = spawn(process.execPath, [BIN, 'work', '--queue', 'sh', '--url', secured.url, '--worker-token', WORKER_TOKEN, '--', 'cat'], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
    const job = await untilWork(`job ${id} completed through the token`, async () => {
      const got = await fetch(`${secured.url}/api/v1/jobs/${id}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      const j = ((await got.json()) as { job: { status: string; result: unknown } }).job;
      return j.status === 'completed' ? j : undefined;
    });
    expect(job.result).toMatchObject({ exitCode: 0 });
  } finally {
    await secured.close();
  }
});

test('output beyond --output-bytes keeps only the tail', async () => {
  const id = await enqueue({});
  // 20,000 lines "line N"; keep the last 100 bytes.
  work(['sh', '-c', 'i=0; while [ $i -lt 20000 ]; do echo "line $i"; i=$((i+1)); done; echo "{\\"tail\\": 1}"'], ['--output-bytes', '100']);
  const job = await finished(id);
  expect(job.status).toBe('completed');
  expect(Buffer.byteLength(job.result.stdout)).toBe(100);
  expect(job.result.stdout.endsWith('line 19999\n{"tail": 1}\n')).toBe(true);
  expect(job.result.json).toBeUndefined(); // a truncated tail is never parsed as JSON
});

test('SIGTERM to leasehold work kills the running command and releases the job', async () => {
  const pidFile = join(dir, 'pid');
  const id = await enqueue({}, { maxAttempts: 3 });
  const w = work(['sh', '-c', `echo $$ > ${pidFile}; exec sleep 30`]);
  const pid = await readPid(pidFile);
  expect((await getJob(id)).status).toBe('running');
  w.child.kill('SIGTERM');
  expect(await Promise.race([w.exited, new Promise((r) => setTimeout(() => r('timeout'), 10_000))])).toBe(0);
  expect(alive(pid)).toBe(false);
  const job = await getJob(id);
  expect(job).toMatchObject({ status: 'pending', attempt: 0, lastError: null });
});

test('usage errors exit 2 with a clear message', () => {
  const run = (...args: string[]) => spawnSync(process.execPath, [BIN, 'work', ...args], { encoding: 'utf8', timeout: 20_000 });
  const noCommand = run('--queue', 'sh', '--url', server.url);
  expect(noCommand.status).toBe(2);
  expect(noCommand.stderr).toContain('no command');
  const emptyCommand = run('--queue', 'sh', '--url', server.url, '--');
  expect(emptyCommand.status).toBe(2);
  expect(emptyCommand.stderr).toContain('no command');
  const noQueue = run('--url', server.url, '--', 'true');
  expect(noQueue.status).toBe(2);
  expect(noQueue.stderr).toContain('--queue is required');
  // --help after -- belongs to the command, not to leasehold.
  expect(run('--queue', 'sh', '--output-bytes', 'lots', '--', 'x', '--help').status).toBe(2);
});

test('TailBuffer keeps exactly the last bytes, across wraps, and drops a cut UTF-8 character', () => {
  const t = new TailBuffer(8);
  t.push(Buffer.from('abc'));
  expect(t.toString()).toBe('abc');
  t.push(Buffer.from('defgh'));
  expect(t.toString()).toBe('abcdefgh');
  expect(t.truncated).toBe(false);
  t.push(Buffer.from('ij'));
  expect(t.toString()).toBe('cdefghij');
  t.push(Buffer.from('0123456789xyz'));
  expect(t.toString()).toBe('56789xyz');
  let all = '';
  const r = new TailBuffer(5);
  for (let i = 0; i < 50; i++) {
    const s = String(i);
    all += s;
    r.push(Buffer.from(s));
    expect(r.toString()).toBe(all.slice(-5));
  }
  const u = new TailBuffer(4);
  u.push(Buffer.from('aé€')); // a, é (2 bytes), € (3 bytes): the tail cuts é in half
  expect(u.toString()).toBe('€');
});
