/**
 * Flows over HTTP (POST /flows, GET /jobs/:id/dependencies): a parent and
 * three children, one child fails for good and fails the parent naming it,
 * an operator retries the child, and the parent then runs once and reads
 * the children's results; bad input is a 4xx naming the field, storing nothing.
 */
import { afterEach, describe, expect, test, vi } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';

const api = '/api/v1';
let t: TestBed;
afterEach(() => {
  vi.useRealTimers();
  expect(t.errors).toEqual([]);
  t.close();
});

/**
 * Parks a claim on `queue` with timers stopped: neither the waiters' shared
 * look (every CLAIM_REPOLL_MS) nor the claim's own wait can end it, so only
 * a wake-up from a transition answers it. `answered()`: its answer, if it
 * came within `withinMs` of real time (spent on event-loop turns).
 */
async function parkedWithTimersStopped(queue: string) {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  let answer: { status: number; json: any } | undefined;
  const claim = t.post(`${api}/queues/${queue}/claim`, { workerId: `w-${queue}`, limit: 5, waitMs: 30_000 }).then((r) => (answer = r));
  const before = t.engine.claimWaiters.waiting;
  while (t.engine.claimWaiters.waiting === before) await new Promise((r) => setImmediate(r));
  return {
    async answered(withinMs = 3_000) {
      const until = performance.now() + withinMs;
      while (answer === undefined && performance.now() < until) await new Promise((r) => setImmediate(r));
      return answer;
    },
    /** Ends the wait (shutdown) and answers what the claim got. */
    async close() {
      t.engine.claimWaiters.close();
      return claim;
    },
  };
}

const flow = (policy?: string) => ({
  jobs: [
    { queue: 'parts', payload: { part: 0 } },
    { queue: 'parts', payload: { part: 1 } },
    { queue: 'parts', payload: { part: 2 } },
    { queue: 'assemble', payload: { all: true }, dependsOn: ['#0', '#1', '#2'], ...(policy ? { dependencyPolicy: policy } : {}) },
  ],
});

