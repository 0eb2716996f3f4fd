/**
 * Only the current owner writes (docs/guarantees.md): every write a worker makes
 * to a job is fenced by the claim's lock token. A stale write gets 409
 * lease_lost (or a per-item lease_lost in a batch), changes nothing, and leaves
 * a stale_write_rejected event naming the stale caller. Also: the classic
 * zombie story end to end over HTTP.
 */
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';

let t: TestBed;
beforeEach(async () => {
  t = await setup();
});
afterEach(() => t.close());

const api = '/api/v1';

async function jobView(id: string) {
  const res = await t.get(`${api}/jobs/${id}`);
  expect(res.status).toBe(200);
  return res.json as { job: Record<string, any>; events: Record<string, any>[] };
}

/** Past lease + grace, and long enough that the owner no longer counts as alive. */
const PAST_LEASE_OWNER_DEAD = 30_000 + 10_000 + 15_000 + 1;

type Scenario = {
  name: string;
  /** Builds the situation; returns the job id and the stale caller's (workerId, token). */
  arrange: () => Promise<{ id: string; workerId: string; lockToken: string; status: string }>;
};

const scenarios: Scenario[] = [
  {
    name: 'a wrong token on a running job',
    async arrange() {
      const e = await t.enqueue('q');
      await t.claim('q', 'A');
      return { id: e.id, workerId: 'A', lockToken: '0'.repeat(32), status: 'running' };
    },
  },
  {
    name: 'a completed job',
    async arrange() {
      const e = await t.enqueue('q');
      const [c] = await t.claim('q', 'A');
      expect((await t.post(`${api}/jobs/${e.id}/complete`, { workerId: 'A', lockToken: c!.lockToken })).status).toBe(200);
      return { id: e.id, workerId: 'A', lockToken: c!.lockToken, status: 'completed' };
    },
  },
  {
    name: 'a job the reaper requeued',
    async arrange() {
      const e = await t.enqueue('q');
      const [c] = await t.claim('q', 'A');
      t.clock.advance(PAST_LEASE_OWNER_DEAD);
      const reap = await t.post(`${api}/reaper/run`);
      expect(reap.json.requeued).toEqual([{ id: e.id, reason: 'reaped_due_to_expired_lease' }]);
      return { id: e.id, workerId: 'A', lockToken: c!.lockToken, status: 'pending' };
    },
  },
  {
    name: "a job another worker re-claimed (attempt 1's token against attempt 2)",
    async arrange() {
      const e = await t.enqueue('q');
      const [c] = await t.claim('q', 'A');
      t.clock.advance(PAST_LEASE_OWNER_DEAD);
      await t.post(`${api}/reaper/run`);
      t.clock.advance(t.config.backoffBaseMs);
      const [b] = await t.claim('q', 'B');
      expect(b!.id).toBe(e.id);
      expect(b!.attempt).toBe(2);
      return { id: e.id, workerId: 'A', lockToken: c!.lockToken, status: 'running' };
    },
  },
];

type Write = {
  name: string;
  /** The write's name in the stale_write_rejected event. */
  reason: string;
  batch: boolean;
  send: (id: string, workerId: string, lockToken: string) => Promise<{ status: number; json: any }>;
};

const writes: Write[] = [
  { name: 'heartbeat', reason: 'heartbeat', batch: false, send: (id, w, tok) => t.post(`${api}/jobs/${id}/heartbeat`, { workerId: w, lockToken: tok, progress: { p: 1 } }) },
  { name: 'extend', reason: 'extend', batch: false, send: (id, w, tok) => t.post(`${api}/jobs/${id}/extend`, { workerId: w, lockToken: tok, leaseMs: 600_000 }) },
  { name: 'checkpoint', reason: 'checkpoint', batch: false, send: (id, w, tok) => t.post(`${api}/jobs/${id}/checkpoint`, { workerId: w, lockToken: tok, checkpoint: { step: 9 } }) },
  { name: 'complete', reason: 'complete', batch: false, send: (id, w, tok) => t.post(`${api}/jobs/${id}/complete`, { workerId: w, lockToken: tok, result: 'stale' }) },
  { name: 'fail', reason: 'fail', batch: false, send: (id, w, tok) => t.post(`${api}/jobs/${id}/fail`, { workerId: w, lockToken: tok, error: 'stale', retryable: false }) },
  { name: 'release', reason: 'release', batch: false, send: (id, w, tok) => t.post(`${api}/jobs/${id}/release`, { workerId: w, lockToken: tok }) },
  { name: 'batched heartbeats', reason: 'heartbeat', batch: true, send: (id, w, tok) => t.post(`${api}/heartbeats`, { workerId: w, leases: [{ id, lockToken: tok, progress: 2 }] }) },
  { name: 'batched completions', reason: 'complete', batch: true, send: (id, w, tok) => t.post(`${api}/completions`, { workerId: w, results: [{ id, lockToken: tok, result: 'stale' }] }) },
  { name: 'batched releases', reason: 'release', batch: true, send: (id, w, tok) => t.post(`${api}/releases`, { workerId: w, leases: [{ id, lockToken: tok }] }) },
];

