/**
 * /dashboard/jobs/:id/raw/:field: one stored value of a job whole, as JSON
 * (the job page shows each within its budget, src/dashboard/json-field.tsx,
 * and links here). Behind the dashboard's login like every page, readable by
 * a read-only login too. `?inline` asks the browser to show it rather than
 * save it; either way it is `application/json` (never HTML), `nosniff`, and
 * under the dashboard's CSP, so a value cannot run as a page.
 *
 * The last error is answered as a JSON string; the events as the API's
 * `GET /api/v1/jobs/:id` lists them (the newest 1,000).
 */
import type { Hono } from 'hono';
import type { AppDeps } from '../api/deps.ts';
import { errorBody } from '../api/http.ts';
import { eventsWire } from '../api/outcomes.ts';
import { LeaseholdError } from '../core/errors.ts';
import { RAW_FIELDS, type RawField } from './json-field.tsx';
import type { DashboardEnv } from './page.tsx';

export function registerJobRawRoutes(app: Hono<DashboardEnv>, deps: AppDeps) {
  const { store } = deps;
  app.get(`/dashboard/jobs/:id{[0-9]{1,15}}/raw/:field{${RAW_FIELDS.join('|')}}`, async (c) => {
    const id = Number(c.req.param('id'));
    const field = c.req.param('field') as RawField;
    const job = await store.jobGet({ id });
    if (!job) return c.json(errorBody(new LeaseholdError('not_found', `no job has id ${id}`, 'id')), 404);
    let body: string | null;
    if (field === 'events') {
      const { events, olderNotShown } = await store.eventsForJob({ jobId: id, limit: 1000 });
      body = JSON.stringify({
        olderEventsNotShown: olderNotShown,
        events: eventsWire(events),
      });
    } else if (field === 'error') {
      body = job.last_error === null ? null : JSON.stringify(job.last_error);
    } else {
      body = job[field];
    }
    if (body === null) return c.json(errorBody(new LeaseholdError('not_found', `job ${id} has no ${field}`, 'field')), 404);
    const disposition = c.req.query('inline') !== undefined ? 'inline' : 'attachment';
    return c.body(body, 200, { 'content-type': 'application/json; charset=utf-8', 'content-disposition': `${disposition}; filename="job-${id}-${field}.json"` });
  });
}
