/**
 * Key modes on every backend (src/db/store/enqueue-keyed.ts): replace and
 * debounce rewrite the key's unclaimed job in one upsert, whose trigger writes
 * the `replaced` event and its counter; a claimed job leaves that index for
 * good; throttle's two statements in one batch, judged by changes().
 */
import { sql } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import type { NewJob } from '../../../src/db/store/port.ts';
import { DEFAULTS, T0, useBundle, type StoreBackend } from './support.ts';

export function defineKeyModes(backend: StoreBackend) {
  describe('key modes', () => {
    const t = useBundle(backend);
    const enqueue = (now: number, ...jobs: NewJob[]) => t().store.jobsInsert({ queue: 'q', jobs, actor: 'api', now, defaults: DEFAULTS });
    const counter = async (name: string, label: string) =>
      (await t().db.all<{ value: number }>(sql`SELECT value FROM counters WHERE queue_name = 'q' AND name = ${name} AND label = ${label}`))[0]?.value ?? 0;
    const replacedEvents = async (id: number) =>
      t().db.all<{ reason: string; message: string; actor: string }>(sql`SELECT reason, message, actor FROM events WHERE job_id = ${id} AND type = 'replaced' ORDER BY id`);

    test('replace rewrites the unclaimed job, counted, with the old and new run time on its timeline', async () => {
      const [a] = await enqueue(T0, { payload: { v: 1 }, idempotencyKey: 'k', uniqueWhile: 'replace', delayMs: 10_000 });
      expect(a).toMatchObject({ deduplicated: false, replaced: false, job: { key_mode: 'replace', unique_while: 'active', replaced_count: 0, available_at: T0 + 10_000 } });
      const [b] = await enqueue(T0 + 5, { payload: { v: 2 }, idempotencyKey: 'k', uniqueWhile: 'replace', priority: 3 });
      expect(b).toMatchObject({ deduplicated: false, replaced: true, job: { id: a!.job.id, payload: '{"v":2}', priority: 3, available_at: T0 + 5, replaced_count: 1, created_at: T0 } });
      expect(await replacedEvents(a!.job.id)).toEqual([{ reason: 'replace', message: 'run time 2030-01-01T00:00:10.000Z -> 2030-01-01T00:00:00.005Z', actor: 'api' }]);
      expect(await counter('enqueue_replaced', 'replace')).toBe(1);
      expect(await t().count('jobs')).toBe(1);
    });

    test('a claimed job is never rewritten, and going back to pending it does not collide with the new job of its key', async () => {
      const { store } = t();
      const [a] = await enqueue(T0, { payload: 'old', idempotencyKey: 'k', uniqueWhile: 'debounce', keyWindowMs: 1 });
      const [c] = await store.jobsClaimPending({ queue: 'q', workerId: 'w', limit: 1, now: T0 + 1, defaults: DEFAULTS });
      expect(c!.id).toBe(a!.job.id);
      const [b] = await enqueue(T0 + 2, { payload: 'new', idempotencyKey: 'k', uniqueWhile: 'debounce', keyWindowMs: 1000 });
      expect(b).toMatchObject({ replaced: false, job: { status: 'pending', available_at: T0 + 1002 } });
      expect(b!.job.id).not.toBe(a!.job.id);
      const [released] = await store.jobsReleaseIfOwned({ workerId: 'w', leases: [{ id: c!.id, lockToken: c!.lock_token! }], reason: 'shutdown', now: T0 + 3 });
      expect(released!.ok).toBe(true);
      const [again] = await enqueue(T0 + 4, { payload: 'newer', idempotencyKey: 'k', uniqueWhile: 'debounce', keyWindowMs: 1000 });
      expect(again).toMatchObject({ replaced: true, job: { id: b!.job.id, payload: '"newer"', available_at: T0 + 1004 } });
      const rows = await t().db.all<{ id: number; status: string; payload: string; replaced_count: number }>(sql`SELECT id, status, payload, replaced_count FROM jobs ORDER BY id`);
      expect(rows).toEqual([
        { id: a!.job.id, status: 'pending', payload: '"old"', replaced_count: 0 },
        { id: b!.job.id, status: 'pending', payload: '"newer"', replaced_count: 1 },
      ]);
      expect(await counter('enqueue_replaced', 'debounce')).toBe(1);
    });

    test('throttle: one job per window from the last one made; a bulk with the key twice makes one', async () => {
      const job = (payload: number): NewJob => ({ payload, idempotencyKey: 't', uniqueWhile: 'throttle', keyWindowMs: 1000 });
      const first = await enqueue(T0, job(1), job(2), { payload: 0 });
      expect(first.map((e) => [e.deduplicated, e.job.payload])).toEqual([[false, '1'], [true, '1'], [false, '0']]);
      expect(first[1]!.job.id).toBe(first[0]!.job.id);
      const [within] = await enqueue(T0 + 999, job(3));
      expect(within).toMatchObject({ deduplicated: true, job: { id: first[0]!.job.id, dedup_count: 2 } });
      const [after] = await enqueue(T0 + 1000, job(4));
      expect(after).toMatchObject({ deduplicated: false, job: { key_mode: 'throttle', payload: '4' } });
      expect(await counter('enqueue_deduplicated', '')).toBe(2);
      expect(await t().count('jobs')).toBe(3);
    });

    test('a new queue past the cap: a key-mode enqueue stores nothing', async () => {
      const { store } = t();
      await store.jobsInsert({ queue: 'a', jobs: [{ payload: 1 }], actor: null, now: T0, defaults: DEFAULTS, maxQueues: 1 });
      for (const uniqueWhile of ['replace', 'throttle'] as const) {
        await expect(store.jobsInsert({ queue: 'b', jobs: [{ payload: 1, idempotencyKey: 'k', uniqueWhile, keyWindowMs: 10 }], actor: null, now: T0, defaults: DEFAULTS, maxQueues: 1 })).rejects.toMatchObject({ code: 'conflict' });
      }
      expect(await t().count('jobs')).toBe(1);
    });
  });
}
