/**
 * GET /api/v1/audit: who changed what, newest first (src/db/store/audit.ts).
 * Readable with the admin or the read-only token: reviewing an incident
 * afterwards needs no power to act. Paged by id: pass `next` as `before`.
 */
import { AUDIT_ACTIONS } from '../core/audit-actions.ts';
import { toAuditEntry } from './audit-view.ts';
import { queueName } from './http.ts';
import type { AppDeps } from './deps.ts';
import type { Routes } from './router.ts';
import { obj, optional, queryInt, str, word, type Infer } from '../core/validate.ts';

export const AUDIT_PAGE_MAX = 500;

const auditQuery = obj({
  actor: optional(str({ min: 1, max: 200, description: 'only entries by this operator or token name' })),
  action: optional(word(AUDIT_ACTIONS)),
  queue: optional(queueName),
  before: optional(str({ min: 1, max: 15, pattern: /^[0-9]{1,15}$/, patternHelp: 'must be an entry id (the next value of the previous page)' })),
  limit: optional(queryInt({ min: 1, max: AUDIT_PAGE_MAX, description: 'entries per page; default 50' })),
});

export function auditRoutes(r: Routes, deps: AppDeps) {
  const { store } = deps;
  r.add<undefined, Infer<typeof auditQuery>>(
    {
      method: 'get',
      path: '/audit',
      role: 'reader',
      operationId: 'listAudit',
      tag: 'observability',
      answers: { schema: 'auditPage' },
      summary:
        'Who changed what, newest first: queue settings, pause and resume, alert thresholds, bulk actions, job retry/cancel/requeue, logins and logouts; filtered by actor, action or queue; pass next as before for the next page',
      query: auditQuery,
    },
    async (c, _body, q) => {
      const page = await store.auditList({
        actor: q.actor,
        action: q.action,
        queue: q.queue,
        before: q.before === undefined ? undefined : Number(q.before),
        limit: q.limit ?? 50,
      });
      return c.json({ entries: page.entries.map(toAuditEntry), next: page.next === null ? null : String(page.next) });
    },
  );
}
