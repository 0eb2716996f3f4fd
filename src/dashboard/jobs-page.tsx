/**
 * /dashboard/jobs: the jobs list, filtered (jobs-filter.ts), newest first or
 * oldest, a page at a time, polled (/dashboard/live/jobs). A running job the
 * zombies page lists is marked with what is wrong and what the reaper will
 * do; an admin gets a way into the bulk actions for the filter's status.
 */
import type { Hono } from 'hono';
import type { AppDeps } from '../api/deps.ts';
import type { JobRecord } from '../core/job-record.ts';
import { hasToken } from '../core/tokens.ts';
import type { JobStatus } from '../core/wire.ts';
import { ErrorPage } from './error-page.tsx';
import { fmtRelative } from './format.ts';
import { jobFlag, type JobFlag } from './job-health.ts';
import { jobsQuery, parseJobsFilter, STATUSES, type JobsFilter } from './jobs-filter.ts';
import { MAX_WHERE_CHARS, MAX_WHERE_CLAUSES, WHERE_SCAN_WINDOW } from '../core/job-filter.ts';
import { Live } from './live-region.tsx';
import { htmlDocument, layoutPage, type DashboardEnv } from './page.tsx';
import type { PageReads } from './page-reads.ts';

const PAGE_SIZE = 50;

export function registerJobsPage(app: Hono<DashboardEnv>, deps: AppDeps, reads: PageReads) {
  const { store, config } = deps;
  const { now, suspects } = reads;
  const jobs = async (f: JobsFilter) => {
    const t = await now();
    const { jobs: list, next } = await store.jobsList({
      queue: f.queue,
      status: f.status as JobStatus | undefined,
      id: f.id,
      idempotencyKey: f.key,
      where: f.clauses,
      after: f.after,
      limit: PAGE_SIZE,
      order: f.order ?? 'desc',
    });
    // Running jobs the zombies page lists are marked, with what the reaper will do.
    const running = list.filter((j) => j.status === 'running').map((j) => j.id);
    const flags = new Map<number, JobFlag>();
    for (const v of await store.jobsRunningFlagged({ ids: running, now: t, defaults: config, suspects: running.length > 0 ? await suspects() : undefined })) {
      const flag = jobFlag(v, t, config);
      if (flag) flags.set(v.id, flag);
    }
    return <JobsFragment jobs={list} next={next} filter={f} now={t} flags={flags} />;
  };
  app.get('/dashboard/jobs', async (c) => {
    const f = parseJobsFilter(c);
    if (typeof f === 'string') return htmlDocument(c, <ErrorPage title="Bad filter" message={f} />, 400);
    return layoutPage(
      c,
      { title: 'Jobs', nav: 'jobs', loggedIn: hasToken(config, 'admin') },
      <>
        <JobsFilterForm filter={f} canAct={c.get('session').role === 'admin'} />
        <Live src={`/dashboard/live/jobs${jobsQuery(f)}`}>{await jobs(f)}</Live>
      </>,
    );
  });
  app.get('/dashboard/live/jobs', async (c) => {
    const f = parseJobsFilter(c);
    if (typeof f === 'string') return c.html(<p class="notice error">{f}</p>, 400);
    return c.html(await jobs(f));
  });
}

