/**
 * The first start of a deployment with several processes (a compose file, two
 * systemd units, a server and a `leasehold migrate` job): all started at the
 * same moment on a new database file, as real processes. Every server comes
 * up and answers /healthz, `leasehold migrate` exits 0, and the database
 * records each migration once.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { MIGRATIONS_DIR } from '../../src/runtime/node.ts';
import { openLibsql } from '../../src/runtime/libsql.ts';
import { startServerProcess, type ServerProcess } from '../support/process-helpers.ts';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'leasehold.js');
const ROUNDS = 5;

const servers: ServerProcess[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.child.kill('SIGTERM');
    await s.exited;
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function migrate(url: string): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [BIN, 'migrate', '--database-url', url], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, output })));
}

test(`two servers and leasehold migrate started at once on a new database all succeed (${ROUNDS} rounds)`, { timeout: 180_000 }, async () => {
  const known = (JSON.parse(readFileSync(join(MIGRATIONS_DIR, 'meta', '_journal.json'), 'utf8')) as { entries: unknown[] }).entries.length;
  const failures: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-first-start-'));
    dirs.push(dir);
    const url = `file:${join(dir, 'new.db')}`;
    const [a, b, m] = await Promise.allSettled([startServerProcess(['--database-url', url]), startServerProcess(['--database-url', url]), migrate(url)]);
    for (const s of [a, b]) {
      if (s.status === 'fulfilled') servers.push(s.value);
      else failures.push(`round ${round + 1}: a server did not start: ${String(s.reason).split('\n').slice(0, 3).join(' | ')}`);
    }
    if (m.status === 'rejected' || m.value.code !== 0) failures.push(`round ${round + 1}: leasehold migrate failed: ${m.status === 'fulfilled' ? m.value.output.trim() : String(m.reason)}`);
    for (const s of servers) expect((await fetch(`${s.url}/healthz`)).status).toBe(200);
    const o = await openLibsql(url);
    try {
      const rows = (await o.client.execute('SELECT count(*) AS n, count(DISTINCT created_at) AS d FROM __drizzle_migrations')).rows[0]!;
      expect([Number(rows.n), Number(rows.d)]).toEqual([known, known]);
    } finally {
      o.close();
    }
    for (const s of servers.splice(0)) {
      s.child.kill('SIGTERM');
      await s.exited;
    }
  }
  expect(failures).toEqual([]);
});
