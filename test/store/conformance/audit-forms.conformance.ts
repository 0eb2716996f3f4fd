/**
 * The operator audit and one-time form tokens through the port: entries
 * written alone or with the change they describe (a job action's entry gets
 * the job's queue and new status from the store), listed newest first and
 * pruned past retention; a form token claimed in its action's batch, so a
 * second use fails the whole batch, changes nothing, and is recognised.
 */
import { describe, expect, test } from 'vitest';
import { DEFAULTS, T0, useBundle, type StoreBackend } from './support.ts';
import type { AuditActor } from '../../../src/db/store/port.ts';

const BY: AuditActor = { actor: 'Ada', role: 'admin', credential: 'default', source: 'dashboard', client: '10.0.0.1' };

export function defineAuditAndForms(backend: StoreBackend) {
  describe('audit and one-time forms', () => {
    const t = useBundle(backend);

    test('entries alone and with a job action, newest first, filtered, paged; pruned past retention', async () => {
      const { store, pendingJob } = t();
      await store.auditInsert({ by: BY, action: 'login', target: 'dashboard', now: T0 });
      const job = await pendingJob({ queue: 'mail' });
      const audit = { by: BY, action: 'job.cancel' as const, jobId: job.id, target: `job ${job.id}`, reason: 'dup', now: T0 + 1 };
      expect(await store.jobCancelIfPending({ id: job.id, actor: 'Ada', reason: 'dup', now: T0 + 1, also: { audit } })).toMatchObject({ ok: true });
      // A refused action writes no entry.
      expect(await store.jobCancelIfPending({ id: job.id, actor: 'Ada', reason: 'dup', now: T0 + 2, also: { audit } })).toMatchObject({ ok: false, reason: 'conflict' });

      const all = await store.auditList({ limit: 10 });
      expect(all.next).toBeNull();
      expect(all.entries.map((e) => [e.action, e.at, e.queue_name, e.job_id, e.after, e.actor, e.client])).toEqual([
        ['job.cancel', T0 + 1, 'mail', job.id, JSON.stringify({ status: 'cancelled' }), 'Ada', '10.0.0.1'],
        ['login', T0, null, null, null, 'Ada', '10.0.0.1'],
      ]);
      expect((await store.auditList({ action: 'login', limit: 10 })).entries).toHaveLength(1);
      const page = await store.auditList({ limit: 1 });
      expect(page.next).toBe(all.entries[0]!.id);
      expect((await store.auditList({ before: page.next!, limit: 1 })).entries.map((e) => e.action)).toEqual(['login']);

      await store.retentionPrune({ now: T0 + 60_000, limit: 100, defaults: DEFAULTS, forgetWorkersAfterMs: 3_600_000, auditRetentionMs: 59_999 });
      expect((await store.auditList({ limit: 10 })).entries.map((e) => e.action)).toEqual(['job.cancel']);
    });

    test('list filters combine: actor, action, queue and the page cursor each narrow the same newest-first list', async () => {
      const { store } = t();
      const other: AuditActor = { ...BY, actor: 'Bob', client: null };
      await store.auditInsert({ by: BY, action: 'queue.pause', queue: 'mail', target: 'queue mail', now: T0 });
      await store.auditInsert({ by: other, action: 'queue.pause', queue: 'mail', target: 'queue mail', now: T0 + 1 });
      await store.auditInsert({ by: BY, action: 'queue.resume', queue: 'mail', target: 'queue mail', now: T0 + 2 });
      await store.auditInsert({ by: BY, action: 'queue.pause', queue: 'sms', target: 'queue sms', before: '{"paused":false}', reason: 'night', now: T0 + 3 });
      const list = async (f: Omit<Parameters<typeof store.auditList>[0], 'limit'>, limit = 10) =>
        (await store.auditList({ ...f, limit })).entries.map((e) => [e.actor, e.action, e.queue_name, e.at]);
      expect(await list({ actor: 'Ada', action: 'queue.pause' })).toEqual([['Ada', 'queue.pause', 'sms', T0 + 3], ['Ada', 'queue.pause', 'mail', T0]]);
      expect(await list({ actor: 'Ada', action: 'queue.pause', queue: 'mail' })).toEqual([['Ada', 'queue.pause', 'mail', T0]]);
      expect(await list({ action: 'queue.pause', queue: 'mail' })).toEqual([['Bob', 'queue.pause', 'mail', T0 + 1], ['Ada', 'queue.pause', 'mail', T0]]);
      const first = await store.auditList({ queue: 'mail', limit: 1 });
      expect(first.entries.map((e) => e.action)).toEqual(['queue.resume']);
      expect(await list({ queue: 'mail', actor: 'Ada', before: first.next! })).toEqual([['Ada', 'queue.pause', 'mail', T0]]);
      expect(await list({ actor: 'Nobody' })).toEqual([]);
      // Every column as written, under its SQL name.
      expect((await store.auditList({ queue: 'sms', limit: 1 })).entries[0]).toEqual({
        id: expect.any(Number), at: T0 + 3, actor: 'Ada', role: 'admin', credential: 'default', source: 'dashboard', action: 'queue.pause',
        queue_name: 'sms', job_id: null, target: 'queue sms', before: '{"paused":false}', after: null, reason: 'night', client: '10.0.0.1',
      });
    });

    test('failed logins: one entry per client per window, counting attempts; a new window or client opens another', async () => {
      const { store } = t();
      const by = (client: string | null): AuditActor => ({ actor: 'Mallory', role: 'none', credential: null, source: 'dashboard', client });
      for (let i = 0; i < 3; i++) await store.auditLoginFailed({ by: by('10.0.0.9'), reason: 'bad token', windowMs: 60_000, now: T0 + i });
      await store.auditLoginFailed({ by: by(null), reason: 'bad token', windowMs: 60_000, now: T0 + 3 });
      await store.auditLoginFailed({ by: by(null), reason: 'bad token', windowMs: 60_000, now: T0 + 4 });
      // Other entries in between do not split the count.
      await store.auditInsert({ by: BY, action: 'login', target: 'dashboard', now: T0 + 5 });
      await store.auditLoginFailed({ by: by('10.0.0.9'), reason: 'bad token', windowMs: 60_000, now: T0 + 59_999 });
      await store.auditLoginFailed({ by: by('10.0.0.9'), reason: 'bad token', windowMs: 60_000, now: T0 + 60_000 });
      const { entries } = await store.auditList({ action: 'login_failed', limit: 10 });
      expect(entries.map((e) => [e.at, e.client, JSON.parse(e.after!), e.reason, e.target])).toEqual([
        [T0 + 60_000, '10.0.0.9', { attempts: 1, lastAt: new Date(T0 + 60_000).toISOString() }, 'bad token', 'dashboard'],
        [T0 + 3, null, { attempts: 2, lastAt: new Date(T0 + 4).toISOString() }, 'bad token', 'dashboard'],
        [T0, '10.0.0.9', { attempts: 4, lastAt: new Date(T0 + 59_999).toISOString() }, 'bad token', 'dashboard'],
      ]);
    });

    test('a form token is claimed by its action: a second use changes nothing and is recognised', async () => {
      const { store } = t();
      const formNonce = { nonce: 'n-1', expiresAt: T0 + 3_600_000 };
      const audit = { by: BY, action: 'queue.pause' as const, queue: 'mail', target: 'queue mail', now: T0 };
      expect(await store.formNonceUsed({ nonce: 'n-1' })).toBe(false);
      await store.queueUpsertSettings({ queue: 'mail', patch: { paused: true }, now: T0, also: { formNonce, audit } });
      expect(await store.formNonceUsed({ nonce: 'n-1' })).toBe(true);

      const again = store.queueUpsertSettings({ queue: 'mail', patch: { paused: false }, now: T0 + 1, also: { formNonce, audit: { ...audit, action: 'queue.resume' } } });
      const error = await again.then(() => undefined, (err: unknown) => err);
      expect(error).toBeDefined();
      expect(store.isFormNonceReplay({ error })).toBe(true);
      expect(store.isFormNonceReplay({ error: new Error('UNIQUE constraint failed: jobs.id') })).toBe(false);
      const [mail] = await store.queuesHealth({ now: T0 + 2, defaults: DEFAULTS, queue: 'mail' });
      expect(mail!.paused).toBe(true);
      expect((await store.auditList({ limit: 10 })).entries.map((e) => e.action)).toEqual(['queue.pause']);

      // Used tokens go once their session would have expired.
      await store.retentionPrune({ now: formNonce.expiresAt + 1, limit: 100, defaults: DEFAULTS, forgetWorkersAfterMs: 3_600_000, auditRetentionMs: 3_600_000 * 24 });
      expect(await store.formNonceUsed({ nonce: 'n-1' })).toBe(false);
    });
  });
}