describe.each(scenarios)('stale write on $name', (scenario) => {
  test.each(writes)('$name is refused and changes nothing', async (write) => {
    const { id, workerId, lockToken, status } = await scenario.arrange();
    t.clock.advance(500);
    const before = await jobView(id);

    const res = await write.send(id, workerId, lockToken);
    if (write.batch) {
      expect(res.status).toBe(200);
      expect(res.json.results).toHaveLength(1);
      expect(res.json.results[0]).toMatchObject({ id, ok: false, error: { code: 'lease_lost', status } });
    } else {
      expect(res.status).toBe(409);
      expect(res.json.error).toMatchObject({ code: 'lease_lost', status, field: 'lockToken' });
    }

    const after = await jobView(id);
    expect(after.job).toEqual(before.job);
    expect(after.events).toHaveLength(before.events.length + 1);
    expect(after.events.at(-1)).toMatchObject({ type: 'stale_write_rejected', reason: write.reason, workerId, from: status, to: status });
    const metrics = await t.get('/metrics');
    expect(metrics.text).toMatch(/^leasehold_stale_writes_rejected_total\{queue="q"\} 1$/m);
    expect(t.errors).toEqual([]);
  });
});

describe('unknown job ids', () => {
  test.each(writes)('$name on an unknown id: not_found, and no event', async (write) => {
    await t.enqueue('q');
    const res = await write.send('123456', 'A', 'a'.repeat(32));
    if (write.batch) {
      expect(res.status).toBe(200);
      expect(res.json.results[0]).toMatchObject({ id: '123456', ok: false, error: { code: 'not_found' } });
    } else {
      expect(res.status).toBe(404);
      expect(res.json.error.code).toBe('not_found');
    }
    const events = await t.client.execute(`select count(*) as n from events where type = 'stale_write_rejected'`);
    expect(Number(events.rows[0]!.n)).toBe(0);
    expect(t.errors).toEqual([]);
  });
});

test('the classic zombie story: A stalls, the reaper requeues, B finishes, A is fenced off', async () => {
  const e = await t.enqueue('emails', { payload: { to: 'x@example.com' } });
  const [a] = await t.claim('emails', 'A');
  expect(a!.id).toBe(e.id);
  // A heartbeats once, then goes silent.
  t.clock.advance(5000);
  expect((await t.post(`${api}/jobs/${e.id}/heartbeat`, { workerId: 'A', lockToken: a!.lockToken })).status).toBe(200);

  // Just before lease + grace passes, the reaper leaves it alone.
  t.clock.advance(30_000 + 10_000);
  let reap = await t.post(`${api}/reaper/run`);
  expect(reap.json).toMatchObject({ requeued: [], failed: [], deferred: [] });
  expect((await jobView(e.id)).job.status).toBe('running');

  // Long past lease + grace, A does not look alive any more: the reaper takes it back.
  t.clock.advance(15_001);
  reap = await t.post(`${api}/reaper/run`);
  expect(reap.status).toBe(200);
  expect(reap.json.requeued).toEqual([{ id: e.id, reason: 'reaped_due_to_expired_lease' }]);
  const requeued = (await jobView(e.id)).job;
  expect(requeued).toMatchObject({ status: 'pending', lostAttempts: 1, lockedBy: null });

  // Not before its backoff; then B claims it.
  expect(await t.claim('emails', 'B')).toEqual([]);
  t.clock.set(Date.parse(requeued.availableAt));
  const [b] = await t.claim('emails', 'B');
  expect(b).toMatchObject({ id: e.id, attempt: 2, fencingToken: 2 });

  // A comes back: its heartbeat and its completion are refused.
  const hb = await t.post(`${api}/jobs/${e.id}/heartbeat`, { workerId: 'A', lockToken: a!.lockToken });
  expect(hb.status).toBe(409);
  expect(hb.json.error.code).toBe('lease_lost');
  const done = await t.post(`${api}/jobs/${e.id}/complete`, { workerId: 'A', lockToken: a!.lockToken, result: 'from A' });
  expect(done.status).toBe(409);
  expect(done.json.error.code).toBe('lease_lost');

  // B completes.
  const fin = await t.post(`${api}/jobs/${e.id}/complete`, { workerId: 'B', lockToken: b!.lockToken, result: 'from B' });
  expect(fin.status).toBe(200);
  const final = await jobView(e.id);
  expect(final.job).toMatchObject({ status: 'completed', result: 'from B', attempt: 2 });
  // Completed once, by B; and a late duplicate from B itself is refused too.
  expect((await t.post(`${api}/jobs/${e.id}/complete`, { workerId: 'B', lockToken: b!.lockToken })).status).toBe(409);

  expect(final.events.map((x) => [x.type, x.reason, x.workerId])).toEqual([
    ['enqueued', null, null],
    ['claimed', null, 'A'],
    ['reaped', 'reaped_due_to_expired_lease', 'A'],
    // B's claim may run the job a second time (A was only stalled): recorded
    // by the claim's own statement, just before its claimed event.
    ['duplicate_execution', 'reaped: reaped_due_to_expired_lease', 'B'],
    ['claimed', null, 'B'],
    ['stale_write_rejected', 'heartbeat', 'A'],
    ['stale_write_rejected', 'complete', 'A'],
    ['completed', null, 'B'],
  ]);
  expect(final.events.filter((x) => x.type === 'completed')).toHaveLength(1);
  expect(t.errors).toEqual([]);
});

