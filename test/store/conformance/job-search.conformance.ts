/**
 * The jobs list's `where` filters and a queue's indexed fields: the same
 * answers on every backend, the scan window's promise (a page examines at
 * most `scan` jobs and says where to go on), and the index DDL that libSQL
 * and D1 both have to take inside a batch.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import type { AuditActor } from '../../../src/db/store/port.ts';
import { parseWhereClauses } from '../../../src/core/job-filter.ts';
import type { JobRecord } from '../../../src/core/job-record.ts';
import { T0, useBundle, type StoreBackend } from './support.ts';

const BY: AuditActor = { actor: 'Ada', role: 'admin', credential: 'default', source: 'api', client: '10.0.0.1' };

export function defineJobSearch(backend: StoreBackend) {
  describe('where filters and indexed fields', () => {
    const t = useBundle(backend);

    test('clauses on payload and result, ANDed, both list reads alike', async () => {
      const { store, pendingJob, completedJob } = t();
      const a = await pendingJob({ payload: { customerId: 42, name: 'Acme' } });
      const b = await completedJob({ payload: { customerId: 42, name: 'Bolt' }, result: { total: 12.5 } });
      const c = await pendingJob({ payload: { customerId: '42', name: 'acme' } });
      const ids = async (...where: string[]) => {
        const p = { limit: 10, order: 'asc' as const, where: parseWhereClauses(where) };
        const [full, summaries] = await Promise.all([store.jobsList(p), store.jobSummariesList(p)]);
        expect(summaries.jobs.map((j) => j.id)).toEqual(full.jobs.map((j) => j.id));
        expect(full.next).toBeNull();
        return full.jobs.map((j) => j.id);
      };
      expect(await ids('payload.customerId = 42')).toEqual([a.id, b.id]);
      expect(await ids('payload.customerId = "42"')).toEqual([c.id]);
      expect(await ids('payload.name ^= "A"')).toEqual([a.id]);
      expect(await ids('payload.name > "B"')).toEqual([b.id, c.id]);
      expect(await ids('result.total >= 12.5', 'payload.customerId != "42"')).toEqual([b.id]);
      expect(await ids('result exists')).toEqual([b.id]);
      expect(await ids('payload.missing !exists', 'payload.customerId = 42')).toEqual([a.id, b.id]);
    });

    test('a page examines at most `scan` jobs: short pages with next at the window\'s end, until every match is reached', async () => {
      const { store, pendingJob } = t();
      const jobs: JobRecord[] = [];
      for (let i = 0; i < 12; i++) jobs.push(await pendingJob({ queue: 'q', payload: { hit: i === 1 || i === 9 || i === 10 } }));
      const where = parseWhereClauses(['payload.hit = true']);
      // More matches than the limit in the window: next is the page's last job.
      const first = await store.jobSummariesList({ queue: 'q', where, limit: 1, order: 'desc', scan: 100 });
      expect([first.jobs.map((j) => j.id), first.next]).toEqual([[jobs[10]!.id], jobs[10]!.id]);
      for (const order of ['desc', 'asc'] as const) {
        const pages: { ids: number[]; next: number | null }[] = [];
        let after: number | undefined;
        for (let i = 0; i < 10; i++) {
          const page = await store.jobSummariesList({ queue: 'q', where, limit: 2, order, scan: 4, after });
          pages.push({ ids: page.jobs.map((j) => j.id), next: page.next });
          if (page.next === null) break;
          after = page.next;
        }
        const id = (i: number) => jobs[i]!.id;
        // Windows of 4 ids: a page with more matches than its limit goes on from its last job; a spent window from its own last id.
        expect(pages, order).toEqual(
          order === 'desc'
            ? [{ ids: [id(10), id(9)], next: id(8) }, { ids: [], next: id(4) }, { ids: [id(1)], next: id(0) }, { ids: [], next: null }]
            : [{ ids: [id(1)], next: id(3) }, { ids: [], next: id(7) }, { ids: [id(9), id(10)], next: id(11) }, { ids: [], next: null }],
        );
      }
    });

    test('indexed fields: the index made in the batch, = answered through it, dropped when the field goes; audited', async () => {
      const { store, db, pendingJob } = t();
      const a = await pendingJob({ queue: 'orders', payload: { customerId: 7 } });
      await pendingJob({ queue: 'orders', payload: { customerId: 8 } });
      const b = await pendingJob({ queue: 'orders', payload: { customerId: 7, vip: true } });
      await pendingJob({ queue: 'other', payload: { customerId: 7 } });
      const indexes = async () => (await db.all<{ name: string }>(sql`SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'jobs_field_%'`)).length;
      const audit = { by: BY, action: 'queue.indexed_fields' as const, queue: 'orders', target: 'queue orders', now: T0 };
      await store.queueSetIndexedFields({ queue: 'orders', fields: ['payload.customerId', 'payload.vip'], was: [], now: T0, also: { audit } });
      expect(await store.queueIndexedFields({ queue: 'orders' })).toEqual(['payload.customerId', 'payload.vip']);
      expect(await indexes()).toBe(2);
      const list = (where: string[], scan?: number) => store.jobsList({ queue: 'orders', where: parseWhereClauses(where), limit: 10, order: 'asc', scan });
      // Through the index the window holds matches only: a window of 1 still walks them all, one a page.
      expect((await list(['payload.customerId = 7'], 1)).jobs.map((j) => j.id)).toEqual([a.id]);
      expect((await list(['payload.customerId = 7'])).jobs.map((j) => j.id)).toEqual([a.id, b.id]);
      expect((await list(['payload.vip = true'])).jobs.map((j) => j.id)).toEqual([b.id]);
      expect((await list(['payload.customerId = 7', 'payload.vip = true'])).jobs.map((j) => j.id)).toEqual([b.id]);
      await store.queueSetIndexedFields({ queue: 'orders', fields: ['payload.vip'], was: ['payload.customerId', 'payload.vip'], now: T0 + 1, also: { audit: { ...audit, now: T0 + 1 } } });
      expect(await indexes()).toBe(1);
      expect((await list(['payload.customerId = 7'])).jobs.map((j) => j.id)).toEqual([a.id, b.id]);
      const { entries } = await store.auditList({ action: 'queue.indexed_fields', limit: 10 });
      expect(entries.map((e) => [e.before, e.after])).toEqual([
        ['["payload.customerId","payload.vip"]', '["payload.vip"]'],
        ['[]', '["payload.customerId","payload.vip"]'],
      ]);
    });
  });
}
