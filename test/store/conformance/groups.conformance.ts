/**
 * Groups and sliding rate limits on every backend: the claim takes turns
 * across groups (least recently served first) and answers in that order, holds groupMaxRunning and a
 * group's sliding window, and the queue's sliding window counts starts; the
 * per-group counts the queue page and /metrics show (queuesGroupCounts).
 */
import { sql } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { DEFAULTS, T0, useBundle, type StoreBackend } from './support.ts';

export function defineGroups(backend: StoreBackend) {
  describe('groups and sliding rate limits', () => {
    const t = useBundle(backend);
    const claim = (workerId: string, limit: number, now = T0) => t().store.jobsClaimPending({ queue: 'q', workerId, limit, now, defaults: DEFAULTS });
    const enqueue = (group: string | undefined, n: number) =>
      t().store.jobsInsert({ queue: 'q', jobs: Array.from({ length: n }, (_, i) => ({ payload: { group, i }, group })), actor: 'test', now: T0, defaults: DEFAULTS });
    const groupOf = (c: { payload: string }) => (JSON.parse(c.payload) as { group?: string }).group ?? '-';

    test('turns across groups, jobs without a group first, and groupMaxRunning per group', async () => {
      const { store } = t();
      await enqueue('a', 20);
      await enqueue('b', 2);
      await enqueue(undefined, 1);
      const first = (await claim('w1', 4)).map(groupOf).sort();
      // One claim of 4: the job without a group, then a's and b's first, then a's second.
      expect(first).toEqual(['-', 'a', 'a', 'b']);
      await store.queueUpsertSettings({ queue: 'q', patch: { groupMaxRunning: 3 }, now: T0 });
      await claim('w2', 50);
      const running = await t().db.all<{ g: string; n: number }>(sql`SELECT group_key AS g, count(*) AS n FROM jobs WHERE status = 'running' AND group_key IS NOT NULL GROUP BY group_key`);
      for (const r of running) expect(Number(r.n)).toBeLessThanOrEqual(3);
      expect(await claim('w3', 50)).toHaveLength(0);
    });

    test('a claim answers its jobs in the order it took them: without a group first, then a turn at a time across groups', async () => {
      await enqueue('a', 6);
      await enqueue('b', 2);
      await enqueue('c', 2);
      await enqueue(undefined, 1);
      // A worker starts an answer in order: sorted by id, it listed all of a's before b's and c's.
      expect((await claim('w', 11)).map(groupOf)).toEqual(['-', 'a', 'b', 'c', 'a', 'b', 'c', 'a', 'a', 'a', 'a']);
      // Within a group, claim order (priority, then due time, then id).
      await t().store.jobsInsert({ queue: 'q', jobs: [{ payload: { group: 'd', i: 0 }, group: 'd' }, { payload: { group: 'd', i: 1 }, group: 'd', priority: 5 }], actor: 'test', now: T0, defaults: DEFAULTS });
      expect((await claim('w', 2)).map((c) => JSON.parse(c.payload) as { i: number }).map((p) => p.i)).toEqual([1, 0]);
    });

    test("a group whose jobs are all delayed is passed over until one comes due, through every change of its jobs' due times", async () => {
      const { store, db } = t();
      const insert = (group: string, job: Record<string, unknown>, now = T0) =>
        store.jobsInsert({ queue: 'q', jobs: [{ payload: { group }, group, ...job }], actor: 'test', now, defaults: DEFAULTS });
      const claimedGroups = async (now: number, limit = 10) => (await claim('w', limit, now)).map(groupOf).sort();
      const delayedUntil = async (group: string) =>
        (await db.all<{ d: number | null }>(sql`SELECT delayed_until AS d FROM job_groups WHERE queue_name = 'q' AND group_key = ${group}`))[0]?.d ?? null;
      // Delayed at enqueue: not claimable, and the group says until when.
      await insert('later', { delayMs: 10_000 });
      await insert('later', { delayMs: 20_000 });
      expect(await delayedUntil('later')).toBe(T0 + 10_000);
      expect(await claimedGroups(T0)).toEqual([]);
      // Its delay runs out with no write to the group: the claim finds it.
      expect(await claimedGroups(T0 + 10_000)).toEqual(['later']);
      // Its next job is delayed again: passed over until then.
      expect(await delayedUntil('later')).toBe(T0 + 20_000);
      expect(await claimedGroups(T0 + 19_999)).toEqual([]);
      // A due job enqueued into a delayed group makes it claimable at once.
      await insert('later', {}, T0 + 19_999);
      expect(await claimedGroups(T0 + 19_999)).toEqual(['later']);
      expect(await claimedGroups(T0 + 20_000)).toEqual(['later']);
      // A retry's backoff delays the group; the retry comes due.
      await insert('retry', {}, T0 + 20_000);
      const [job] = await claim('w', 1, T0 + 20_000);
      await store.jobFailIfOwned({ workerId: 'w', id: job!.id, lockToken: job!.lock_token!, error: 'x', retryable: true, retryAfterMs: 5_000, now: T0 + 20_000, defaults: DEFAULTS });
      expect(await delayedUntil('retry')).toBe(T0 + 25_000);
      expect(await claimedGroups(T0 + 24_999)).toEqual([]);
      expect(await claimedGroups(T0 + 25_000)).toEqual(['retry']);
      // A pending job whose run time moves earlier (rewritten by its key) is claimable at once.
      await insert('keyed', { idempotencyKey: 'k', uniqueWhile: 'replace', delayMs: 60_000 }, T0 + 25_000);
      expect(await claimedGroups(T0 + 25_000)).toEqual([]);
      await insert('keyed', { idempotencyKey: 'k', uniqueWhile: 'replace' }, T0 + 25_001);
      expect(await delayedUntil('keyed')).toBeNull();
      expect(await claimedGroups(T0 + 25_001)).toEqual(['keyed']);
      // ...and one moved later is passed over again.
      await insert('keyed2', { idempotencyKey: 'k2', uniqueWhile: 'replace' }, T0 + 25_001);
      await insert('keyed2', { idempotencyKey: 'k2', uniqueWhile: 'replace', delayMs: 60_000 }, T0 + 25_002);
      expect(await delayedUntil('keyed2')).toBe(T0 + 85_002);
      expect(await claimedGroups(T0 + 25_002)).toEqual([]);
      // Every row agrees with the jobs: delayed_until is the earliest pending job's due time when none was due at the group's last change.
      const wrong = await db.all<{ g: string }>(sql`SELECT g.group_key AS g FROM job_groups g
        WHERE g.delayed_until IS NOT (SELECT min(j.available_at) FROM jobs j WHERE j.queue_name = g.queue_name AND j.group_key = g.group_key AND j.status = 'pending'
          HAVING min(j.available_at) > ${T0 + 25_002})`);
      expect(wrong).toEqual([]);
    });

    test('sliding windows: the queue and each group count starts of the last windowMs', async () => {
      const { store } = t();
      await enqueue('a', 10);
      await enqueue('b', 10);
      await store.queueUpsertSettings({ queue: 'q', patch: { rateLimit: { max: 5, windowMs: 1_000 }, groupRateLimit: { max: 2, windowMs: 1_000 } }, now: T0 });
      expect(await claim('w', 10, T0)).toHaveLength(4);
      expect(await claim('w', 10, T0 + 999)).toHaveLength(0);
      expect(await claim('w', 10, T0 + 1_000)).toHaveLength(4);
      // The queue's window now holds 4 of 5 (those of T0 + 1000): one more.
      await enqueue('c', 5);
      expect(await claim('w', 10, T0 + 1_500)).toHaveLength(1);
      const [q] = await store.queuesHealth({ now: T0 + 1_500, defaults: DEFAULTS, queue: 'q' });
      expect(q).toMatchObject({ rateUsed: 5, rateLimitedUntil: T0 + 2_000, rateLimitMode: 'sliding', groupRateLimit: { max: 2, windowMs: 1_000 } });
    });

    test('group counts: the busiest groups (ties by key, in byte order), the rest summed, every grouped job counted once', async () => {
      const { store, db } = t();
      await enqueue('a', 50);
      await enqueue('b', 3);
      // Taken in turns: a and b run two each; then the singles and two jobs without a group, and some of those run.
      expect(await claim('w', 4)).toHaveLength(4);
      for (let i = 0; i < 15; i++) await enqueue(`g${String(i).padStart(2, '0')}`, 1);
      await enqueue(undefined, 2);
      expect(await claim('w', 8)).toHaveLength(8);
      const [q] = await store.queuesGroupCounts({ queue: 'q', limit: 10 });
      const truth = await db.all<{ g: string; pending: number; running: number }>(
        sql`SELECT group_key AS g, sum(status = 'pending') AS pending, sum(status = 'running') AS running FROM jobs
          WHERE queue_name = 'q' AND group_key IS NOT NULL AND status IN ('pending', 'running') GROUP BY group_key`,
      );
      const of = (g: string) => truth.find((r) => r.g === g)!;
      expect(q!.queue).toBe('q');
      expect(q!.groups).toBe(17);
      // a (50 jobs), b (3), then the first eight singles by key; the other seven summed.
      expect(q!.top.map((g) => g.group)).toEqual(['a', 'b', 'g00', 'g01', 'g02', 'g03', 'g04', 'g05', 'g06', 'g07']);
      for (const g of q!.top) expect(g).toEqual({ group: g.group, pending: Number(of(g.group).pending), running: Number(of(g.group).running) });
      expect(q!.top[0]!.pending + q!.top[0]!.running).toBe(50);
      expect(q!.top[0]!.running).toBeGreaterThan(0);
      const rest = truth.filter((r) => r.g >= 'g08');
      expect(q!.other).toEqual({ groups: 7, pending: rest.reduce((s, r) => s + Number(r.pending), 0), running: rest.reduce((s, r) => s + Number(r.running), 0) });
      // Top and other add up to every grouped job (the two jobs without a group are in neither).
      const [h] = await store.queuesHealth({ now: T0, defaults: DEFAULTS, queue: 'q' });
      const ungrouped = await db.all<{ pending: number; running: number }>(
        sql`SELECT sum(status = 'pending') AS pending, sum(status = 'running') AS running FROM jobs WHERE queue_name = 'q' AND group_key IS NULL`,
      );
      const sum = (k: 'pending' | 'running') => q!.top.reduce((s, g) => s + g[k], 0) + q!.other[k] + Number(ungrouped[0]![k]);
      expect({ pending: sum('pending'), running: sum('running') }).toEqual({ pending: h!.counts.pending, running: h!.counts.running });
    });

    test('group counts: every queue with groups, each bounded by the limit; keys come back whole and in byte order', async () => {
      const { store } = t();
      const keys = ['z', 'é', '\uff41', '😀', 'quote " back \\ slash', 'line\nbreak'];
      await store.jobsInsert({ queue: 'odd', jobs: keys.map((group) => ({ payload: 1, group })), actor: 'test', now: T0, defaults: DEFAULTS });
      await enqueue('a', 2);
      await store.jobsInsert({ queue: 'plain', jobs: [{ payload: 1 }], actor: 'test', now: T0, defaults: DEFAULTS });
      const all = await store.queuesGroupCounts({ limit: 4 });
      // A queue without groups is left out; queues by name.
      expect(all.map((x) => x.queue)).toEqual(['odd', 'q']);
      // One job each: ties, ordered as SQLite orders text (code points; UTF-16 would put 😀 before ａ).
      expect(all[0]!.top.map((g) => g.group)).toEqual(['line\nbreak', 'quote " back \\ slash', 'z', 'é']);
      expect(all[0]!.other).toEqual({ groups: 2, pending: 2, running: 0 });
      expect(all[1]).toEqual({ queue: 'q', groups: 1, top: [{ group: 'a', pending: 2, running: 0 }], other: { groups: 0, pending: 0, running: 0 } });
      const [rest] = await store.queuesGroupCounts({ queue: 'odd', limit: 10 });
      expect(rest!.top.map((g) => g.group)).toEqual(['line\nbreak', 'quote " back \\ slash', 'z', 'é', '\uff41', '😀']);
      expect(await store.queuesGroupCounts({ queue: 'plain', limit: 10 })).toEqual([]);
      expect(await store.queuesGroupCounts({ queue: 'none', limit: 10 })).toEqual([]);
    });
  });
}
