/**
 * A claim's byte budget, counted inside the claim statement: jobs in claim
 * order while their payloads and checkpoints fit, always at least one, and
 * every job left out still pending and untouched (no token, no attempt, not
 * counted by a rate limit). Sizes are UTF-8 bytes as stored, not characters.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { DEFAULTS, T0, useBundle, type StoreBackend } from './support.ts';

/** A JSON string payload of exactly `bytes` bytes as stored (its two quotes included). */
const payloadOf = (bytes: number, char = 'x') => char.repeat((bytes - 2) / new TextEncoder().encode(char).length);

export function defineClaimBudget(backend: StoreBackend) {
  describe('claim byte budget', () => {
    const t = useBundle(backend);
    const claim = (limit: number, maxBytes: number, workerId = 'w1', queue = 'q') =>
      t().store.jobsClaimPending({ queue, workerId, limit, maxBytes, now: t().clock.now(), defaults: DEFAULTS });
    const pending = async () => (await t().db.all<{ id: number; attempt_count: number; lock_token: string | null }>(sql`SELECT id, attempt_count, lock_token FROM jobs WHERE status = 'pending' ORDER BY id`));

    test('a claim stops where the payloads reach the budget, in claim order; the rest stay pending and untouched', async () => {
      const { pendingJob } = t();
      // Claim order is priority first, then due time, then id: not insertion order.
      const late = await pendingJob({ payload: payloadOf(3_000), availableAt: T0 - 1_000 });
      const urgent = await pendingJob({ payload: payloadOf(3_000), priority: 5 });
      const early = await pendingJob({ payload: payloadOf(3_000), availableAt: T0 - 5_000 });
      const rest = [await pendingJob({ payload: payloadOf(3_000) }), await pendingJob({ payload: payloadOf(3_000) })];

      // 3 x 3,000 fit in 9,999; a fourth would not.
      expect((await claim(10, 9_999)).map((j) => j.id)).toEqual([urgent.id, early.id, late.id]);
      expect(await pending()).toEqual(rest.map((j) => ({ id: j.id, attempt_count: 0, lock_token: null })));
      // Exactly at the budget still fits: 2 x 3,000 = 6,000.
      expect((await claim(10, 6_000, 'w2')).map((j) => j.id)).toEqual(rest.map((j) => j.id));
    });

    test('sizes are bytes as stored, not characters', async () => {
      const { pendingJob } = t();
      // 'é' is two bytes in UTF-8: each payload is 3,000 bytes but 1,501 characters.
      for (let i = 0; i < 4; i++) await pendingJob({ payload: payloadOf(3_000, 'é') });
      expect(await claim(10, 6_500)).toHaveLength(2);
    });

    test('a job larger than the budget is claimed alone, in its turn: never skipped, never passed over', async () => {
      const { pendingJob } = t();
      const small = await pendingJob({ payload: payloadOf(1_000) });
      const big = await pendingJob({ payload: payloadOf(20_000) });
      const after = await pendingJob({ payload: payloadOf(1_000) });
      // The big one does not fit after the small one, and the claim does not
      // jump over it to take the next small one.
      expect((await claim(10, 10_000)).map((j) => j.id)).toEqual([small.id]);
      expect((await claim(10, 10_000)).map((j) => j.id)).toEqual([big.id]);
      expect((await claim(10, 10_000)).map((j) => j.id)).toEqual([after.id]);
    });

    test("checkpoints count: a released job's checkpoint takes its share of the budget", async () => {
      const { store, pendingJob, runningJob, row } = t();
      const resumed = await runningJob({ payload: payloadOf(1_000), checkpoint: payloadOf(6_000) });
      const [released] = await store.jobsReleaseIfOwned({ workerId: 'w1', leases: [{ id: resumed.id, lockToken: resumed.lock_token }], reason: 'shutdown', now: T0 });
      expect(released!.ok).toBe(true);
      expect((await row(resumed.id)).checkpoint).toBe(JSON.stringify(payloadOf(6_000)));
      const next = await pendingJob({ payload: payloadOf(1_000) });
      // 1,000 + 6,000 + 1,000 = 8,000: over 7,999, within 8,000.
      expect((await claim(10, 7_999)).map((j) => j.id)).toEqual([resumed.id]);
      expect((await claim(10, 7_999)).map((j) => j.id)).toEqual([next.id]);
    });

    test('a rate limit counts only the jobs the budget let through; max_running still caps the count', async () => {
      const { store, pendingJob } = t();
      for (let i = 0; i < 6; i++) await pendingJob({ queue: 'rated', payload: payloadOf(3_000) });
      await store.queueUpsertSettings({ queue: 'rated', patch: { rateLimit: { max: 4, windowMs: 60_000 } }, now: T0 });
      expect(await claim(10, 6_000, 'w1', 'rated')).toHaveLength(2);
      // 2 of the window's 4 claims spent, not 6: the third claim's LIMIT was 4, the budget took 2.
      expect(await claim(10, 1_000_000, 'w2', 'rated')).toHaveLength(2);
      expect(await claim(10, 1_000_000, 'w3', 'rated')).toHaveLength(0);

      for (let i = 0; i < 6; i++) await pendingJob({ queue: 'capped', payload: payloadOf(3_000) });
      await store.queueUpsertSettings({ queue: 'capped', patch: { maxRunning: 3 }, now: T0 });
      expect(await claim(10, 6_000, 'w1', 'capped')).toHaveLength(2);
      expect(await claim(10, 1_000_000, 'w2', 'capped')).toHaveLength(1);
      expect(await claim(10, 1_000_000, 'w3', 'capped')).toHaveLength(0);
    });

    test('the claim that rides on a completion keeps to the budget too', async () => {
      const { store, runningJob, pendingJob } = t();
      const done = await runningJob();
      const next = [await pendingJob({ payload: payloadOf(4_000) }), await pendingJob({ payload: payloadOf(4_000) }), await pendingJob({ payload: payloadOf(4_000) })];
      const { outcomes, claimed } = await store.jobsCompleteThenClaim({
        workerId: 'w1',
        results: [{ id: done.id, lockToken: done.lock_token }],
        claim: { queue: 'q', limit: 10, maxBytes: 9_000 },
        now: T0 + 1_000,
        defaults: DEFAULTS,
      });
      expect(outcomes).toMatchObject([{ id: done.id, ok: true }]);
      expect(claimed.map((c) => c.id)).toEqual(next.slice(0, 2).map((j) => j.id));
      expect((await pending()).map((j) => j.id)).toEqual([next[2]!.id]);
    });
  });
}
