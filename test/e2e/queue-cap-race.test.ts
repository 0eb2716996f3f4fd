/**
 * LEASEHOLD_MAX_QUEUES is exact with several servers on one database: the
 * count of queues in use and the insert are one statement, so two servers
 * racing for the last places never both win.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '@libsql/client';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { postJson, startServerProcess, type ServerProcess } from '../support/process-helpers.ts';

const api = '/api/v1';
let dir: string;
const servers: ServerProcess[] = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-queue-cap-'));
});
afterEach(() => {
  for (const s of servers.splice(0)) s.child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

test('two servers racing to create queues past the cap: exactly the cap is made, every other enqueue a 409', async () => {
  const url = `file:${join(dir, 'shared.db')}`;
  const cap = 6;
  for (let i = 0; i < 2; i++) servers.push(await startServerProcess(['--database-url', url], { LEASEHOLD_MAX_QUEUES: String(cap) }));
  const [a, b] = servers as [ServerProcess, ServerProcess];
  // One place in use already; then 40 enqueues to 40 new queues at once, half through each server.
  expect((await postJson(`${a.url}${api}/queues/first/jobs`, { payload: 0 })).status).toBe(201);
  const answers = await Promise.all(
    Array.from({ length: 40 }, (_, i) => postJson(`${(i % 2 ? a : b).url}${api}/queues/race-${i}/jobs`, { payload: i })),
  );
  const statuses = answers.map((x) => x.status);
  expect(statuses.filter((s) => s === 201)).toHaveLength(cap - 1);
  expect(statuses.filter((s) => s === 409)).toHaveLength(40 - (cap - 1));
  const db = createClient({ url });
  try {
    const inJobs = await db.execute('SELECT count(DISTINCT queue_name) AS n FROM jobs');
    expect(Number(inJobs.rows[0]!.n)).toBe(cap);
  } finally {
    db.close();
  }
}, 60_000);
