/**
 * The counters the overview reads instead of the jobs table (drizzle/0004):
 * finished_counts (finished jobs per queue and status) and queue_minutes
 * (completed / failed / reaped per minute). Kept by triggers, so they can only
 * be trusted if every transition keeps them: a fast-check property runs random
 * sequences of every operation through the real API and, after each sequence,
 * compares them with the jobs table and the events.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, test } from 'vitest';
import { migrateLibsql, openLibsql } from '../../src/runtime/libsql.ts';
import { MIGRATIONS_DIR } from '../../src/runtime/node.ts';
import { setup, type TestBed } from '../support/helpers.ts';

const SEED = process.env.FC_SEED ? Number(process.env.FC_SEED) : 0xc0de;
const api = '/api/v1';
const QUEUES = ['a', 'b'] as const;

type Op =
  | { kind: 'enqueue'; queue: string; n: number }
  | { kind: 'claim'; queue: string; n: number }
  | { kind: 'complete' | 'fail' | 'failFinal' | 'release'; pick: number }
  | { kind: 'cancel' | 'retry' | 'forceRequeue'; pick: number }
  | { kind: 'advance'; ms: number }
  | { kind: 'reap' };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('enqueue' as const), queue: fc.constantFrom(...QUEUES), n: fc.integer({ min: 1, max: 4 }) }),
  fc.record({ kind: fc.constant('claim' as const), queue: fc.constantFrom(...QUEUES), n: fc.integer({ min: 1, max: 3 }) }),
  fc.record({ kind: fc.constantFrom('complete' as const, 'fail' as const, 'failFinal' as const, 'release' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constantFrom('cancel' as const, 'retry' as const, 'forceRequeue' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1_000, max: 120_000 }) }),
  fc.record({ kind: fc.constant('reap' as const) }),
);

let t: TestBed | undefined;
afterEach(() => {
  t?.close();
  t = undefined;
});

async function apply(tb: TestBed, held: Map<string, { lockToken: string; worker: string }>, o: Op) {
  const ids = async (status: string) =>
    (await tb.client.execute({ sql: 'SELECT id FROM jobs WHERE status = ? ORDER BY id', args: [status] })).rows.map((r) => String(r.id));
  const pickOf = <T,>(list: T[], pick: number) => (list.length ? list[pick % list.length] : undefined);
  switch (o.kind) {
    case 'enqueue':
      await tb.post(`${api}/queues/${o.queue}/jobs`, { jobs: Array.from({ length: o.n }, (_, i) => ({ payload: { i } })) });
      return;
    case 'claim': {
      const worker = `w-${o.queue}`;
      for (const c of (await tb.post(`${api}/queues/${o.queue}/claim`, { workerId: worker, limit: o.n })).json.jobs ?? []) {
        held.set(String(c.id), { lockToken: c.lockToken, worker });
      }
      return;
    }
    case 'complete':
    case 'fail':
    case 'failFinal':
    case 'release': {
      const id = pickOf([...held.keys()], o.pick);
      if (!id) return;
      const { lockToken, worker } = held.get(id)!;
      held.delete(id);
      const body = { workerId: worker, lockToken };
      if (o.kind === 'complete') await tb.post(`${api}/jobs/${id}/complete`, body);
      else if (o.kind === 'release') await tb.post(`${api}/jobs/${id}/release`, body);
      else await tb.post(`${api}/jobs/${id}/fail`, { ...body, error: 'boom', retryable: o.kind === 'fail' });
      return; // a lease the reaper took already answers 409: also a path worth taking
    }
    case 'cancel': {
      const id = pickOf(await ids('pending'), o.pick);
      if (id) await tb.post(`${api}/jobs/${id}/cancel`, {});
      return;
    }
    case 'retry': {
      const id = pickOf([...(await ids('failed')), ...(await ids('cancelled'))], o.pick);
      if (id) await tb.post(`${api}/jobs/${id}/retry`, { reason: 'property test' });
      return;
    }
    case 'forceRequeue': {
      const id = pickOf(await ids('running'), o.pick);
      if (id) await tb.post(`${api}/jobs/${id}/requeue`, { force: true, reason: 'property test' });
      return;
    }
    case 'advance':
      tb.clock.advance(o.ms);
      return;
    case 'reap':
      await tb.post(`${api}/reaper/run`, {});
      return;
  }
}

async function check(tb: TestBed) {
  const rows = async (q: string) => (await tb.client.execute(q)).rows.map((r) => Object.values(r).join(':'));
  // Finished counts against the table.
  expect(await rows(`SELECT queue_name, status, jobs FROM finished_counts WHERE jobs <> 0 ORDER BY 1, 2`)).toEqual(
    await rows(`SELECT queue_name, status, count(*) FROM jobs WHERE status IN ('completed', 'failed', 'cancelled') GROUP BY 1, 2 ORDER BY 1, 2`),
  );
  // The API's counts for every status against the table.
  const api_ = (await tb.get(`${api}/queues`)).json.queues as { name: string; counts: Record<string, number> }[];
  expect(api_.flatMap((q) => Object.entries(q.counts).filter(([, n]) => n > 0).map(([s, n]) => `${q.name}:${s}:${n}`)).sort()).toEqual(
    (await rows(`SELECT queue_name, status, count(*) FROM jobs GROUP BY 1, 2`)).sort(),
  );
  // Per-minute activity against the events and, for completions (which have
  // no event row since drizzle/0015, and end a job for good), the completed
  // jobs (nothing is pruned within a property run).
  expect(await rows(`SELECT queue_name, minute_at, completed, failed, reaped FROM queue_minutes WHERE completed + failed + reaped > 0 ORDER BY 1, 2`)).toEqual(
    await rows(`SELECT queue_name, m, sum(c), sum(f), sum(r) FROM (
        SELECT queue_name, completed_at - completed_at % 60000 AS m, 1 AS c, 0 AS f, 0 AS r FROM jobs WHERE status = 'completed'
        UNION ALL
        SELECT queue_name, at - at % 60000, 0, to_status = 'failed' AND from_status <> 'failed', type = 'reaped'
        FROM events WHERE type <> 'stale_write_rejected' AND type <> 'reap_deferred'
      ) GROUP BY 1, 2 HAVING sum(c) + sum(f) + sum(r) > 0 ORDER BY 1, 2`),
  );
}

/**
 * The durable counters (drizzle/0006) against the events, counted from first
 * principles (nothing is pruned within a property run): each event type by
 * queue, finishes by the status they reached, and duplicate executions as
 * claims after a take-back with no claim in between. Enqueues and
 * completions have no event row (drizzle/0015): every job is one enqueue,
 * every completed job one completion (a completion is final).
 */
