/**
 * Groups stay fair through the worker SDK on its defaults: the server claims
 * round-robin across a queue's groups, and the jobs a worker claims ahead
 * (src/worker/run-queue.ts, fair-line.ts) start in that fairness, so one
 * tenant's backlog held by a worker does not hold back another tenant's jobs
 * enqueued after it. The worker here has no option that tunes claiming; the
 * server has its defaults (lease 30 s).
 */
import { afterEach, expect, test } from 'vitest';
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

async function enqueue(t: TestBed, group: string, n: number) {
  const res = await t.post('/api/v1/queues/q/jobs', { jobs: Array.from({ length: n }, (_, i) => ({ payload: { group, i }, group })) });
  expect(res.status).toBe(201);
}

test("on the SDK's defaults, tenants B and C enqueued behind tenant A's backlog start within a few of A's jobs, not after the backlog the worker claimed ahead", async () => {
  const t = await setup({}, { realClock: databaseClock });
  beds.push(t);
  await enqueue(t, 'A', 500);
  const started: string[] = [];
  /** Claims and starts in the order the worker saw them. */
  const seen: { what: 'claimed' | 'started'; id: string; group: string }[] = [];
  let openGate!: () => void;
  const gate = new Promise<void>((r) => (openGate = r));
  const w = createWorker<{ group: string; i: number }>({
    transport: dbTransport(t.engine),
    queue: 'q',
    handleSignals: false,
    logger: quiet,
    async handler(ctx) {
      started.push(ctx.job.payload.group);
      seen.push({ what: 'started', id: ctx.job.id, group: ctx.job.payload.group });
      // The first 20 are fast, so the worker learns to claim ahead; the 21st holds the one slot.
      if (started.length === 21) await gate;
    },
  });
  w.on('claimed', ({ job }) => seen.push({ what: 'claimed', id: job.id, group: (job.payload as { group: string }).group }));
  workers.push(w.start());
  // The worker holds A's backlog: one job running, a hundred or more claimed ahead behind it.
  await until('A claimed ahead behind the running job', () => started.length === 21 && w.stats.completed === 20 && w.running >= 100);
  const heldOfA = w.running - 1;
  expect(heldOfA).toBeGreaterThanOrEqual(100);
  await enqueue(t, 'B', 5);
  await enqueue(t, 'C', 5);
  openGate();
  await until('every job done', () => w.stats.completed === 510);
  // Each of B's and C's jobs, from its claim to its start: how many of A's started meanwhile.
  const others = seen.filter((e) => e.what === 'claimed' && e.group !== 'A');
  expect(others).toHaveLength(10);
  const aOvertaking = others.map((c) => {
    const from = seen.indexOf(c);
    const to = seen.findIndex((e) => e.what === 'started' && e.id === c.id);
    return seen.slice(from, to).filter((e) => e.what === 'started' && e.group === 'A').length;
  });
  // First in, first out, every job of A's claimed ahead of them went first
  // (a hundred or more). Taking turns, one of A's per turn, and a job waits
  // at most a turn for each job of its own group ahead of it: five at most.
  expect(Math.max(...aOvertaking), aOvertaking.join(' ')).toBeLessThanOrEqual(5);
  // In all, fewer of A's started before the last of B's and C's than the worker held.
  const after = started.slice(21);
  const lastOther = Math.max(after.lastIndexOf('B'), after.lastIndexOf('C'));
  expect(after.slice(0, lastOther).filter((g) => g === 'A').length, after.slice(0, lastOther + 1).join('')).toBeLessThan(heldOfA / 2);
});