describe('flows over HTTP', () => {
  test('a failed child fails the parent; retried, the flow goes on and the parent runs once with the results', async () => {
    t = await setup();
    const res = await t.post(`${api}/flows`, flow());
    expect(res.status).toBe(201);
    const ids = res.json.jobs.map((j: { id: string }) => j.id) as string[];
    const parent = ids[3]!;
    expect(await t.claim('assemble', 'w')).toEqual([]);
    const kids = await t.claim('parts', 'w', { limit: 3 });
    expect(kids).toHaveLength(3);
    const [k0, k1, k2] = kids.sort((a, b) => Number(a.id) - Number(b.id));
    expect((await t.post(`${api}/jobs/${k0!.id}/complete`, { workerId: 'w', lockToken: k0!.lockToken, result: { n: 0 } })).status).toBe(200);
    expect((await t.post(`${api}/jobs/${k1!.id}/complete`, { workerId: 'w', lockToken: k1!.lockToken, result: { n: 1 } })).status).toBe(200);
    expect((await t.post(`${api}/jobs/${k2!.id}/fail`, { workerId: 'w', lockToken: k2!.lockToken, error: 'out of stock', retryable: false })).status).toBe(200);
    const failed = (await t.get(`${api}/jobs/${parent}`)).json.job;
    expect(failed).toMatchObject({ status: 'failed' });
    expect(failed.lastError).toContain(`dependency ${k2!.id}`);
    expect((await t.events(parent)).at(-1)).toMatchObject({ type: 'failed', reason: 'dependency_failed' });

    expect((await t.post(`${api}/jobs/${k2!.id}/retry`, { reason: 'restocked' })).status).toBe(200);
    expect((await t.get(`${api}/jobs/${parent}`)).json.job.status).toBe('pending');
    expect(await t.claim('assemble', 'w')).toEqual([]);
    const [again] = await t.claim('parts', 'w');
    expect((await t.post(`${api}/jobs/${again!.id}/complete`, { workerId: 'w', lockToken: again!.lockToken, result: { n: 2 } })).status).toBe(200);
    const runs = await t.claim('assemble', 'w', { limit: 5 });
    expect(runs.map((j) => j.id)).toEqual([parent]);
    expect(await t.claim('assemble', 'w')).toEqual([]);
    const graph = await t.get(`${api}/jobs/${parent}/dependencies`);
    expect(graph.status).toBe(200);
    expect(graph.json.dependencies.map((d: { id: string; state: string; result: unknown }) => [d.id, d.state, d.result])).toEqual([
      [ids[0], 'completed', { n: 0 }],
      [ids[1], 'completed', { n: 1 }],
      [ids[2], 'completed', { n: 2 }],
    ]);
    expect((await t.get(`${api}/jobs/${ids[0]}/dependencies`)).json.dependents.map((d: { id: string }) => d.id)).toEqual([parent]);
  });

  test("a job held for its failed dependency (policy 'hold') is not released: 409 naming the dependency to retry, nothing changed; retrying that one lets the flow go on", async () => {
    t = await setup();
    const ids = (await t.post(`${api}/flows`, flow('hold'))).json.jobs.map((j: { id: string }) => j.id) as string[];
    const parent = ids[3]!;
    const kids = (await t.claim('parts', 'w', { limit: 3 })).sort((a, b) => Number(a.id) - Number(b.id));
    for (const k of kids.slice(0, 2)) expect((await t.post(`${api}/jobs/${k.id}/complete`, { workerId: 'w', lockToken: k.lockToken })).status).toBe(200);
    expect((await t.post(`${api}/jobs/${kids[2]!.id}/fail`, { workerId: 'w', lockToken: kids[2]!.lockToken, error: 'out of stock', retryable: false })).status).toBe(200);
    const before = (await t.get(`${api}/jobs/${parent}`)).json.job;
    const release = await t.post(`${api}/jobs/${parent}/held/release`, { reason: 'go' });
    expect(release.status).toBe(409);
    expect(release.json.error.code).toBe('conflict');
    expect(release.json.error.message).toContain(`dependency ${kids[2]!.id} failed`);
    expect(release.json.error.message).toContain(`Retry job ${kids[2]!.id}`);
    expect((await t.get(`${api}/jobs/${parent}`)).json.job).toEqual(before);
    expect((await t.post(`${api}/jobs/${kids[2]!.id}/retry`, { reason: 'restocked' })).status).toBe(200);
    const [again] = await t.claim('parts', 'w');
    expect((await t.post(`${api}/jobs/${again!.id}/complete`, { workerId: 'w', lockToken: again!.lockToken })).status).toBe(200);
    expect((await t.claim('assemble', 'w')).map((j) => j.id)).toEqual([parent]);
  });

  test('bad input: unknown ids, a reference forward, a key, a bad policy: a 4xx naming the field, nothing stored', async () => {
    t = await setup();
    const unknown = await t.post(`${api}/flows`, { jobs: [{ queue: 'q', payload: 1, dependsOn: ['424242'] }] });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error).toMatchObject({ field: 'jobs[0].dependsOn[0]' });
    expect(unknown.json.error.message).toContain('424242');
    const forward = await t.post(`${api}/flows`, { jobs: [{ queue: 'q', payload: 1, dependsOn: ['#1'] }, { queue: 'q', payload: 2 }] });
    expect(forward.status).toBe(400);
    expect(forward.json.error).toMatchObject({ field: 'jobs[0].dependsOn[0]' });
    const self = await t.post(`${api}/flows`, { jobs: [{ queue: 'q', payload: 1, dependsOn: ['#0'] }] });
    expect(self.status).toBe(400);
    const keyed = await t.post(`${api}/flows`, { jobs: [{ queue: 'q', payload: 1, idempotencyKey: 'k' }] });
    expect(keyed.json.error).toMatchObject({ field: 'jobs[0].idempotencyKey' });
    const policy = await t.post(`${api}/flows`, flow('maybe'));
    expect(policy.status).toBe(400);
    expect(policy.json.error).toMatchObject({ field: 'jobs[3].dependencyPolicy' });
    expect((await t.post(`${api}/flows`, { jobs: [] })).status).toBe(400);
    expect((await t.get(`${api}/jobs?limit=10`)).json.jobs).toEqual([]);
    expect((await t.get(`${api}/jobs/99999/dependencies`)).status).toBe(404);
  });

  test("a flow's jobs that wait for nothing wake a claim waiting on their queue; a job still waiting wakes none", async () => {
    t = await setup();
    const parked = (queue: string) => t.post(`${api}/queues/${queue}/claim`, { workerId: `w-${queue}`, limit: 5, waitMs: 30_000 });
    const parts = parked('parts');
    const assemble = parked('assemble');
    while (t.engine.claimWaiters.waiting < 2) await new Promise((r) => setImmediate(r));
    expect((await t.post(`${api}/flows`, flow())).status).toBe(201);
    // Woken by the flow's commit, not by the shared look a quarter of a second later.
    expect(t.engine.claimWaiters.waiting).toBe(1);
    expect((await parts).json.jobs.map((j: { payload: unknown }) => j.payload)).toEqual([{ part: 0 }, { part: 1 }, { part: 2 }]);
    t.engine.claimWaiters.close();
    expect((await assemble).json.jobs).toEqual([]);
  });

  test("the completion that releases a job wakes a claim waiting on the job's queue (no timer runs); completions nothing waits for wake none", async () => {
    t = await setup();
    const ids = (await t.post(`${api}/flows`, flow())).json.jobs.map((j: { id: string }) => j.id) as string[];
    const other = (await t.post(`${api}/queues/parts/jobs`, { payload: 'alone' })).json.job.id as string;
    const kids = (await t.claim('parts', 'w', { limit: 4 })).sort((a, b) => Number(a.id) - Number(b.id));
    expect(kids.map((k) => k.id)).toEqual([ids[0], ids[1], ids[2], other]);
    const looks = vi.spyOn(t.engine.claimWaiters, 'lookNow');
    const assemble = await parkedWithTimersStopped('assemble');
    // A job nothing waits for: its completion does not look.
    expect((await t.post(`${api}/jobs/${other}/complete`, { workerId: 'w', lockToken: kids[3]!.lockToken })).status).toBe(200);
    expect(looks).not.toHaveBeenCalled();
    // Two of three: a look, which finds nothing to claim; the claim keeps waiting.
    const done = (k: { id: string; lockToken: string }) => ({ id: k.id, lockToken: k.lockToken, result: { id: k.id } });
    expect((await t.post(`${api}/completions`, { workerId: 'w', results: [done(kids[0]!), done(kids[1]!)] })).status).toBe(200);
    expect(looks).toHaveBeenCalledTimes(1);
    expect(await assemble.answered(300)).toBeUndefined();
    expect(t.engine.claimWaiters.waiting).toBe(1);
    // The last one (complete-then-claim, a worker's hot path) releases the parent: the parked claim gets it.
    const last = await t.post(`${api}/completions`, { workerId: 'w', results: [done(kids[2]!)], claim: { queue: 'parts', limit: 1 } });
    expect(last.status).toBe(200);
    const answer = await assemble.answered();
    expect(answer?.json.jobs.map((j: { id: string }) => j.id)).toEqual([ids[3]]);
    expect(looks).toHaveBeenCalledTimes(2);
  });

  test("a dependency failed for good under policy 'run' wakes a claim waiting on the dependent's queue; a retryable failure does not look", async () => {
    t = await setup();
    const res = await t.post(`${api}/flows`, { jobs: [{ queue: 'parts', payload: 0, maxAttempts: 2 }, { queue: 'assemble', payload: 1, dependsOn: ['#0'], dependencyPolicy: 'run' }] });
    const [child, parent] = res.json.jobs.map((j: { id: string }) => j.id) as string[];
    const looks = vi.spyOn(t.engine.claimWaiters, 'lookNow');
    const assemble = await parkedWithTimersStopped('assemble');
    const [first] = await t.claim('parts', 'w');
    expect((await t.post(`${api}/jobs/${child}/fail`, { workerId: 'w', lockToken: first!.lockToken, error: 'flaky', retryAfterMs: 0 })).status).toBe(200);
    expect(looks).not.toHaveBeenCalled();
    const [second] = await t.claim('parts', 'w');
    expect((await t.post(`${api}/jobs/${child}/fail`, { workerId: 'w', lockToken: second!.lockToken, error: 'gone', retryable: false })).status).toBe(200);
    expect(looks).toHaveBeenCalledTimes(1);
    expect((await assemble.answered())?.json.jobs.map((j: { id: string }) => j.id)).toEqual([parent]);
  });

  test("an operator's cancel of a dependency under policy 'run' wakes the claims waiting on the dependent's queue", async () => {
    t = await setup();
    const res = await t.post(`${api}/flows`, { jobs: [{ queue: 'parts', payload: 0 }, { queue: 'assemble', payload: 1, dependsOn: ['#0'], dependencyPolicy: 'run' }] });
    const [child, parent] = res.json.jobs.map((j: { id: string }) => j.id) as string[];
    const assemble = await parkedWithTimersStopped('assemble');
    expect((await t.post(`${api}/jobs/${child}/cancel`, { reason: 'not needed' })).status).toBe(200);
    expect((await assemble.answered())?.json.jobs.map((j: { id: string }) => j.id)).toEqual([parent]);
  });
});
