/**
 * Schedules fire at their time whatever the reaper interval: a per-second
 * schedule under the DEFAULT settings (reaper every 5 s) makes one job per
 * second, on two servers sharing one database, and each occurrence once.
 * (Before, occurrences were enqueued only by the maintenance pass: one job
 * in five.)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '@libsql/client';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { postJson, startServerProcess, type ServerProcess } from '../support/process-helpers.ts';

let dir: string;
let dbUrl: string;
const servers: ServerProcess[] = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-sched-'));
  dbUrl = `file:${join(dir, 'shared.db')}`;
});
afterEach(() => {
  for (const s of servers) s.child.kill('SIGKILL');
  servers.length = 0;
  rmSync(dir, { recursive: true, force: true });
});

test('a per-second schedule makes one job per second under the default reaper interval, once per occurrence across two servers', async () => {
  const a = await startServerProcess(['--database-url', dbUrl]);
  servers.push(a);
  const b = await startServerProcess(['--database-url', dbUrl]);
  servers.push(b);
  const created = await postJson(`${a.url}/api/v1/schedules`, { name: 'tick', queue: 'ticks', cron: '* * * * * *' });
  expect(created.status).toBe(201);
  const startedAt = Date.now();
  await new Promise((resolve) => setTimeout(resolve, 4_000));
  const elapsedS = (Date.now() - startedAt) / 1000;
  const db = createClient({ url: dbUrl });
  try {
    const rows = (await db.execute("SELECT occurrence_at FROM jobs WHERE schedule_name = 'tick' ORDER BY occurrence_at")).rows.map((r) => Number(r.occurrence_at));
    // One per second elapsed (±1 for where the window's edges fall), not one per reaper interval.
    expect(rows.length).toBeGreaterThanOrEqual(Math.floor(elapsedS) - 1);
    expect(rows.length).toBeLessThanOrEqual(Math.ceil(elapsedS) + 1);
    // Consecutive seconds, none twice and none skipped.
    expect(rows.every((t, i) => i === 0 || t - rows[i - 1]! === 1000)).toBe(true);
    const skips = (await db.execute("SELECT count(*) AS n FROM schedule_skips WHERE schedule_name = 'tick'")).rows[0]!.n;
    expect(Number(skips)).toBe(0);
  } finally {
    db.close();
  }
}, 30_000);
