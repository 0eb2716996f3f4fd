/**
 * Every transition that makes a job claimable wakes the claims waiting on
 * its queue, as an enqueue does: a released job, an operator's retry and an
 * operator's requeue are started by an idle worker (SDK defaults) within a
 * few milliseconds, not at the waiting claims' next shared look (every
 * CLAIM_REPOLL_MS, 250 ms). Over HTTP on a real port, and in process.
 *
 * The look's phase is random against the transition, so one sample would
 * often land early in its interval: each transition is measured several
 * times and the slowest counts.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { databaseClock } from '../../src/core/clock.ts';
import { defaultConfig } from '../../src/core/config.ts';
import { silentLogger } from '../../src/core/log.ts';
import { dbTransport } from '../../src/embedded/db-transport.ts';
import { startServer } from '../../src/runtime/node.ts';
import { createWorker, httpTransport, type Transport } from '../../src/worker/index.ts';
import { setup, type TestBed } from '../support/helpers.ts';
import { until } from '../support/until.ts';

const ROUNDS = 5;
const quiet = { info() {}, warn() {}, error() {} };

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

type Call = (method: string, path: string, body?: unknown) => Promise<any>;

/** A bed: a database, a way to call the API, and a transport for the worker, on one engine. */
async function bed(kind: 'http' | 'in-process'): Promise<{ t: TestBed; call: Call; transport: Transport }> {
  const t = await setup({}, { realClock: databaseClock });
  cleanups.push(() => t.close());
  if (kind === 'in-process') {
    const call: Call = async (method, path, body) => {
      const res = await t.call(method, path, body);
      if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${res.text}`);
      return res.json;
    };
    return { t, call, transport: dbTransport(t.engine) };
  }
  const server = await startServer(defaultConfig({ databaseUrl: t.url, port: 0 }), { reaper: false, log: silentLogger });
  cleanups.push(() => server.close());
  const call: Call = async (method, path, body) => {
    const res = await fetch(`${server.url}${path}`, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return JSON.parse(text);
  };
  return { t, call, transport: httpTransport({ url: server.url }) };
}

/** Jobs of `queue` running under another worker, not the one under test. */
async function heldElsewhere(call: Call, queue: string, job: Record<string, unknown> = {}) {
  for (let i = 0; i < ROUNDS; i++) await call('POST', `/api/v1/queues/${queue}/jobs`, { payload: { i }, ...job });
  const { jobs } = await call('POST', `/api/v1/queues/${queue}/claim`, { workerId: 'other', limit: ROUNDS });
  expect(jobs).toHaveLength(ROUNDS);
  return jobs as { id: string; lockToken: string }[];
}

const transitions = {
  release: {
    prepare: (call: Call, queue: string) => heldElsewhere(call, queue),
    make: (call: Call, j: { id: string; lockToken: string }) => call('POST', `/api/v1/jobs/${j.id}/release`, { workerId: 'other', lockToken: j.lockToken }),
  },
  retry: {
    async prepare(call: Call, queue: string) {
      const held = await heldElsewhere(call, queue, { maxAttempts: 1 });
      for (const j of held) await call('POST', `/api/v1/jobs/${j.id}/fail`, { workerId: 'other', lockToken: j.lockToken, error: 'boom', retryable: false });
      return held;
    },
    make: (call: Call, j: { id: string }) => call('POST', `/api/v1/jobs/${j.id}/retry`, { reason: 'fixed' }),
  },
  requeue: {
    prepare: (call: Call, queue: string) => heldElsewhere(call, queue),
    make: (call: Call, j: { id: string }) => call('POST', `/api/v1/jobs/${j.id}/requeue`, { force: true, reason: 'its worker is gone' }),
  },
};

describe('an idle worker starts a job made claimable again as soon as it is', () => {
  for (const kind of ['http', 'in-process'] as const) {
    for (const [name, transition] of Object.entries(transitions)) {
      test(`${kind}: ${name}`, async () => {
        const { call, transport } = await bed(kind);
        const queue = `q-${name}`;
        const jobs = await transition.prepare(call, queue);
        const started = new Map<string, number>();
        // SDK defaults, apart from the process signals a test must not take over.
        const worker = createWorker({ transport, queue, handleSignals: false, logger: quiet, handler: (ctx) => void started.set(ctx.job.id, Date.now()) }).start();
        cleanups.push(() => worker.close({ drainTimeoutMs: 1_000 }));
        // Idle long enough that its claim waits on the server.
        await new Promise((r) => setTimeout(r, 1_000));
        const latencies: number[] = [];
        for (const job of jobs) {
          const at = Date.now();
          await transition.make(call, job);
          await until(`job ${job.id} to start`, () => started.has(job.id));
          latencies.push(started.get(job.id)! - at);
          await new Promise((r) => setTimeout(r, 300));
        }
        // Well under the shared look's 250 ms (generous for a loaded machine): the transition woke the claim.
        expect(Math.max(...latencies)).toBeLessThan(150);
      });
    }
  }
});
