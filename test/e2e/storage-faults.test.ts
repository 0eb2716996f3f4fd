/**
 * Faults of the storage under the database, for real: a small file system
 * that fills up, a second process holding the write lock, and database files
 * that are damaged, read-only, unreadable or in a missing folder at start.
 * The tmpfs mounts need root (as CI and these machines run).
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { silentLogger } from '../../src/core/log.ts';
import { defaultConfig, type Config } from '../../src/core/config.ts';
import { startServer, type RunningServer } from '../../src/runtime/node.ts';
import { postJson } from '../support/process-helpers.ts';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'leasehold.js');

let dir: string;
let mounted: string | undefined;
let server: RunningServer | undefined;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-storage-'));
  chmodSync(dir, 0o755);
});

afterEach(async () => {
  await server?.close();
  server = undefined;
  // Lazy: SQLite may still hold a closed file until its statements are collected.
  if (mounted) spawnSync('umount', ['-l', mounted]);
  mounted = undefined;
  rmSync(dir, { recursive: true, force: true });
});

/** A tmpfs of `size` at dir/name: a disk that really fills up. */
function smallDisk(name: string, size: string): string {
  const at = join(dir, name);
  mkdirSync(at);
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', at], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`this test mounts a tmpfs and needs root: ${r.stderr}`);
  mounted = at;
  return at;
}

async function serve(databaseUrl: string, overrides: Partial<Config> = {}) {
  server = await startServer(defaultConfig({ databaseUrl, port: 0, ...overrides }), { log: silentLogger, reaper: false });
  return server.url;
}

async function jobCount(url: string): Promise<number> {
  const res = await fetch(`${url}/api/v1/jobs?limit=500`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { jobs: unknown[] }).jobs.length;
}

test('a full disk refuses writes with 503 naming the cause, keeps reads, writes nothing half, and recovers when space is back', async () => {
  const disk = smallDisk('disk', '2m');
  const url = await serve(`file:${join(disk, 'q.db')}`);
  const first = await postJson(`${url}/api/v1/queues/q/jobs`, { payload: 'first' });
  expect(first.status).toBe(201);

  // Fill what is left of the disk.
  const filler = join(disk, 'filler');
  let size = 2 * 1024 * 1024;
  while (size >= 4096) {
    try {
      writeFileSync(filler, Buffer.alloc(size), { flag: 'a' });
    } catch {
      size = Math.floor(size / 2);
    }
  }

  let accepted = 1;
  let refused: { status: number; json: any } | undefined;
  for (let i = 0; i < 200 && !refused; i++) {
    const answer = await postJson(`${url}/api/v1/queues/q/jobs`, { payload: 'x'.repeat(16 * 1024) });
    if (answer.status === 201) accepted++;
    else refused = answer;
  }
  expect(refused?.status).toBe(503);
  expect(refused?.json.error.code).toBe('unavailable');
  expect(refused?.json.error.message).toMatch(/disk is full/);

  // Reads work, and every job there is one that was acknowledged.
  expect(await jobCount(url)).toBe(accepted);
  const one = await fetch(`${url}/api/v1/jobs/${first.json.job.id}`);
  expect(one.status).toBe(200);

  rmSync(filler);
  const again = await postJson(`${url}/api/v1/queues/q/jobs`, { payload: 'after' });
  expect(again.status).toBe(201);
  expect(await jobCount(url)).toBe(accepted + 1);
});

/** A second process that holds the database's write lock for `holdMs`; resolves once it holds it (not a bare promise: that would be adopted and wait for the release). */
function holdWriteLock(path: string, holdMs: number): Promise<{ released: Promise<void> }> {
  const script = `
    const Database = require('libsql');
    const db = new Database(process.argv[1]);
    db.exec('BEGIN IMMEDIATE');
    console.log('locked');
    setTimeout(() => { db.exec('COMMIT'); db.close(); }, Number(process.argv[2]));`;
  const child = spawn(process.execPath, ['-e', script, path, String(holdMs)], { cwd: join(import.meta.dirname, '..', '..'), stdio: ['ignore', 'pipe', 'inherit'] });
  const done = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    child.stdout!.once('data', () => resolve({ released: done }));
    child.once('exit', (code) => reject(new Error(`the lock holder exited with ${code}`)));
  });
}