async function checkDurable(tb: TestBed) {
  const rows = async (q: string) => (await tb.client.execute(q)).rows.map((r) => Object.values(r).join(':'));
  expect(await rows(`SELECT type, count(*) FROM events WHERE type IN ('enqueued', 'completed') GROUP BY 1`)).toEqual([]);
  const expected = await rows(`SELECT queue_name, name, label, sum(n) FROM (
      SELECT queue_name, 'enqueued' AS name, '' AS label, 1 AS n FROM jobs
      UNION ALL
      SELECT queue_name, 'completed', '', 1 FROM jobs WHERE status = 'completed'
      UNION ALL
      SELECT queue_name, CASE type WHEN 'claimed' THEN 'claimed'
          WHEN 'retry_scheduled' THEN 'retried' WHEN 'retried_by_operator' THEN 'retried' WHEN 'reaped' THEN 'reaped'
          WHEN 'reap_deferred' THEN 'reap_deferred' WHEN 'stale_write_rejected' THEN 'stale_write_rejected'
          WHEN 'requeued_by_operator' THEN 'requeued' WHEN 'force_requeued_by_operator' THEN 'requeued' END AS name,
        CASE type WHEN 'reaped' THEN reason WHEN 'force_requeued_by_operator' THEN 'forced' WHEN 'requeued_by_operator' THEN 'expired' ELSE '' END AS label,
        1 AS n FROM events
      UNION ALL
      SELECT queue_name, to_status, '', 1 FROM events WHERE to_status IN ('failed', 'cancelled') AND from_status IS NOT to_status
      UNION ALL
      SELECT c.queue_name, 'duplicate_execution', '', 1 FROM events c WHERE c.type = 'claimed' AND EXISTS (
        SELECT 1 FROM events x WHERE x.job_id = c.job_id AND x.id < c.id AND x.type IN ('reaped', 'requeued_by_operator', 'force_requeued_by_operator')
          AND NOT EXISTS (SELECT 1 FROM events c2 WHERE c2.job_id = c.job_id AND c2.type = 'claimed' AND c2.id > x.id AND c2.id < c.id))
    ) WHERE name IS NOT NULL GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`);
  expect(await rows(`SELECT queue_name, name, label, value FROM counters ORDER BY 1, 2, 3`)).toEqual(expected);
  // The flag is set exactly on jobs taken back and not claimed since.
  expect(await rows(`SELECT id FROM jobs WHERE taken_back IS NOT NULL ORDER BY id`)).toEqual(
    await rows(`SELECT j.id FROM jobs j WHERE j.status <> 'running' AND EXISTS (
        SELECT 1 FROM events x WHERE x.job_id = j.id AND x.type IN ('reaped', 'requeued_by_operator', 'force_requeued_by_operator')
          AND NOT EXISTS (SELECT 1 FROM events c WHERE c.job_id = j.id AND c.type = 'claimed' AND c.id > x.id)) ORDER BY j.id`),
  );
}

