/**
 * `--lease-ms 1000` alone: `leasehold serve` takes its heartbeat and grace
 * from it (a third each) and says so, instead of refusing to start over the
 * 5 s default heartbeat; `leasehold work --lease-ms 1000` beats at a third
 * of its lease from the start, and says so.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { startServerProcess, type ServerProcess } from '../support/process-helpers.ts';
import { until } from '../support/until.ts';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'leasehold.js');
let dir: string;
let server: ServerProcess | undefined;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-short-lease-'));
});
afterEach(async () => {
  server?.child.kill('SIGKILL');
  await server?.exited;
  server = undefined;
  rmSync(dir, { recursive: true, force: true });
});

test('serve --lease-ms 1000 starts with heartbeat and grace of 333 ms, said on start; work --lease-ms 1000 says its heartbeat', async () => {
  server = await startServerProcess(['--lease-ms', '1000', '--database-url', `file:${join(dir, 'db.sqlite')}`]);
  expect(server.output()).toContain('leasehold: LEASEHOLD_HEARTBEAT_MS not set: 333 ms, a third of the 1000 ms lease (LEASEHOLD_LEASE_MS), instead of the default 5000 ms');
  expect(server.output()).toContain('leasehold: LEASEHOLD_GRACE_MS not set: 333 ms');
  const work = spawn(process.execPath, [BIN, 'work', '--queue', 'q', '--lease-ms', '1000', '--url', server.url, '--', 'true'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let said = '';
  work.stderr.on('data', (c: Buffer) => (said += c.toString()));
  try {
    await until('work says its heartbeat', () => said.includes('heartbeat every 333 ms: heartbeatMs not given, a third of leaseMs (1000 ms)'), 15_000, () => said);
  } finally {
    work.kill('SIGKILL');
  }
}, 60_000);
