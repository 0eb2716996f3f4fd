/**
 * GET /api/v1/audit: who changed what, newest first (src/db/store/audit.ts).
 * Readable with the admin or the read-only token: reviewing an incident
 * afterwards needs no power to act. Paged by id: pass `next` as `before`.
 */
import { AUDIT_ACTIONS, type AuditAction } from '../core/audit-actions.ts';
import { toAuditEntry } from './audit-view.ts';
import { queueName } from './http.ts';
import type { AppDeps } from './deps.ts';
import type { Routes } from './router.ts';
import { obj, optional, str, type Infer } from './validate.ts';

export const AUDIT_PAGE_MAX = 500;

const auditQuery = obj({
  actor: optional(str({ min: 1, max: 200, description: 'only entries by this operator or token name' })),
  action: optional(str({ min: 1, max: 40, pattern: new RegExp(`^(${AUDIT_ACTIONS.join('|').replace(/\./g, '\\.')})$`), patternHelp: `must be one of ${AUDIT_ACTIONS.join(', ')}` })),
  queue: optional(queueName),
  before: optional(str({ min: 1, max: 15, pattern: /^[0-9]{1,15}$/, patternHelp: 'must be an entry id (the next value of the previous page)' })),
  limit: optional(str({ min: 1, max: 3, pattern: /^(?:[1-9][0-9]?|[1-4][0-9]{2}|500)$/, patternHelp: `must be a whole number from 1 to ${AUDIT_PAGE_MAX}` })),
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
        action: q.action as AuditAction | undefined,
        queue: q.queue,
        before: q.before === undefined ? undefined : Number(q.before),
        limit: q.limit === undefined ? 50 : Number(q.limit),
      });
      return c.json({ entries: page.entries.map(toAuditEntry), next: page.next === null ? null : String(page.next) });
    },
  );
}
