/**
 * A queue's indexed fields: the payload or result paths its operators
 * filter the jobs list by every day (GET /jobs?queue=..&where=payload.x = ..).
 * Each gets a partial index of its own (src/db/store/indexed-fields.ts);
 * the set is small, replaced whole, and audited like the queue's settings.
 */
import { invalid } from '../core/errors.ts';
import { MAX_INDEXED_FIELDS, parseWherePath, wherePathText } from '../core/job-filter.ts';
import { apiActor } from './audit-actor.ts';
import { parseQueue } from './http.ts';
import { queueView } from './queue-view.ts';
import type { AppDeps } from './deps.ts';
import type { Routes } from './router.ts';
import { arr, obj, str } from '../core/validate.ts';

const fieldsBody = obj({
  fields: arr(str({ min: 1, max: 200, description: 'a path as where names it: payload.customerId, result.total, payload.items[0].sku' }), { min: 0, max: MAX_INDEXED_FIELDS }),
});

export function indexedFieldRoutes(r: Routes, deps: AppDeps) {
  const { store, config, clock } = deps;
  r.add(
    {
      method: 'put',
      path: '/queues/:queue/indexed-fields',
      role: 'admin',
      operationId: 'setQueueIndexedFields',
      tag: 'queues',
      answers: { schema: 'queue' },
      summary: `Set the queue's indexed fields (at most ${MAX_INDEXED_FIELDS}, [] for none): each payload or result path gets an index of this queue's jobs, so an = on it in GET /jobs?queue=...&where=... reads only the matching jobs. A new field's index is built from the queue's jobs in this call (about a second per million jobs, holding the write lock); a field left out loses its index`,
      body: fieldsBody,
    },
    async (c, body) => {
      const name = parseQueue(c.req.param('queue'));
      // The path as where writes it, so the same field is never indexed twice under two spellings.
      const fields: string[] = [];
      for (const [i, text] of body.fields.entries()) {
        const path = parseWherePath(text);
        if (typeof path === 'string') throw invalid(`fields[${i}]`, `fields[${i}]: ${path}`);
        const canonical = wherePathText(path.root, path.jsonPath);
        if (!fields.includes(canonical)) fields.push(canonical);
      }
      const was = await store.queueIndexedFields({ queue: name });
      const audit = { by: apiActor(c, config), action: 'queue.indexed_fields' as const, queue: name, target: `queue ${name}`, now: clock.now() };
      await store.queueSetIndexedFields({ queue: name, fields, was, now: clock.now(), also: { audit } });
      const [queue] = await store.queuesHealth({ now: clock.now(), defaults: config, queue: name });
      return c.json({ queue: queueView(queue!) });
    },
  );
}
