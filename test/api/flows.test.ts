/**
 * Flows over HTTP (POST /flows, GET /jobs/:id/dependencies): a parent and
 * three children, one child fails for good and fails the parent naming it,
 * an operator retries the child, and the parent then runs once and reads
 * the children's results; bad input is a 4xx naming the field, storing nothing.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';

const api = '/api/v1';
let t: TestBed;
afterEach(() => {
  expect(t.errors).toEqual([]);
  t.close();
});

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
});
