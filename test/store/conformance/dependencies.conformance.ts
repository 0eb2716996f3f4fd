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
  });
}
