/**
 * Round trips to the database per job, counted on a real database: over a
 * remote libSQL server (Hrana over HTTP) every client call, `execute` or
 * `batch`, is one request and one network round trip, so the count of calls
 * the runtime's client handle receives is what a link with added latency
 * multiplies. A worker at its default settings must move a queue in a number
 * of round trips that follows the number of claim batches, not the number of
 * jobs: a claim is one batch, a completion with the claim riding on it is
 * one, a heartbeat of every lease the worker holds is one. No timing here;
 * bench/remote.ts measures the throughput over a delayed link.
 */
import { afterEach, expect, test } from 'vitest';
import type { Client } from '@libsql/client';
import { databaseClock } from '../../src/core/clock.ts';
import { dbTransport } from '../../src/embedded/db-transport.ts';
import { createWorker, type Worker } from '../../src/worker/index.ts';
import { setup, type TestBed } from '../support/helpers.ts';
import { until } from '../support/until.ts';

const quiet = { info() {}, warn() {}, error() {} };
const beds: TestBed[] = [];
const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.close({ drainTimeoutMs: 0 })));
  for (const t of beds.splice(0)) t.close();
});

/** Counts the calls that reach the client handle the store runs on (each one round trip to a remote server), forwarding every one. */
function countRoundTrips(client: Client) {
  const calls: { kind: string; statements: number; firstSql: string }[] = [];
  const c = client as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const kind of ['execute', 'batch', 'executeMultiple', 'migrate', 'transaction'] as const) {
    const real = c[kind]!.bind(client);
    c[kind] = (...args: unknown[]) => {
      const first = args[0] as { sql?: string } | { sql?: string }[] | string;
      const statements = Array.isArray(first) ? first : [first];
      const sqlOf = (s: unknown) => (typeof s === 'string' ? s : ((s as { sql?: string })?.sql ?? ''));
      calls.push({ kind, statements: statements.length, firstSql: sqlOf(statements[0]).slice(0, 80) });
      return real(...args);
    };
  }
  return { count: () => calls.length, calls, reset: () => void calls.splice(0) };
}

async function bedWith(jobs: number) {
  const t = await setup({}, { realClock: databaseClock });
  beds.push(t);
  for (let done = 0; done < jobs; done += 1_000) {
    const res = await t.post('/api/v1/queues/q/jobs', { jobs: Array.from({ length: Math.min(1_000, jobs - done) }, (_, i) => ({ payload: { i: done + i } })) });
    expect(res.status).toBe(201);
  }
  return t;
}

test('a worker at its defaults drains 2,000 no-op jobs in a round trip per claim batch, not per job', async () => {
  const t = await bedWith(2_000);
  const trips = countRoundTrips(t.client);
  const w = createWorker({ transport: dbTransport(t.engine), queue: 'q', concurrency: 8, handler: () => null, handleSignals: false, logger: quiet });
  workers.push(w);
  w.start();
  await until('all completed', () => w.stats.completed === 2_000, 30_000);
  // A completion carries every job that finished while the one before it was
  // on its way, and claims as many: how many that is depends on how long a
  // round trip takes (on an embedded file, about 30 calls of ~65 jobs; over
  // a slow link, closer to claimBatch, 200). Per job, or per slot (2,000 /
  // 8 = 250), would be the serialised cost a delayed link multiplies.
  expect(trips.count(), JSON.stringify(trips.calls.map((c) => c.firstSql))).toBeLessThanOrEqual(100);
  expect(trips.calls.every((c) => c.kind === 'batch' || c.kind === 'execute')).toBe(true);
});

test('one claim, one completion with its riding claim, one heartbeat of many leases: one round trip each', async () => {
  const t = await bedWith(20);
  const transport = dbTransport(t.engine);
  const trips = countRoundTrips(t.client);

  const { jobs: claimed } = await transport.claim({ queue: 'q', workerId: 'w1', limit: 10 });
  expect(claimed).toHaveLength(10);
  expect(trips.count()).toBe(1);

  trips.reset();
  const leases = claimed.map((j) => ({ id: j.id, lockToken: j.lockToken }));
  const beats = await transport.heartbeat({ workerId: 'w1', leases });
  expect(beats.every((a) => a.ok)).toBe(true);
  expect(trips.count()).toBe(1);

  trips.reset();
  const reply = await transport.complete({ workerId: 'w1', results: leases.map((l) => ({ ...l, result: null })), claim: { queue: 'q', limit: 10, claimId: 'c2' } });
  expect(reply.answers.every((a) => a.ok)).toBe(true);
  expect(reply.claimed).toHaveLength(10);
  expect(trips.count()).toBe(1);
});
