/** The `leasehold` command: every command has --help; reap, enqueue and stats work on a file database. */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { startServerProcess } from '../support/process-helpers.ts';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'leasehold.js');
let dir: string;
let db: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-cli-'));
  db = `file:${join(dir, 'cli.db')}`;
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const run = (...args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 30_000 });

test.each(['serve', 'migrate', 'reap', 'enqueue', 'stats'])('leasehold %s --help explains itself', (command) => {
  const res = run(command, '--help');
  expect(res.status).toBe(0);
  expect(res.stdout).toContain(`usage: leasehold ${command}`);
  expect(res.stdout).toContain('LEASEHOLD_LEASE_MS');
});

test('enqueue, stats and reap work against one database file', () => {
  const out = execFileSync(process.execPath, [BIN, 'enqueue', '--queue', 'mail', '--payload', '{"to":"a@b"}', '--idempotency-key', 'k1', '--database-url', db], { encoding: 'utf8' });
  expect(JSON.parse(out).job).toMatchObject({ queue: 'mail', payload: { to: 'a@b' }, status: 'pending' });
  const dup = JSON.parse(execFileSync(process.execPath, [BIN, 'enqueue', '--queue', 'mail', '--idempotency-key', 'k1', '--database-url', db], { encoding: 'utf8' }));
  expect(dup.deduplicated).toBe(true);

  const stats = run('stats', '--json', '--database-url', db);
  expect(stats.status).toBe(0);
  expect(JSON.parse(stats.stdout)[0]).toMatchObject({ name: 'mail', counts: { pending: 1 } });

  const reap = run('reap', '--json', '--database-url', db);
  expect(reap.status).toBe(0);
  expect(JSON.parse(reap.stdout)).toMatchObject({ requeued: [], failed: [], raced: 0 });
});

test('impossible settings stop the start with a message naming the setting and the rule', () => {
  const res = run('serve', '--database-url', db, '--heartbeat-ms', '20000');
  expect(res.status).toBe(2);
  expect(res.stderr).toContain('LEASEHOLD_HEARTBEAT_MS');
  expect(res.stderr).toContain('at most half the lease');
});

test('binding off loopback without tokens refuses to start', () => {
  const res = run('serve', '--database-url', db, '--host', '0.0.0.0');
  expect(res.status).toBe(2);
  expect(res.stderr).toContain('LEASEHOLD_HOST');
});

test('bad usage is a clear error, not a stack trace', () => {
  const res = run('enqueue', '--database-url', db);
  expect(res.status).toBe(2);
  expect(res.stderr).toContain('--queue is required');
  expect(run('frobnicate').status).toBe(2);
});

test('credentials in a database URL are never printed: migrate, serve\'s start line and its failure line', async () => {
  const secret = 'sekrit-auth-token';
  const migrate = run('migrate', '--database-url', `${db}?authToken=${secret}`);
  expect(migrate.status).toBe(0);
  expect(migrate.stdout).toContain('authToken=***');
  expect(migrate.stdout + migrate.stderr).not.toContain(secret);

  // Nothing listens on port 1: the start fails with one line naming the (masked) URL.
  const unreachable = run('serve', '--port', '0', '--database-url', `libsql://ada:pass-${secret}@127.0.0.1:1?authToken=${secret}`);
  expect(unreachable.status).toBe(1);
  expect(unreachable.stderr).toContain('cannot reach the database at libsql://***@127.0.0.1:1?authToken=***');
  expect(unreachable.stdout + unreachable.stderr).not.toContain(secret);

  const server = await startServerProcess(['--database-url', `${db}?authToken=${secret}`]);
  try {
    expect(server.output()).toContain('authToken=***');
    expect(server.output()).not.toContain(secret);
  } finally {
    server.child.kill('SIGKILL');
    await server.exited;
  }
});