/** `canAct` false (a read-only login): no way into the bulk actions it could not run. */
function JobsFilterForm(props: { filter: JobsFilter; canAct: boolean }) {
  return (
    <>
      <form method="get" action="/dashboard/jobs" class="filters">
        <label>
          Queue <input type="text" name="queue" value={props.filter.queue ?? ''} maxlength={200} />
        </label>
        <label>
          Status{' '}
          <select name="status">
            <option value="">any</option>
            {STATUSES.map((s) => (
              <option value={s} selected={props.filter.status === s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Id <input type="text" name="id" value={props.filter.id === undefined ? '' : String(props.filter.id)} inputmode="numeric" pattern="[0-9]{1,15}" size={8} />
        </label>
        <label>
          Idempotency key <input type="text" name="key" value={props.filter.key ?? ''} maxlength={255} />
        </label>
        <label class="where">
          Payload or result{' '}
          <textarea name="where" rows={Math.min(MAX_WHERE_CLAUSES, Math.max(1, props.filter.where?.length ?? 1))} cols={36} maxlength={MAX_WHERE_CLAUSES * (MAX_WHERE_CHARS + 1)} placeholder={'payload.customerId = 42'} title={WHERE_HELP}>
            {(props.filter.where ?? []).join('\n')}
          </textarea>
        </label>
        <label>
          Sort{' '}
          <select name="order">
            <option value="">newest first</option>
            <option value="asc" selected={props.filter.order === 'asc'}>
              oldest first
            </option>
          </select>
        </label>
        <button type="submit">Filter</button>
      </form>
      <p class="hint">{WHERE_HELP}</p>
      {/* Bulk actions act on a queue and status; with an id, key or where filter the list would not be what they act on. */}
      {props.canAct && props.filter.id === undefined && !props.filter.key && !props.filter.where ? <BulkEntry filter={props.filter} /> : null}
    </>
  );
}

const WHERE_HELP = `Payload or result, one clause per line, all must hold (at most ${MAX_WHERE_CLAUSES}): path op value, e.g. payload.customerId = 42, payload.name ^= "Acme", result.total >= 10, payload.email exists. Ops = != < <= > >= ^= (prefix) exists !exists; values are JSON (42, "text", true, null). A page reads at most ${WHERE_SCAN_WINDOW.toLocaleString('en-US')} jobs, so it may be short: follow Next page.`;

const BULK_ENTRY: Record<string, string> = {
  failed: 'Retry failed jobs',
  cancelled: 'Retry cancelled jobs',
  pending: 'Cancel pending jobs',
  running: 'Requeue running jobs whose lease expired',
};

/** Under the filter, for a status a bulk action takes: a GET to its dry run (src/dashboard/bulk.tsx; admin only). */
function BulkEntry(props: { filter: JobsFilter }) {
  const label = props.filter.status ? BULK_ENTRY[props.filter.status] : undefined;
  if (!label) return null;
  return (
    <form method="get" action="/dashboard/bulk" class="filters bulk">
      {props.filter.queue ? <input type="hidden" name="queue" value={props.filter.queue} /> : null}
      <input type="hidden" name="status" value={props.filter.status} />
      <button type="submit">
        {label} in {props.filter.queue ? `queue ${props.filter.queue}` : 'every queue'}… (dry run first)
      </button>
    </form>
  );
}

/** `flags`: running jobs the zombies page lists, by id (src/dashboard/job-health.ts). */
function JobsFragment(props: { jobs: JobRecord[]; next: number | null; filter: JobsFilter; now: number; flags?: Map<number, JobFlag> }) {
  return (
    <>
      {props.jobs.length === 0 ? (
        <p class="empty">{props.next === null ? 'No jobs match.' : `No jobs match among the ${WHERE_SCAN_WINDOW.toLocaleString('en-US')} this page read: later ones may, on the next page.`}</p>
      ) : (
        <div class="table-scroll">
        <table class="jobs">
          <thead>
            <tr>
              <th>Id</th>
              <th>Queue</th>
              <th>Status</th>
              <th>Attempt</th>
              <th>Owner</th>
              <th>Created</th>
              <th>Updated</th>
            </tr>
          </thead>
          <tbody>
            {props.jobs.map((j) => (
              <tr>
                <td>
                  <a href={`/dashboard/jobs/${j.id}`}>{j.id}</a>
                </td>
                <td>{j.queue_name}</td>
                <JobStatusCell job={j} flag={props.flags?.get(j.id)} />
                <td>
                  {j.attempt_count}/{j.max_attempts}
                </td>
                <td>{j.locked_by ?? '—'}</td>
                <td>{fmtRelative(j.created_at, props.now)}</td>
                <td>{fmtRelative(j.updated_at, props.now)}</td>
              </tr>
            ))}
          </tbody>
        </table>
        </div>
      )}
      <p class="pager">
        {props.filter.after !== undefined ? <a href={`/dashboard/jobs${jobsQuery({ ...props.filter, after: undefined })}`}>First page</a> : null}{' '}
        {props.next !== null ? (
          <a href={`/dashboard/jobs${jobsQuery({ ...props.filter, after: props.next })}`} rel="next">
            Next page
          </a>
        ) : null}
      </p>
    </>
  );
}

/** The status, and for a running job the zombies page lists, what is wrong with it and what the reaper will do. */
function JobStatusCell(props: { job: JobRecord; flag: JobFlag | undefined }) {
  const f = props.flag;
  return (
    <td class={f ? `job-status flagged ${f.kind}` : 'job-status'}>
      <span class={`status ${props.job.status}${f ? ` ${f.kind}` : ''}`}>{f ? `${props.job.status} · ${f.kind}` : props.job.status}</span>
      {f ? (
        <span class="flag-note" title={f.why}>
          {' '}
          {f.label}
        </span>
      ) : null}
    </td>
  );
}
