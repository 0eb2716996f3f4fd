/**
 * `leasehold backup` under load, restored into a new server, and
 * `leasehold doctor`'s report on healthy, stuck, damaged and newer databases.
 * Real server and CLI processes over a real database file.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, openSync, readdirSync, rmSync, statSync, symlinkSync, writeSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, test, vi } from 'vitest';
import Database from 'libsql';
import { databaseClock } from '../../src/core/clock.ts';
import { postJson, startServerProcess, type ServerProcess } from '../support/process-helpers.ts';
import { setup, type TestBed } from '../support/helpers.ts';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'leasehold.js');

let dir: string;
const servers: ServerProcess[] = [];
let bed: TestBed | undefined;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-backup-'));
});

afterEach(async () => {
  for (const s of servers) {
    s.child.kill('SIGKILL');
    await s.exited;
  }
  servers.length = 0;
  bed?.close();
  bed = undefined;
  rmSync(dir, { recursive: true, force: true });
});

function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

async function serve(file: string): Promise<string> {
  const server = await startServerProcess(['--database-url', `file:${file}`]);
  servers.push(server);
  return server.url;
}

test('a backup taken under load restores every job acknowledged before it started, in its state', async () => {
  const url = await serve(join(dir, 'live.db'));
  const enqueued: string[] = [];
  const completed = new Set<string>();
  let stop = false;
  // A steady load: enqueue two, claim one, complete it, again and again.
  const load = (async () => {
    for (let i = 0; !stop; i++) {
      for (const n of [0, 1]) {
        const e = await postJson(`${url}/api/v1/queues/q/jobs`, { payload: { i, n } });
        expect(e.status).toBe(201);
        enqueued.push(e.json.job.id);
      }
      const c = await postJson(`${url}/api/v1/queues/q/claim`, { workerId: 'w1', limit: 1 });
      for (const job of c.json.jobs) {
        const done = await postJson(`${url}/api/v1/jobs/${job.id}/complete`, { workerId: 'w1', lockToken: job.lockToken, result: { ok: true } });
        expect(done.status).toBe(200);
        completed.add(job.id);
      }
    }
  })();
  while (enqueued.length < 60) await new Promise((r) => setTimeout(r, 20));

  // What was acknowledged before the backup started.
  const ackedBefore = [...enqueued];
  const completedBefore = [...completed];
  const backup = await cli(['backup', join(dir, 'copy.db'), '--database-url', `file:${join(dir, 'live.db')}`]);
  const enqueuedDuringBackup = enqueued.length - ackedBefore.length;
  stop = true;
  await load;
  expect(backup.stderr).toBe('');
  expect(backup.code).toBe(0);
  expect(backup.stdout).toMatch(/backed up file:.*live\.db to .*copy\.db/);
  expect(enqueuedDuringBackup).toBeGreaterThanOrEqual(0);

  const restored = await serve(join(dir, 'copy.db'));
  for (const id of ackedBefore) {
    const res = await fetch(`${restored}/api/v1/jobs/${id}`);
    expect(res.status, `job ${id}`).toBe(200);
  }
  for (const id of completedBefore) {
    const res = (await (await fetch(`${restored}/api/v1/jobs/${id}`)).json()) as { job: { status: string; result: unknown } };
    expect(res.job.status, `job ${id}`).toBe('completed');
    expect(res.job.result).toEqual({ ok: true });
  }
});

test('backup refuses to overwrite a file, a missing database and the database itself', async () => {
  const live = join(dir, 'live.db');
  expect((await cli(['migrate', '--database-url', `file:${live}`])).code).toBe(0);
  const target = join(dir, 'copy.db');
  expect((await cli(['backup', target, '--database-url', `file:${live}`])).code).toBe(0);
  const size = statSync(target).size;

  const again = await cli(['backup', target, '--database-url', `file:${live}`]);
  expect(again.code).toBe(2);
  expect(again.stderr).toMatch(/exists: choose another name or pass --force/);
  expect((await cli(['backup', target, '--force', '--database-url', `file:${live}`])).code).toBe(0);
  expect(statSync(target).size).toBe(size);

  const missing = await cli(['backup', target, '--database-url', `file:${join(dir, 'typo.db')}`]);
  expect(missing.code).toBe(2);
  expect(missing.stderr).toMatch(/no database file at .*typo\.db/);
  const self = await cli(['backup', live, '--force', '--database-url', `file:${live}`]);
  expect(self.stderr).toMatch(/must not be the database itself/);
});

test('a backup has the database file\'s mode, and is created exclusively: nothing at a predictable name is written through', async () => {
  const live = join(dir, 'live.db');
  expect((await cli(['migrate', '--database-url', `file:${live}`])).code).toBe(0);
  chmodSync(live, 0o600);
  const target = join(dir, 'copy.db');
  // Run in this process, so the name a pid-based partial file would take is known, and planted.
  const stolen = join(dir, 'elsewhere.db');
  symlinkSync(stolen, `${target}.partial-${process.pid}`);
  const { backupCommand } = await import('../../src/cli/backup.ts');
  const { defaultConfig } = await import('../../src/core/config.ts');
  const log = vi.spyOn(console, 'log').mockImplementation(() => {});
  try {
    expect(await backupCommand(defaultConfig({ databaseUrl: `file:${live}` }), new Map(), target)).toBe(0);
  } finally {
    log.mockRestore();
  }
  expect(statSync(target).mode & 0o777).toBe(0o600);
  expect(existsSync(stolen)).toBe(false);
  // Beside the copy only the planted link is left: no partial file, no -wal or -shm of the copy.
  expect(readdirSync(dir).filter((name) => name.startsWith('copy.db')).sort()).toEqual(['copy.db', `copy.db.partial-${process.pid}`]);

  // A wider source gives a copy no wider than it (and the umask may narrow it).
  chmodSync(live, 0o640);
  const second = join(dir, 'second.db');
  expect((await cli(['backup', second, '--database-url', `file:${live}`])).code).toBe(0);
  expect(statSync(second).mode & 0o777 & ~0o640).toBe(0);
});

test('doctor reports a healthy database as ok, and in JSON', async () => {
  const live = join(dir, 'live.db');
  expect((await cli(['migrate', '--database-url', `file:${live}`])).code).toBe(0);
  const text = await cli(['doctor', '--database-url', `file:${live}`]);
  expect(text.code).toBe(0);
  for (const name of ['integrity', 'migrations', 'settings', 'leases', 'size']) expect(text.stdout).toMatch(new RegExp(`^ok\\s+${name}`, 'm'));
  const json = await cli(['doctor', '--json', '--full', '--database-url', `file:${live}`]);
  const report = JSON.parse(json.stdout);
  expect(report.integrity).toEqual({ check: 'integrity_check', problems: [] });
  expect(report.migrations.pending).toEqual([]);
  expect(report.size.pages).toBeGreaterThan(0);
});

test('doctor names the queue whose running jobs are past lease + grace', async () => {
  bed = await setup({ leaseMs: 1_000, heartbeatMs: 300, graceMs: 300 }, { realClock: databaseClock });
  await bed.enqueue('emails');
  await bed.claim('emails', 'w-gone');
  await new Promise((r) => setTimeout(r, 1_500));
  const out = await cli(['doctor', '--database-url', bed.url, '--lease-ms', '1000', '--heartbeat-ms', '300', '--grace-ms', '300']);
  expect(out.code).toBe(0);
  expect(out.stdout).toMatch(/^warn\s+leases\s+emails: 1 past lease \+ grace \(oldest expired \d+ s ago\)/m);
});

test('doctor fails on a damaged database and on one migrated by a newer leasehold', async () => {
  bed = await setup();
  for (let i = 0; i < 200; i++) await bed.enqueue('q', { payload: { filler: 'x'.repeat(500) } });
  await bed.client.execute(`INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('from-the-future', ${Date.now() + 365 * 86_400_000})`);
  await bed.client.execute('PRAGMA wal_checkpoint(TRUNCATE)');
  const path = bed.url.slice('file:'.length);
  const newer = await cli(['doctor', '--database-url', bed.url]);
  expect(newer.code).toBe(1);
  expect(newer.stdout).toMatch(/^fail\s+migrations\s+the database has 1 migration\(s\) this leasehold does not know/m);
  bed.client.close();

  // Scribble over the last pages (the jobs' rows and indexes): the file opens, the check finds it.
  const pageSize = 4096;
  const pages = statSync(path).size / pageSize;
  const fd = openSync(path, 'r+');
  for (let page = pages - 8; page < pages - 2; page++) writeSync(fd, Buffer.alloc(pageSize, 0x5a), 0, pageSize, page * pageSize);
  closeSync(fd);
  const damaged = spawnSync(process.execPath, [BIN, 'doctor', '--database-url', bed.url], { encoding: 'utf8' });
  expect(damaged.status).toBe(1);
  expect(damaged.stdout, damaged.stderr).toMatch(/^fail\s+integrity\s+\d+ problem/m);

  // Damage to the schema's pages too: still one report (unopenable or failing its check), no stack.
  const fd2 = openSync(path, 'r+');
  for (let page = 1; page < 12; page++) writeSync(fd2, Buffer.alloc(pageSize, 0x5a), 0, pageSize, page * pageSize);
  closeSync(fd2);
  const unopenable = spawnSync(process.execPath, [BIN, 'doctor', '--database-url', bed.url], { encoding: 'utf8' });
  expect(unopenable.status).toBe(1);
  expect(unopenable.stdout, unopenable.stderr).toMatch(/^fail\s+integrity\s+(cannot be opened: the database file is damaged|\d+ problem)/m);
  expect(unopenable.stderr).toBe('');
});

test('doctor and backup only read: a rollback-journal database stays in its journal mode', async () => {
  const live = join(dir, 'live.db');
  expect((await cli(['migrate', '--database-url', `file:${live}`])).code).toBe(0);
  const journalMode = () => {
    const db = new Database(live);
    try {
      return (db.prepare('PRAGMA journal_mode').get() as { journal_mode: string }).journal_mode;
    } finally {
      db.close();
    }
  };
  const raw = new Database(live);
  raw.exec('PRAGMA journal_mode = DELETE');
  raw.close();
  expect(journalMode()).toBe('delete');

  const doctor = await cli(['doctor', '--database-url', `file:${live}`]);
  expect(doctor.code, doctor.stdout + doctor.stderr).toBe(0);
  expect(journalMode()).toBe('delete');
  expect((await cli(['backup', join(dir, 'copy.db'), '--database-url', `file:${live}`])).code).toBe(0);
  expect(journalMode()).toBe('delete');
  expect(existsSync(`${live}-wal`)).toBe(false);
});

test('doctor on a libSQL server it cannot reach: one line naming it, exit 1, no stack trace', async () => {
  // Nothing listens on port 1.
  const res = await cli(['doctor', '--database-url', 'libsql://127.0.0.1:1?authToken=not-printed']);
  expect(res.code).toBe(1);
  expect(res.stderr.trim().split('\n')).toHaveLength(1);
  expect(res.stderr).toMatch(/^leasehold: cannot reach the database at libsql:\/\/127\.0\.0\.1:1\?authToken=\*\*\*: /);
  expect(res.stderr + res.stdout).not.toMatch(/\n\s+at |not-printed/);
});