describe('counters kept by triggers', () => {
  test('the durable counters match the events after any sequence of operations', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: 40, size: 'max' }), async (ops) => {
        t?.close();
        t = await setup({});
        const held = new Map<string, { lockToken: string; worker: string }>();
        for (const queue of QUEUES) await apply(t, held, { kind: 'enqueue', queue, n: 3 });
        for (const o of ops) await apply(t, held, o);
        await checkDurable(t);
      }),
      { seed: SEED, numRuns: 50 },
    );
  }, 120_000);

  test('finished_counts and queue_minutes match the jobs and events after any sequence of operations', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: 40, size: 'max' }), async (ops) => {
        t?.close();
        t = await setup({});
        const held = new Map<string, { lockToken: string; worker: string }>();
        // A few jobs in each queue first, so the random operations have something to act on.
        for (const queue of QUEUES) await apply(t, held, { kind: 'enqueue', queue, n: 3 });
        for (const o of ops) await apply(t, held, o);
        await check(t);
      }),
      { seed: SEED, numRuns: 50 },
    );
  }, 120_000);
});

describe('the migration that adds the counters', () => {
  test('backfills them from a database that already holds jobs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-migrate-'));
    try {
      // The migrations before 0004, as a database created before it would have had them.
      const before = join(dir, 'before');
      mkdirSync(join(before, 'meta'), { recursive: true });
      const journal = JSON.parse(readFileSync(join(MIGRATIONS_DIR, 'meta', '_journal.json'), 'utf8'));
      journal.entries = journal.entries.filter((e: { idx: number }) => e.idx < 4);
      writeFileSync(join(before, 'meta', '_journal.json'), JSON.stringify(journal));
      for (const e of journal.entries as { tag: string }[]) copyFileSync(join(MIGRATIONS_DIR, `${e.tag}.sql`), join(before, `${e.tag}.sql`));
      expect(readdirSync(before).filter((f) => f.endsWith('.sql'))).toHaveLength(4);

      const o = await openLibsql(`file:${join(dir, 'old.db')}`);
      try {
        await migrateLibsql(o, before);
        const now = Date.now();
        await o.client.execute({ sql: `INSERT INTO queues (name, created_at, updated_at) VALUES ('q', ?1, ?1)`, args: [now] });
        // 30 finished jobs over the last 5 hours (a third failed), 1 pending, and one reap event 2 minutes ago.
        await o.client.execute({
          sql: `INSERT INTO jobs (queue_name, payload, status, max_attempts, attempt_count, available_at, started_at, completed_at, failed_at, finished_at, last_event, created_at, updated_at)
            WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 30)
            SELECT 'q', '{}', CASE WHEN i % 3 = 0 THEN 'failed' ELSE 'completed' END, 5, 1, ?1 - i * 600000, ?1 - i * 600000,
              CASE WHEN i % 3 = 0 THEN NULL ELSE ?1 - i * 600000 END, CASE WHEN i % 3 = 0 THEN ?1 - i * 600000 END,
              ?1 - i * 600000, 'completed', ?1 - i * 600000, ?1 - i * 600000 FROM s`,
          args: [now],
        });
        await o.client.execute({ sql: `INSERT INTO jobs (queue_name, payload, max_attempts, available_at, created_at, updated_at) VALUES ('q', '{}', 5, ?1, ?1, ?1)`, args: [now] });
        await o.client.execute({ sql: `INSERT INTO events (job_id, queue_name, type, reason, at) VALUES (1, 'q', 'reaped', 'lease_expired', ?1)`, args: [now - 120_000] });

        await migrateLibsql(o, MIGRATIONS_DIR);
        const rows = async (q: string) => (await o.client.execute(q)).rows.map((r) => Object.values(r).join(':'));
        expect(await rows('SELECT status, jobs FROM finished_counts ORDER BY status')).toEqual(['completed:20', 'failed:10']);
        expect(await rows('SELECT sum(completed), sum(failed), sum(reaped) FROM queue_minutes')).toEqual(['20:10:1']);
        // From here on the triggers keep them.
        await o.client.execute(`UPDATE jobs SET status = 'pending', failed_at = NULL, finished_at = NULL, last_event = 'retried_by_operator' WHERE status = 'failed' AND id = 3`);
        expect(await rows('SELECT status, jobs FROM finished_counts ORDER BY status')).toEqual(['completed:20', 'failed:9']);
      } finally {
        o.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