test('a write waits for another process holding the lock, within the busy timeout', async () => {
  const path = join(dir, 'q.db');
  const url = await serve(`file:${path}`, { busyTimeoutMs: 3_000 });
  const { released } = await holdWriteLock(path, 300);
  const answer = await postJson(`${url}/api/v1/queues/q/jobs`, { payload: 1 });
  expect(answer.status).toBe(201);
  await released;
});

test('past the busy timeout the write is a clear 503 and changes nothing; reads still work', async () => {
  const path = join(dir, 'q.db');
  const url = await serve(`file:${path}`, { busyTimeoutMs: 200 });
  const { released } = await holdWriteLock(path, 3_000);
  const answer = await postJson(`${url}/api/v1/queues/q/jobs`, { payload: 1 });
  expect(answer.status).toBe(503);
  expect(answer.json.error.message).toMatch(/locked by another writer/);
  expect(await jobCount(url)).toBe(0);
  await released;
  expect((await postJson(`${url}/api/v1/queues/q/jobs`, { payload: 1 })).status).toBe(201);
});

/**
 * Runs `leasehold serve` and expects it to refuse to start: exit 1 and one line on stderr.
 * `withoutFileOverride` runs it as this same root user but without the capabilities that let
 * root read and write whatever the file modes say (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH), so
 * a file owned by someone else is refused as it is to any user. Not a switch to another
 * user: that user could not enter a checkout in a private folder (a `mktemp -d`, /root) to
 * run the CLI at all, and would fail for that reason instead.
 */
function refusedStart(databaseUrl: string, withoutFileOverride = false): string {
  const command = withoutFileOverride ? ['setpriv', '--bounding-set', '-dac_override,-dac_read_search', process.execPath] : [process.execPath];
  const r = spawnSync(command[0]!, [...command.slice(1), BIN, 'serve', '--port', '0', '--database-url', databaseUrl], { encoding: 'utf8', timeout: 20_000, cwd: tmpdir() });
  expect(r.status).toBe(1);
  const lines = r.stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(r.stdout).not.toMatch(/listening/);
  return lines[0]!;
}

test('a database file that is not a database is one clear line and exit 1', () => {
  const path = join(dir, 'q.db');
  writeFileSync(path, 'this is not a SQLite file, just some text that is long enough to have a header'.repeat(4));
  expect(refusedStart(`file:${path}`)).toMatch(/cannot open the database .*not a SQLite database, or its header is damaged/);
});

test('a database in a missing folder is one clear line and exit 1', () => {
  expect(refusedStart(`file:${join(dir, 'nowhere', 'q.db')}`)).toMatch(/the folder .*nowhere does not exist/);
});

test('a database on a read-only mount is one clear line and exit 1, not a server that fails every write', async () => {
  const url = await serve(`file:${join(dir, 'q.db')}`);
  expect((await postJson(`${url}/api/v1/queues/q/jobs`, { payload: 1 })).status).toBe(201);
  await server!.close();
  server = undefined;
  // A copy on its own mount, which no process holds open, made read-only.
  const disk = smallDisk('ro', '1m');
  copyFileSync(join(dir, 'q.db'), join(disk, 'q.db'));
  const remount = spawnSync('mount', ['-o', 'remount,ro', disk], { encoding: 'utf8' });
  expect(remount.stderr).toBe('');
  expect(refusedStart(`file:${join(disk, 'q.db')}`)).toMatch(/read-only file system/);
});

test('a database file this user may not read or write is one clear line and exit 1', async () => {
  const url = await serve(`file:${join(dir, 'q.db')}`);
  expect(url).toMatch(/^http/);
  await server!.close();
  server = undefined;
  // Private to another user (nobody): this process, root without its file override, cannot open it.
  chownSync(join(dir, 'q.db'), 65534, 65534);
  chmodSync(join(dir, 'q.db'), 0o600);
  expect(refusedStart(`file:${join(dir, 'q.db')}`, true)).toMatch(/cannot read .*q\.db: check its owner and mode/);
  // Readable but not writable by anyone but its owner.
  chmodSync(join(dir, 'q.db'), 0o644);
  expect(refusedStart(`file:${join(dir, 'q.db')}`, true)).toMatch(/q\.db is read-only/);
});
