/**
 * Nothing acknowledged is lost: a server killed with SIGKILL right after it
 * acknowledged enqueues still has every one of them after a restart.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { postJson, startServerProcess, type ServerProcess } from '../support/process-helpers.ts';

let dir: string;
const servers: ServerProcess[] = [];
afterEach(() => {
  for (const s of servers) s.child.kill('SIGKILL');
  servers.length = 0;
  rmSync(dir, { recursive: true, force: true });
});

test('a server killed with SIGKILL after acknowledging enqueues loses none of them', async () => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-crash-'));
  const args = ['--database-url', `file:${join(dir, 'crash.db')}`];
  const first = await startServerProcess(args);
  servers.push(first);

  const acked = new Set<string>();
  // Single enqueues in parallel plus bulk ones, all acknowledged before the kill.
  const singles = Array.from({ length: 100 }, (_, i) =>
    postJson(`${first.url}/api/v1/queues/crash/jobs`, { payload: { i }, idempotencyKey: `single-${i}` }),
  );
  const bulks = Array.from({ length: 5 }, (_, b) =>
    postJson(`${first.url}/api/v1/queues/crash/jobs`, { jobs: Array.from({ length: 200 }, (_, i) => ({ payload: { b, i } })) }),
  );
  for (const res of await Promise.all(singles)) {
    expect(res.status).toBe(201);
    acked.add(res.json.job.id);
  }
  for (const res of await Promise.all(bulks)) {
    expect(res.status).toBe(201);
    for (const job of res.json.jobs) acked.add(job.id);
  }
  expect(acked.size).toBe(1100);

  first.child.kill('SIGKILL');
  await first.exited;

  const second = await startServerProcess(args);
  servers.push(second);
  const found = new Set<string>();
  let after: string | null = null;
  do {
    const query: string = `queue=crash&order=asc&limit=500${after ? `&after=${after}` : ''}`;
    const res = await fetch(`${second.url}/api/v1/jobs?${query}`);
    const page = (await res.json()) as { jobs: { id: string; status: string }[]; next: string | null };
    for (const job of page.jobs) {
      expect(job.status).toBe('pending');
      found.add(job.id);
    }
    after = page.next;
  } while (after);
  expect([...acked].filter((id) => !found.has(id))).toEqual([]);
  expect(found.size).toBe(acked.size);
});