/** A batch naming one job twice is ambiguous (which token wins?): it is refused whole. */
describe('a batch naming one job twice', () => {
  test('batched completions naming a job twice are refused and change nothing', async () => {
    const e = await t.enqueue('q');
    const [c] = await t.claim('q', 'A');
    const res = await t.post(`${api}/completions`, {
      workerId: 'A',
      results: [
        { id: e.id, lockToken: '0'.repeat(32), result: 'stale' },
        { id: e.id, lockToken: c!.lockToken, result: 'good' },
      ],
    });
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ code: 'invalid_request', field: 'results[1].id' });
    expect((await t.get(`${api}/jobs/${e.id}`)).json.job.status).toBe('running');
  });

  test('batched heartbeats naming a job twice are refused and change nothing', async () => {
    const e = await t.enqueue('q');
    const [c] = await t.claim('q', 'A');
    const res = await t.post(`${api}/heartbeats`, {
      workerId: 'A',
      leases: [
        { id: e.id, lockToken: c!.lockToken },
        { id: e.id, lockToken: '0'.repeat(32) },
      ],
    });
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ code: 'invalid_request', field: 'leases[1].id' });
    expect((await t.events(e.id)).map((x) => x.type)).toEqual(['enqueued', 'claimed']);
  });

  test('batched releases naming a job twice are refused and change nothing', async () => {
    const e = await t.enqueue('q');
    const [c] = await t.claim('q', 'A');
    const res = await t.post(`${api}/releases`, {
      workerId: 'A',
      leases: [
        { id: e.id, lockToken: c!.lockToken },
        { id: e.id, lockToken: '0'.repeat(32) },
      ],
    });
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ code: 'invalid_request', field: 'leases[1].id' });
    expect((await t.events(e.id)).map((x) => x.type)).toEqual(['enqueued', 'claimed']);
  });
});

/** The owner's guard includes the worker id the job was claimed by, not only the token. */
describe('the right token from another worker id', () => {
  test('every owned write is refused with lease_lost, changes nothing, and is recorded', async () => {
    const e = await t.enqueue('q');
    const [c] = await t.claim('q', 'A');
    const before = (await jobView(e.id)).job;
    for (const [path, body] of [
      ['heartbeat', {}],
      ['checkpoint', { checkpoint: { step: 1 } }],
      ['complete', { result: 'x' }],
      ['fail', { error: 'boom' }],
      ['release', {}],
    ] as const) {
      const res = await t.post(`${api}/jobs/${e.id}/${path}`, { workerId: 'B', lockToken: c!.lockToken, ...body });
      expect(res.status, path).toBe(409);
      expect(res.json.error.code).toBe('lease_lost');
    }
    expect((await jobView(e.id)).job).toEqual(before);
    const stale = (await t.events(e.id)).filter((x) => x.type === 'stale_write_rejected');
    expect(stale).toHaveLength(5);
    expect(stale.every((x) => x.workerId === 'B')).toBe(true);
    expect(t.errors).toEqual([]);
  });
});
