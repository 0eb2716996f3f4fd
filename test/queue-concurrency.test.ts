/**
 * Queue-wide concurrency (queues.max_running): the claim statement never lets
 * more than maxRunning of a queue's jobs run at once, whoever claims: one
 * app, or claimers racing through two server processes on one database file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '@libsql/client';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { postJson, startServerProcess, type ServerProcess } from './process-helpers.ts';
import { setup, type TestBed } from './helpers.ts';

const api = '/api/v1';

describe('one app', () => {
  let t: TestBed;
  beforeEach(async () => {
    t = await setup();
  });
  afterEach(() => t.close());

  const patch = (queue: string, body: unknown) => t.call('PATCH', `${api}/queues/${queue}/settings`, body);
  const complete = (j: { id: string; lockToken: string }) => t.post(`${api}/jobs/${j.id}/complete`, { workerId: 'w', lockToken: j.lockToken });

  test('claims stop at maxRunning, free slots come back as jobs finish, null lifts the limit', async () => {
    await t.post(`${api}/queues/q/jobs`, { jobs: Array.from({ length: 6 }, (_, i) => ({ payload: i })) });
    expect((await patch('q', { maxRunning: 2 })).json.queue.settings.maxRunning).toBe(2);
    const first = await t.claim('q', 'w', { limit: 10 });
    expect(first).toHaveLength(2);
    expect(await t.claim('q', 'w2', { limit: 10 })).toHaveLength(0);
    await complete(first[0]!);
    expect(await t.claim('q', 'w2', { limit: 10 })).toHaveLength(1);
    // A completion that claims in the same statement obeys the same limit.
    const done = await t.post(`${api}/completions`, { workerId: 'w', results: [{ id: first[1]!.id, lockToken: first[1]!.lockToken }], claim: { queue: 'q', limit: 5 } });
    expect(done.json.jobs).toHaveLength(1);
    // Another queue is not limited by this one's setting.
    await t.post(`${api}/queues/other/jobs`, { jobs: [{ payload: 1 }, { payload: 2 }, { payload: 3 }] });
    expect(await t.claim('other', 'w', { limit: 10 })).toHaveLength(3);
    // Lowering the limit below what runs takes nothing back; it only stops claims.
    await patch('q', { maxRunning: 1 });
    expect(await t.claim('q', 'w', { limit: 10 })).toHaveLength(0);
    const running = await t.client.execute(`SELECT count(*) AS n FROM jobs WHERE queue_name = 'q' AND status = 'running'`);
    expect(Number(running.rows[0]!.n)).toBe(2);
    expect((await patch('q', { maxRunning: null })).json.queue.settings.maxRunning).toBe(null);
    expect(await t.claim('q', 'w', { limit: 10 })).toHaveLength(2);
    expect(t.errors).toEqual([]);
  });

  test('a bad maxRunning is a 400 naming it, and changes nothing', async () => {
    await patch('q', { maxRunning: 4 });
    for (const bad of [0, -1, 1.5, 'ten', true, 10_000_001]) {
      const res = await patch('q', { maxRunning: bad });
      expect(res.status).toBe(400);
      expect(res.json.error.field ?? res.json.error.message).toMatch(/maxRunning/);
    }
    expect((await t.get(`${api}/queues/q`)).json.queue.settings.maxRunning).toBe(4);
  });
});

describe('two server processes on one database', () => {
  let dir: string;
  const servers: ServerProcess[] = [];
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'leasehold-maxrunning-'));
  });
  afterEach(() => {
    for (const s of servers.splice(0)) s.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * Claimers hammer both servers until `claims` jobs were claimed, each
   * completing what it got after a short random pause. A trigger in the database records the queue's running count
   * inside every claiming statement: the exact number, not a sample.
   */
  async function hammer(a: ServerProcess, b: ServerProcess, queue: string, claimers: number, claims: number) {
    let claimed = 0;
    const loops = Array.from({ length: claimers }, async (_, i) => {
      const url = (i % 2 ? a : b).url;
      while (claimed < claims) {
        const { status, json } = await postJson(`${url}${api}/queues/${queue}/claim`, { workerId: `w${i}`, limit: 1 + (i % 3) });
        expect(status).toBe(200);
        claimed += json.jobs.length;
        for (const j of json.jobs as { id: string; lockToken: string }[]) {
          await new Promise((r) => setTimeout(r, Math.random() * 10));
          expect((await postJson(`${url}${api}/jobs/${j.id}/complete`, { workerId: `w${i}`, lockToken: j.lockToken })).status).toBe(200);
        }
        if (json.jobs.length === 0) await new Promise((r) => setTimeout(r, 5 + Math.random() * 20));
      }
    });
    await Promise.all(loops);
  }

  test('parallel claimers through two servers never run more than maxRunning of the queue; without it they do', async () => {
    const url = `file:${join(dir, 'shared.db')}`;
    servers.push(await startServerProcess(['--database-url', url]));
    servers.push(await startServerProcess(['--database-url', url]));
    const [a, b] = servers as [ServerProcess, ServerProcess];
    const db = createClient({ url });
    try {
      await db.execute(`CREATE TABLE running_probe (queue_name TEXT NOT NULL, running INTEGER NOT NULL)`);
      await db.execute(`CREATE TRIGGER running_probe AFTER UPDATE OF status ON jobs WHEN NEW.status = 'running' AND OLD.status <> 'running'
        BEGIN INSERT INTO running_probe SELECT NEW.queue_name, count(*) FROM jobs WHERE queue_name = NEW.queue_name AND status = 'running'; END`);
      for (const queue of ['limited', 'free']) {
        for (let i = 0; i < 4; i++) {
          const res = await postJson(`${a.url}${api}/queues/${queue}/jobs`, { jobs: Array.from({ length: 500 }, (_, j) => ({ payload: j })) });
          expect(res.status).toBe(201);
        }
      }
      const set = await fetch(`${b.url}${api}/queues/limited/settings`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ maxRunning: 3 }) });
      expect(set.status).toBe(200);

      await hammer(a, b, 'limited', 12, 60);
      await hammer(a, b, 'free', 12, 60);

      const probe = await db.execute(`SELECT queue_name, max(running) AS peak, count(*) AS claims FROM running_probe GROUP BY queue_name ORDER BY queue_name`);
      const peak = Object.fromEntries(probe.rows.map((r) => [r.queue_name, { peak: Number(r.peak), claims: Number(r.claims) }]));
      // Enough claims went through for the limit to be tested...
      expect(peak.limited!.claims).toBeGreaterThanOrEqual(60);
      // ...it was reached, and never passed.
      expect(peak.limited!.peak).toBe(3);
      // The same hammering without a limit runs more at once: the probe can see a breach.
      expect(peak.free!.peak).toBeGreaterThan(3);
    } finally {
      db.close();
    }
  }, 60_000);
});
