/**
 * Jobs that wait for other jobs (src/db/store/dependencies.ts, the triggers
 * of drizzle/0031) on every backend: a flow is stored all or none and its
 * parent waits, out of every claim's reach, until the transition that
 * completes its last child releases it; a failed child fails, holds or lets
 * run its dependents by their policy; retrying the failed child lets the
 * flow go on; unknown ids store nothing.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { HELD_AVAILABLE_AT } from '../../../src/core/held.ts';
import { DEFAULTS, T0, useBundle, type StoreBackend } from './support.ts';
import type { DependencyPolicy } from '../../../src/core/wire.ts';

export function defineDependencies(backend: StoreBackend) {
  describe('jobs that wait for other jobs', () => {
    const t = useBundle(backend);

    /** A parent in 'q' waiting for `children` children in 'c'. */
    async function flow(children: number, policy?: DependencyPolicy) {
      const kids = Array.from({ length: children }, (_, i) => ({ queue: 'c', payload: { child: i }, dependsOn: [] }));
      const parent = { queue: 'q', payload: { parent: true }, dependsOn: kids.map((_, i) => ({ ref: i })), dependencyPolicy: policy };
      const rows = await t().store.jobsInsertFlow({ jobs: [...kids, parent], actor: null, now: T0, defaults: DEFAULTS, nonce: `n${Math.random()}` });
      return { children: rows.slice(0, -1), parent: rows.at(-1)! };
    }
    const claim = (queue: string, now = T0) => t().store.jobsClaimPending({ queue, workerId: 'w', limit: 10, now, defaults: DEFAULTS });
    const complete = (id: number, lockToken: string, result: unknown, now = T0) =>
      t().store.jobsCompleteIfOwned({ workerId: 'w', results: [{ id, lockToken, data: JSON.stringify(result) }], now });
    /** Every step of the failure cascades owed (the engine and the maintenance pass run them: src/engine/dependency-cascades.ts); how many it took. */
    async function cascade(now = T0, rows = 500): Promise<number> {
      let steps = 0;
      while (await t().store.dependencyCascadeStep({ rows, now })) steps++;
      return steps;
    }
    const failForGood = async (id: number, lockToken: string, now = T0) => {
      const outcomes = await t().store.jobFailIfOwned({ workerId: 'w', id, lockToken, error: 'boom', retryable: false, now, defaults: DEFAULTS });
      await cascade(now);
      return outcomes;
    };
    const retry = async (id: number, now: number, actor = 'op', reason: string | null = 'fixed') => {
      const outcome = await t().store.jobRetryIfFinishedUnsuccessfully({ id, actor, reason, now });
      await cascade(now);
      return outcome;
    };

    test('a parent waits out of reach until its last child completes, then runs once and reads their results', async () => {
      const { store, row, events } = t();
      const { children, parent } = await flow(3);
      expect(parent).toMatchObject({ status: 'pending', dependencies_unmet: 3, available_at: HELD_AVAILABLE_AT, dependencies_run_at: T0 });
      expect(await claim('q')).toEqual([]);
      const kids = await claim('c');
      expect(kids.map((k) => k.id).sort()).toEqual(children.map((c) => c.id).sort());
      for (const [i, k] of kids.entries()) {
        expect(await claim('q')).toEqual([]);
        await complete(k.id, k.lock_token!, { n: i }, T0 + 10 + i);
      }
      expect(await row(parent.id)).toMatchObject({ status: 'pending', dependencies_unmet: 0, available_at: T0 + 12, last_event: 'dependencies_met' });
      const [taken] = await claim('q', T0 + 20);
      expect(taken?.id).toBe(parent.id);
      expect(await claim('q', T0 + 20)).toEqual([]);
      const graph = await store.jobDependencyGraph({ id: parent.id, limit: 10 });
      expect(graph.dependencies.map((d) => [d.state, d.status, JSON.parse(d.result!)])).toEqual(kids.map((_, i) => ['completed', 'completed', { n: i }]));
      expect((await store.jobDependencyGraph({ id: children[0]!.id, limit: 10 })).dependents.map((d) => d.id)).toEqual([parent.id]);
      expect((await events(parent.id)).map((e) => e.type)).toEqual(expect.arrayContaining(['waiting_for_dependencies', 'dependency_completed', 'dependencies_met']));
    });

    test("policy 'fail': a failed child fails the parent naming it; retrying the child puts the parent back to waiting, and the flow goes on", async () => {
      const { row, events } = t();
      const { parent } = await flow(2);
      const [a, b] = await claim('c');
      await complete(a!.id, a!.lock_token!, 'ok');
      await failForGood(b!.id, b!.lock_token!);
      const failed = await row(parent.id);
      expect(failed).toMatchObject({ status: 'failed', dependency_failed_by: b!.id, last_event_reason: 'dependency_failed' });
      expect(failed.last_error).toContain(`dependency ${b!.id}`);
      expect((await events(parent.id)).at(-1)).toMatchObject({ type: 'failed', reason: 'dependency_failed' });
      await retry(b!.id, T0 + 100);
      expect(await row(parent.id)).toMatchObject({ status: 'pending', dependencies_unmet: 1, available_at: HELD_AVAILABLE_AT, dependency_failed_by: null, last_event: 'dependency_retried' });
      expect(await claim('q', T0 + 200)).toEqual([]);
      const [again] = await claim('c', T0 + 200);
      await complete(again!.id, again!.lock_token!, 'ok', T0 + 300);
      expect((await claim('q', T0 + 400)).map((j) => j.id)).toEqual([parent.id]);
    });

    test("policy 'hold' holds the parent for a person; 'run' counts the failure as met", async () => {
      const { row, store } = t();
      const held = await flow(1, 'hold');
      const [k] = await claim('c');
      await failForGood(k!.id, k!.lock_token!);
      expect(await row(held.parent.id)).toMatchObject({ status: 'pending', held_at: T0, available_at: HELD_AVAILABLE_AT, last_event: 'dependency_failed', last_event_reason: 'hold' });
      // Each side of an edge sees the other's own wait: its policy, unmet count and hold (the job page's graph).
      const fromChild = await store.jobDependencyGraph({ id: k!.id, limit: 10 });
      expect(fromChild.dependents).toMatchObject([{ id: held.parent.id, state: 'failed', dependencyPolicy: 'hold', dependenciesUnmet: 1, heldAt: T0 }]);
      expect((await store.jobDependencyGraph({ id: held.parent.id, limit: 10 })).dependencies).toMatchObject([{ id: k!.id, status: 'failed', dependencyPolicy: null, dependenciesUnmet: 0, heldAt: null }]);
      expect(await store.jobGetWithSettings({ id: k!.id, defaults: DEFAULTS })).toMatchObject({ has_dependents: 1 });
      expect(await store.jobGetWithSettings({ id: held.parent.id, defaults: DEFAULTS })).toMatchObject({ has_dependents: 0 });
      // A release is refused (it would leave the job waiting for a dependency that will not complete), naming the dependency; nothing changes.
      const release = await store.jobReleaseIfHeld({ id: held.parent.id, actor: 'ops', reason: 'try', now: T0 + 5 });
      expect(release).toEqual({ ok: false, reason: 'conflict', status: 'pending', heldByDependency: k!.id });
      expect(await row(held.parent.id)).toMatchObject({ status: 'pending', held_at: T0, available_at: HELD_AVAILABLE_AT, last_event: 'dependency_failed' });
      const run = await flow(1, 'run');
      const [k2] = await claim('c');
      await failForGood(k2!.id, k2!.lock_token!);
      expect(await row(run.parent.id)).toMatchObject({ status: 'pending', dependencies_unmet: 0, available_at: T0, last_event: 'dependencies_met' });
      expect((await claim('q')).map((j) => j.id)).toEqual([run.parent.id]);
    });

    test('a completion or a failure for good says whether jobs wait for what it finished (the engine then wakes waiting claims); others say nothing', async () => {
      const { store } = t();
      const { children } = await flow(3, 'run');
      const [alone] = await store.jobsInsert({ queue: 'c', jobs: [{ payload: 'alone' }], actor: null, now: T0, defaults: DEFAULTS });
      const kids = new Map((await claim('c')).map((k) => [k.id, k]));
      const [a, b, c] = children.map((ch) => kids.get(ch.id)!);
      const lone = kids.get(alone!.job.id)!;
      const lean = await store.jobsCompleteIfOwned({ workerId: 'w', results: [{ id: a!.id, lockToken: a!.lock_token!, data: null }, { id: lone.id, lockToken: lone.lock_token!, data: null }], now: T0 });
      expect(lean.map((o) => [o.id, o.ok && o.dependents])).toEqual([[a!.id, true], [lone.id, undefined]]);
      const [full] = await store.jobsCompleteIfOwned({ workerId: 'w', results: [{ id: b!.id, lockToken: b!.lock_token!, data: null }], now: T0, full: true });
      expect(full).toMatchObject({ ok: true, dependents: true, job: { status: 'completed' } });
      const [failed] = await failForGood(c!.id, c!.lock_token!);
      expect(failed).toMatchObject({ ok: true, dependents: true, job: { status: 'failed' } });
      // The same completion sent again (its answer lost) changed nothing: it wakes nothing.
      const [again] = await store.jobsCompleteIfOwned({ workerId: 'w', results: [{ id: b!.id, lockToken: b!.lock_token!, data: null }], now: T0 });
      expect(again).toMatchObject({ ok: true, repeated: true });
      expect(again!.ok && again!.dependents).toBeUndefined();
      const [more] = await store.jobsInsert({ queue: 'c', jobs: [{ payload: 'more' }], actor: null, now: T0, defaults: DEFAULTS });
      const [m] = await claim('c');
      const { outcomes } = await store.jobsCompleteThenClaim({ workerId: 'w', results: [{ id: m!.id, lockToken: m!.lock_token!, data: null }], now: T0, claim: { queue: 'q', limit: 1 }, defaults: DEFAULTS });
      expect(m!.id).toBe(more!.job.id);
      expect(outcomes[0]!.ok && outcomes[0]!.dependents).toBeUndefined();
    });

    test("a chain of 'fail' dependents fails down the chain, and one retry brings it all back", async () => {
      const { store, row } = t();
      const [a] = await store.jobsInsertFlow({
        jobs: [
          { queue: 'c', payload: 1, dependsOn: [] },
          { queue: 'q', payload: 2, dependsOn: [{ ref: 0 }] },
          { queue: 'q', payload: 3, dependsOn: [{ ref: 1 }] },
        ],
        actor: null, now: T0, defaults: DEFAULTS, nonce: 'chain',
      });
      const [k] = await claim('c');
      await failForGood(k!.id, k!.lock_token!);
      expect([(await row(a!.id + 1)).status, (await row(a!.id + 2)).status]).toEqual(['failed', 'failed']);
      await retry(a!.id, T0 + 1, 'op', null);
      expect([(await row(a!.id + 1)).status, (await row(a!.id + 2)).status]).toEqual(['pending', 'pending']);
      expect((await row(a!.id + 2)).dependencies_unmet).toBe(1);
    });

    test('an unknown id, or an already failed dependency, stores nothing', async () => {
      const { store, db } = t();
      await expect(store.jobsInsertFlow({ jobs: [{ queue: 'q', payload: 1, dependsOn: [987654] }], actor: null, now: T0, defaults: DEFAULTS, nonce: 'x' })).rejects.toThrow(/unknown dependency/);
      const { children } = await flow(1, 'run');
      const [k] = await claim('c');
      await failForGood(k!.id, k!.lock_token!);
      await expect(store.jobsInsertFlow({ jobs: [{ queue: 'q', payload: 1, dependsOn: [children[0]!.id] }], actor: null, now: T0, defaults: DEFAULTS, nonce: 'y' })).rejects.toThrow(/failed dependency/);
      const count = await db.all<{ n: number }>(sql`SELECT count(*) AS n FROM jobs`);
      expect(count[0]!.n).toBe(2);
      expect(await store.jobsDependencyCandidates({ ids: [children[0]!.id, 987654] })).toEqual([{ id: children[0]!.id, status: 'failed', dependents: 1 }]);
    });

    /** Every edge's state and every job's wait, keyed, to tell what one step changed. */
    async function snapshot() {
      const edges = await t().db.all<{ k: string; state: string }>(sql`SELECT dependent_id || '<-' || dependency_id AS k, state FROM job_dependencies`);
      const jobs = await t().db.all<{ id: number; v: string }>(sql`SELECT id, status || '/' || coalesce(held_at, '-') || '/' || dependencies_unmet || '/' || available_at AS v FROM jobs`);
      return { edges: new Map(edges.map((e) => [e.k, e.state])), jobs: new Map(jobs.map((j) => [j.id, j.v])) };
    }
    const changed = <K, V>(a: Map<K, V>, b: Map<K, V>) => [...b].filter(([k, v]) => a.get(k) !== v).length;

    /**
     * A root, 12 jobs waiting for it ('fail', but job 3 'hold' and job 4
     * 'run'), and a second level: each of the first 12 waited for by one more,
     * and the last of those by one 'run' job that also waits for a plain job.
     */
    async function wideFlow() {
      const { store } = t();
      const [root] = await store.jobsInsertFlow({ jobs: [{ queue: 'c', payload: 'root', dependsOn: [] }], actor: null, now: T0, defaults: DEFAULTS, nonce: 'root' });
      const [other] = await store.jobsInsertFlow({ jobs: [{ queue: 'other', payload: 'other', dependsOn: [] }], actor: null, now: T0, defaults: DEFAULTS, nonce: 'other' });
      const first = Array.from({ length: 12 }, (_, i) => ({ queue: 'q', payload: i, dependsOn: [root!.id], dependencyPolicy: (i === 3 ? 'hold' : i === 4 ? 'run' : undefined) as DependencyPolicy | undefined }));
      const second = Array.from({ length: 12 }, (_, i) => ({ queue: 'q', payload: 100 + i, dependsOn: [{ ref: i }] }));
      const last = { queue: 'q', payload: 'last', dependsOn: [{ ref: 12 + 11 }, other!.id], dependencyPolicy: 'run' as const };
      const rows = await store.jobsInsertFlow({ jobs: [...first, ...second, last], actor: null, now: T0, defaults: DEFAULTS, nonce: 'wide' });
      return { root: root!, other: other!, first: rows.slice(0, 12), second: rows.slice(12, 24), last: rows[24]! };
    }

    test('a failure settles its dependents in bounded steps: the failing statement changes none of them, and no step changes more edges or jobs than the cap', async () => {
      const { store, row } = t();
      const g = await wideFlow();
      const [r] = await claim('c');
      const before = await snapshot();
      await store.jobFailIfOwned({ workerId: 'w', id: r!.id, lockToken: r!.lock_token!, error: 'boom', retryable: false, now: T0, defaults: DEFAULTS });
      const after = await snapshot();
      // Only the root's own row moved; the cascade is owed, in the database.
      expect(changed(before.edges, after.edges)).toBe(0);
      expect(changed(before.jobs, after.jobs)).toBe(1);
      expect(await store.dependencyCascadeOf({ jobId: g.root.id })).toMatchObject({ jobId: g.root.id, action: 'fail', steps: 0, settled: 0 });
      const CAP = 2;
      let prev = after;
      let steps = 0;
      for (;;) {
        const step = await store.dependencyCascadeStep({ rows: CAP, now: T0 + 1 });
        if (!step) break;
        steps++;
        const now = await snapshot();
        expect(changed(prev.edges, now.edges)).toBeLessThanOrEqual(CAP);
        expect(changed(prev.jobs, now.jobs)).toBeLessThanOrEqual(CAP);
        expect(step.edges).toBeLessThanOrEqual(CAP);
        prev = now;
        expect(steps).toBeLessThan(100);
      }
      // 25 edges two at a time, and the steps that find the end.
      expect(steps).toBeGreaterThanOrEqual(13);
      expect(await store.dependencyCascadeOf({ jobId: g.root.id })).toBeUndefined();
      for (const [i, j] of g.first.entries()) {
        const want = i === 3 ? { status: 'pending', held_at: T0 + 1 } : i === 4 ? { status: 'pending', dependencies_unmet: 0 } : { status: 'failed', dependency_failed_by: g.root.id };
        expect(await row(j.id), `first[${i}]`).toMatchObject(want);
      }
      for (const [i, j] of g.second.entries()) {
        // Below the held job and the 'run' job nothing failed: they wait on.
        const want = i === 3 || i === 4 ? { status: 'pending', dependencies_unmet: 1, dependency_failed_by: null } : { status: 'failed', dependency_failed_by: g.root.id };
        expect(await row(j.id), `second[${i}]`).toMatchObject(want);
      }
      // 'run' below a failed job: met, still waiting for the plain job.
      expect(await row(g.last.id)).toMatchObject({ status: 'pending', dependencies_unmet: 1, last_event: 'dependency_failed', last_event_reason: 'run' });
      expect([...prev.edges.values()].filter((s) => s === 'waiting')).toHaveLength(3);
    });

    test("under 'fail', each job down a chain names its own dependency as the cause (and the job whose failure started it)", async () => {
      const { store, row } = t();
      const [a, b, c] = await store.jobsInsertFlow({
        jobs: [
          { queue: 'c', payload: 1, dependsOn: [] },
          { queue: 'q', payload: 2, dependsOn: [{ ref: 0 }] },
          { queue: 'q', payload: 3, dependsOn: [{ ref: 1 }] },
        ],
        actor: null, now: T0, defaults: DEFAULTS, nonce: 'cause',
      });
      const [k] = await claim('c');
      await failForGood(k!.id, k!.lock_token!);
      expect(await row(b!.id)).toMatchObject({ status: 'failed', dependency_failed_by: a!.id, last_error: `dependency ${a!.id} (c) was failed: boom` });
      expect(await row(c!.id)).toMatchObject({ status: 'failed', dependency_failed_by: a!.id });
      expect((await row(c!.id)).last_error).toBe(`dependency ${b!.id} (q) was failed, after job ${a!.id} (c) was failed: boom`);
    });

    test('a retry midway through a failure, and a failure again midway through its retry, still end as the policies say', async () => {
      const { store, row, db } = t();
      const chain = await store.jobsInsertFlow({
        jobs: [{ queue: 'c', payload: 0, dependsOn: [] }, ...Array.from({ length: 8 }, (_, i) => ({ queue: 'q', payload: i + 1, dependsOn: [{ ref: i }] }))],
        actor: null, now: T0, defaults: DEFAULTS, nonce: 'midway',
      });
      const root = chain[0]!;
      const rest = chain.slice(1);
      const statuses = async () => Promise.all(rest.map(async (j) => (await row(j.id)).status));
      const edges = async () => (await db.all<{ state: string }>(sql`SELECT state FROM job_dependencies ORDER BY dependent_id`)).map((e) => e.state);
      const step = (n: number, now: number) => Promise.all([]).then(async () => {
        for (let i = 0; i < n; i++) await store.dependencyCascadeStep({ rows: 1, now });
      });
      let [k] = await claim('c');
      await store.jobFailIfOwned({ workerId: 'w', id: k!.id, lockToken: k!.lock_token!, error: 'boom', retryable: false, now: T0, defaults: DEFAULTS });
      await step(3, T0 + 1);
      expect((await statuses()).filter((s) => s === 'failed').length).toBeGreaterThan(0);
      expect((await statuses()).filter((s) => s === 'failed').length).toBeLessThan(8);
      // Retried before the failure reached the end: everything waits again.
      await store.jobRetryIfFinishedUnsuccessfully({ id: root.id, actor: 'op', reason: null, now: T0 + 2 });
      await cascade(T0 + 3);
      expect(await statuses()).toEqual(rest.map(() => 'pending'));
      expect(await edges()).toEqual(rest.map(() => 'waiting'));
      expect(await row(rest[0]!.id)).toMatchObject({ dependency_failed_by: null, dependencies_unmet: 1, available_at: HELD_AVAILABLE_AT });
      // Failed to the end, retried, and failed again before the retry's steps ended.
      [k] = await claim('c', T0 + 4);
      await store.jobFailIfOwned({ workerId: 'w', id: k!.id, lockToken: k!.lock_token!, error: 'again', retryable: false, now: T0 + 4, defaults: DEFAULTS });
      await cascade(T0 + 5);
      expect(await statuses()).toEqual(rest.map(() => 'failed'));
      await store.jobRetryIfFinishedUnsuccessfully({ id: root.id, actor: 'op', reason: null, now: T0 + 6 });
      await step(4, T0 + 7);
      [k] = await claim('c', T0 + 8);
      await store.jobFailIfOwned({ workerId: 'w', id: k!.id, lockToken: k!.lock_token!, error: 'third', retryable: false, now: T0 + 8, defaults: DEFAULTS });
      await cascade(T0 + 9);
      expect(await statuses()).toEqual(rest.map(() => 'failed'));
      expect(await edges()).toEqual(rest.map(() => 'failed'));
      expect(await store.dependencyCascadeOf({ jobId: root.id })).toBeUndefined();
      // And the last retry brings all of it back.
      await retry(root.id, T0 + 10);
      expect(await statuses()).toEqual(rest.map(() => 'pending'));
      expect(await edges()).toEqual(rest.map(() => 'waiting'));
    });
  });
}
