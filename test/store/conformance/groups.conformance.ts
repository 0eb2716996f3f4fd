/**
 * Groups and sliding rate limits on every backend: the claim takes turns
 * across groups (least recently served first), holds groupMaxRunning and a
 * group's sliding window, and the queue's sliding window counts starts.
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
  });
}
