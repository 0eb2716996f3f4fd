/**
 * The jobs list's filter (queue, status, id, idempotency key, where clauses
 * on payload and result, order, page):
 * read from a query, and written back as one for links (the pager, the bulk
 * actions' dry run and its way back).
 */
import type { Context } from 'hono';
import { JOB_STATUSES, type JobStatus } from '../core/wire.ts';
import { LeaseholdError } from '../core/errors.ts';
import { parseWhereClauses, type WhereClause } from '../core/job-filter.ts';

/** The job statuses a filter may name (the schema's list). */
export const STATUSES = JOB_STATUSES;

/** Narrows a query or form value to a job status. */
export const isJobStatus = (v: unknown): v is JobStatus => typeof v === 'string' && (JOB_STATUSES as readonly string[]).includes(v);

export interface JobsFilter {
  queue?: string | undefined;
  status?: string | undefined;
  id?: number | undefined;
  key?: string | undefined;
  /** `where` clauses as typed (one per line in the form, one `where` each in a link), and as parsed. */
  where?: string[] | undefined;
  clauses?: WhereClause[] | undefined;
  /** 'asc': oldest first; newest first otherwise. */
  order?: 'asc' | undefined;
  after?: number | undefined;
}

export function jobsQuery(f: JobsFilter): string {
  const p = new URLSearchParams();
  if (f.queue) p.set('queue', f.queue);
  if (f.status) p.set('status', f.status);
  if (f.id !== undefined) p.set('id', String(f.id));
  if (f.key) p.set('key', f.key);
  for (const clause of f.where ?? []) p.append('where', clause);
  if (f.order) p.set('order', f.order);
  if (f.after !== undefined) p.set('after', String(f.after));
  const s = p.toString();
  return s ? `?${s}` : '';
}

/** The filter of /dashboard/jobs from its query, or what is wrong with it (a 400's message). */
export function parseJobsFilter(c: Context): JobsFilter | string {
  const queue = c.req.query('queue') || undefined;
  const status = c.req.query('status') || undefined;
  const idText = c.req.query('id')?.trim() || undefined;
  const key = c.req.query('key') || undefined;
  const order = c.req.query('order') || undefined;
  const afterText = c.req.query('after') || undefined;
  if (queue !== undefined && queue.length > 200) return 'queue: at most 200 characters';
  if (status !== undefined && !isJobStatus(status)) return `status: one of ${STATUSES.join(', ')}`;
  if (idText !== undefined && !/^[0-9]{1,15}$/.test(idText)) return 'id: a job id (digits only)';
  if (key !== undefined && key.length > 255) return 'key: at most 255 characters';
  if (order !== undefined && order !== 'asc') return 'order: asc (oldest first), or leave it out for newest first';
  if (afterText !== undefined && !/^[0-9]{1,15}$/.test(afterText)) return 'after: a job id';
  // A JSON string holds no raw line break, so a line break always ends a clause.
  const where = (c.req.queries('where') ?? []).flatMap((text) => text.split(/\r?\n/)).map((line) => line.trim()).filter((line) => line !== '');
  let clauses: WhereClause[] | undefined;
  try {
    clauses = where.length > 0 ? parseWhereClauses(where) : undefined;
  } catch (err) {
    if (err instanceof LeaseholdError) return err.message;
    throw err;
  }
  return {
    queue,
    status,
    id: idText === undefined ? undefined : Number(idText),
    key,
    ...(clauses ? { where, clauses } : {}),
    order,
    after: afterText === undefined ? undefined : Number(afterText),
  };
}
