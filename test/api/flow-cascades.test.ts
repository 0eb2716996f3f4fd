/**
 * A large failure cascade through the app and its engine, with a small step
 * (LEASEHOLD_CASCADE_STEP_ROWS 2): the worker's failure is answered while
 * the cascade is still owed (its progress on GET /jobs/:id and in /metrics),
 * /healthz is answered between steps, no step settles more than the cap, and
 * every dependent ends failed, each naming its own dependency. A server that
 * stops midway leaves the rest in the database, and another engine's
 * maintenance pass finishes it. Counts and order only: no timing.
 */
import { afterEach, expect, test } from 'vitest';
import { createApp } from '../../src/app.ts';
import type { CascadeStep } from '../../src/db/store/port.ts';
import { engineOn, setup, type TestBed } from '../support/helpers.ts';

const api = '/api/v1';
const DEPTH = 25;
let t: TestBed;
afterEach(() => {
  expect(t.errors).toEqual([]);
  t.close();
});

/** A root and a chain of DEPTH jobs below it, each waiting for the one before, under 'fail', and a job beside each waiting for it under 'run'. */
async function chain(): Promise<{ root: string; chain: string[]; beside: string[] }> {
  const [root] = (await t.post(`${api}/flows`, { jobs: [{ queue: 'root', payload: {}, maxAttempts: 1 }] })).json.jobs as { id: string }[];
  const jobs = Array.from({ length: DEPTH }, (_, i) => [
    { queue: 'dep', payload: { i }, dependsOn: i === 0 ? [root!.id] : [`#${2 * i - 2}`] },
    { queue: 'beside', payload: { i }, dependsOn: [`#${2 * i}`], dependencyPolicy: 'run' },
  ]).flat();
  const res = await t.post(`${api}/flows`, { jobs });
  expect(res.status).toBe(201);
  const stored = (res.json.jobs as { id: string }[]).map((j) => j.id);
  return { root: root!.id, chain: stored.filter((_, i) => i % 2 === 0), beside: stored.filter((_, i) => i % 2 === 1) };
}

async function failRoot(root: string) {
  const [claimed] = await t.claim('root', 'w');
  expect(claimed?.id).toBe(root);
  const res = await t.post(`${api}/jobs/${root}/fail`, { workerId: 'w', lockToken: claimed!.lockToken, error: 'out of stock', retryable: false });
  expect(res.status).toBe(200);
}

const statuses = async (ids: string[]) => Promise.all(ids.map(async (id) => (await t.get(`${api}/jobs/${id}`)).json.job.status as string));
const owedMetric = async () => Number(/^leasehold_dependency_cascades_owed (\d+)$/m.exec((await t.call('GET', '/metrics')).text)?.[1]);

test('a failure is answered with its cascade still owed, shown on the job and in /metrics; /healthz is answered between bounded steps; every dependent ends failed naming its own dependency', async () => {
  t = await setup({ cascadeStepRows: 2 });
  const { root, chain: ids, beside } = await chain();
  const steps: CascadeStep[] = [];
  const order: string[] = [];
  const store = t.engine.store;
  const step = store.dependencyCascadeStep.bind(store);
  store.dependencyCascadeStep = async (p) => {
    const done = await step(p);
    if (done) {
      steps.push(done);
      order.push('step');
      // Asked once the cascade is under way: answered before it ends.
      if (steps.length === 2) void t.call('GET', '/healthz').then((r) => order.push(`healthz ${r.status}`));
    }
    return done;
  };
  await failRoot(root);
  // The call waited for its first steps only.
  const job = (await t.get(`${api}/jobs/${root}`)).json;
  expect(job.cascade).toMatchObject({ action: 'fail' });
  expect(job.cascade.settled).toBeGreaterThan(0);
  expect((await statuses(ids)).filter((s) => s === 'pending').length).toBeGreaterThan(0);
  expect(await owedMetric()).toBe(1);

  await t.engine.cascades.settle(1_000);
  expect(await statuses(ids)).toEqual(ids.map(() => 'failed'));
  // Each 'run' job beside the chain was released, and its queue's claim takes them all.
  expect((await t.claim('beside', 'w', { limit: 100 })).map((j) => j.id).sort()).toEqual([...beside].sort());
  expect((await t.get(`${api}/jobs/${root}`)).json.cascade).toBeNull();
  expect(await owedMetric()).toBe(0);
  // Each step within the cap; /healthz answered while steps were still to come.
  expect(Math.max(...steps.map((s) => s.edges))).toBeLessThanOrEqual(2);
  expect(Math.max(...steps.map((s) => s.changed.length))).toBeLessThanOrEqual(2);
  const answered = order.indexOf('healthz 200');
  expect(answered).toBeGreaterThan(0);
  expect(order.slice(answered).filter((o) => o === 'step').length).toBeGreaterThan(5);
  // The cause down the chain: its own dependency, then the root.
  const last = (await t.get(`${api}/jobs/${ids.at(-1)}`)).json.job;
  expect(last.lastError).toBe(`dependency ${ids.at(-2)} (dep) was failed, after job ${root} (root) was failed: out of stock`);
});

test('a server that stops midway leaves the rest of the cascade in the database: another engine\'s maintenance pass finishes it', async () => {
  t = await setup({ cascadeStepRows: 2 });
  const { root, chain: ids } = await chain();
  await failRoot(root);
  // Stopped after the steps the call waited for: nothing in this process goes on.
  t.engine.close();
  expect((await statuses(ids)).filter((s) => s === 'pending').length).toBeGreaterThan(0);
  const owed = await t.engine.store.dependencyCascadeOf({ jobId: Number(root) });
  expect(owed).toMatchObject({ action: 'fail' });

  const next = engineOn(t.db, { config: t.config, clock: t.clock, log: t.log });
  try {
    const report = await next.maintenancePass(t.clock.now() as number);
    expect(report.cascades.steps).toBeGreaterThan(0);
    await next.cascades.settle(1_000);
    expect(await statuses(ids)).toEqual(ids.map(() => 'failed'));
    expect(await next.store.dependencyCascadesOwed()).toBe(0);
    // The retry, through the app on the new engine, brings the chain back to waiting.
    const app = createApp({ engine: next });
    expect((await app.request(`${api}/jobs/${root}/retry`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ reason: 'restocked' }) })).status).toBe(200);
    await next.cascades.settle(1_000);
    expect(await statuses(ids)).toEqual(ids.map(() => 'pending'));
  } finally {
    next.close();
  }
});
