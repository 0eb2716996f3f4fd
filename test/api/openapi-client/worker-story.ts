/**
 * A worker, a producer and an operator written against types that
 * openapi-typescript generated from the served document, calling the server
 * through openapi-fetch, with no hand-written types and no casts. The test
 * (test/api/openapi-client.test.ts) copies this file beside the generated
 * `api.ts`, type-checks it with `tsc --strict`, then runs it against a real
 * server; it prints what it saw as one JSON line, and throws on any answer it
 * did not expect.
 *
 * Not part of the project's own type-check: `./api.ts` exists only in the
 * test's temporary directory.
 */
import createClient from 'openapi-fetch';
import type { components, paths } from './api.ts';

/** A job as GET /jobs/{id} answers it; the error body, from the document's components. */
type Job = paths['/api/v1/jobs/{id}']['get']['responses'][200]['content']['application/json']['job'];
type ErrorBody = components['schemas']['Error'];

const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const baseUrl = env('LEASEHOLD_URL');
const as = (token: string) => createClient<paths>({ baseUrl, headers: { authorization: `Bearer ${token}` } });
const worker = as(env('WORKER_TOKEN'));
const admin = as(env('ADMIN_TOKEN'));
const reader = as(env('READONLY_TOKEN'));

/** The answer's data, when its status is the one expected; otherwise a throw that says what came instead. */
function expectStatus<T>(what: string, r: { data?: T; error?: unknown; response: Response }, status: number): T {
  if (r.response.status !== status || r.data === undefined) throw new Error(`${what}: expected ${status}, got ${r.response.status} ${JSON.stringify(r.error)}`);
  return r.data;
}

/** A refusal's error body, when its status is the one expected. */
function expectRefusal(what: string, r: { error?: ErrorBody; response: Response }, status: number): string {
  if (r.response.status !== status || r.error === undefined) throw new Error(`${what}: expected ${status}, got ${r.response.status}`);
  return r.error.error.code;
}

const queue = 'story';
const path = { queue };
const workerId = 'generated-client';
const outcome: Record<string, unknown> = {};

// Producer: one job, and a bulk of two (the answer is one of two shapes: narrowed, not cast).
const one = expectStatus('enqueue', await worker.POST('/api/v1/queues/{queue}/jobs', { params: { path }, body: { payload: { n: 1 }, priority: 5, idempotencyKey: 'story-1' } }), 201);
if (!('job' in one)) throw new Error('enqueue of one job answered a bulk');
const firstId: string = one.job.id;
const again = await worker.POST('/api/v1/queues/{queue}/jobs', { params: { path }, body: { payload: { n: 1 }, idempotencyKey: 'story-1' } });
outcome.deduplicated = again.response.status === 200 && again.data !== undefined && 'deduplicated' in again.data && again.data.deduplicated;
const bulk = expectStatus('bulk enqueue', await worker.POST('/api/v1/queues/{queue}/jobs', { params: { path }, body: { jobs: [{ payload: { n: 2 } }, { payload: { n: 3 }, uniqueWhile: 'retained', idempotencyKey: 'story-3' }] } }), 201);
if (!('jobs' in bulk)) throw new Error('a bulk enqueue answered one job');
outcome.bulkIds = bulk.jobs.length;

// Worker: claim (waiting up to a while), heartbeat with progress, checkpoint, complete.
const claimed = expectStatus('claim', await worker.POST('/api/v1/queues/{queue}/claim', { params: { path }, body: { workerId, limit: 1, waitMs: 1_000 } }), 200);
const first = claimed.jobs[0];
if (!first || first.id !== firstId) throw new Error(`claim: expected job ${firstId} first (priority 5), got ${JSON.stringify(claimed.jobs)}`);
const own = { workerId, lockToken: first.lockToken };
const lease = expectStatus('heartbeat', await worker.POST('/api/v1/jobs/{id}/heartbeat', { params: { path: { id: first.id } }, body: { ...own, progress: { pct: 50 } } }), 200);
const fencing: number = lease.fencingToken;
expectStatus('checkpoint', await worker.POST('/api/v1/jobs/{id}/checkpoint', { params: { path: { id: first.id } }, body: { ...own, checkpoint: { step: 2 } } }), 200);
const done = expectStatus('complete', await worker.POST('/api/v1/jobs/{id}/complete', { params: { path: { id: first.id } }, body: { ...own, result: { ok: true } } }), 200);
outcome.completed = done.job.status;
// The same token again, with another outcome: refused as a stale write, typed as the error it is.
outcome.staleFail = expectRefusal('fail after complete', await worker.POST('/api/v1/jobs/{id}/fail', { params: { path: { id: first.id } }, body: { ...own, error: 'late' } }), 409);

// A claim that waits: nothing is ready until the enqueue below wakes it.
const drained = expectStatus('claim two', await worker.POST('/api/v1/queues/{queue}/claim', { params: { path }, body: { workerId, limit: 2 } }), 200);
const waiting = worker.POST('/api/v1/queues/{queue}/claim', { params: { path }, body: { workerId, limit: 1, waitMs: 20_000 } });
await new Promise((resolve) => setTimeout(resolve, 200));
expectStatus('enqueue while a claim waits', await worker.POST('/api/v1/queues/{queue}/jobs', { params: { path }, body: { payload: { n: 4 } } }), 201);
const woken = expectStatus('waiting claim', await waiting, 200);
outcome.wokenClaim = woken.jobs.length;

// Fail one for good, and give the others back through the batch calls.
const [toFail, ...rest] = [...drained.jobs, ...woken.jobs];
if (!toFail) throw new Error('nothing to fail');
const failed = expectStatus('fail', await worker.POST('/api/v1/jobs/{id}/fail', { params: { path: { id: toFail.id } }, body: { workerId, lockToken: toFail.lockToken, error: 'boom', retryable: false } }), 200);
outcome.failed = failed.job.status;
const completions = expectStatus('completions', await worker.POST('/api/v1/completions', { body: { workerId, results: rest.map((j) => ({ id: j.id, lockToken: j.lockToken, result: j.id })) } }), 200);
outcome.batchCompleted = completions.results.filter((r) => r.ok).length;
expectStatus('beat', await worker.POST('/api/v1/workers/beat', { body: { workerId, queues: [queue], runningCount: 0 } }), 200);

// Reading a job back: the worker token may, the read-only token may not.
const read = expectStatus('get job', await worker.GET('/api/v1/jobs/{id}', { params: { path: { id: firstId } } }), 200);
const job: Job = read.job;
outcome.events = read.events.map((e) => e.type);
outcome.checkpoint = job.checkpoint;
outcome.readerGetJob = expectRefusal('get job as reader', await reader.GET('/api/v1/jobs/{id}', { params: { path: { id: firstId } } }), 403);

// Operator: list (typed query: an integer limit and an enum status), queues, settings, pause and resume ({} bodies), reaper, workers.
const page = expectStatus('list', await admin.GET('/api/v1/jobs', { params: { query: { queue, status: 'completed', limit: 10, order: 'asc' } } }), 200);
outcome.listed = page.jobs.map((j) => j.id).length;
const queues = expectStatus('queues', await admin.GET('/api/v1/queues'), 200);
outcome.queueCompleted = queues.queues.find((q) => q.name === queue)?.counts.completed;
const settings = expectStatus('settings', await admin.PATCH('/api/v1/queues/{queue}/settings', { params: { path }, body: { leaseMs: 60_000, maxRunning: 10 } }), 200);
outcome.leaseMs = settings.queue.settings.leaseMs;
outcome.paused = expectStatus('pause', await admin.POST('/api/v1/queues/{queue}/pause', { params: { path }, body: {} }), 200).paused;
outcome.resumed = !expectStatus('resume', await admin.POST('/api/v1/queues/{queue}/resume', { params: { path }, body: {} }), 200).paused;
const reaped = expectStatus('reaper', await admin.POST('/api/v1/reaper/run', { body: {} }), 200);
outcome.reaperRequeued = reaped.requeued.length;
const workers = expectStatus('workers', await admin.GET('/api/v1/workers', { params: { query: { alive: true } } }), 200);
outcome.workers = workers.workers.map((w) => w.id);
outcome.workerPause = expectRefusal('pause as worker', await worker.POST('/api/v1/queues/{queue}/pause', { params: { path }, body: {} }), 403);

// Schedules: create, list, delete (a DELETE with no body).
const schedule = expectStatus('create schedule', await admin.POST('/api/v1/schedules', { body: { name: 'nightly', queue, intervalMs: 3_600_000, payload: { report: true } } }), 201);
const nextRunAt: string | null = schedule.schedule.nextRunAt;
outcome.scheduleHasNextRun = nextRunAt !== null;
outcome.schedules = expectStatus('schedules', await admin.GET('/api/v1/schedules'), 200).schedules.map((s) => s.name);
outcome.deleted = expectStatus('delete schedule', await admin.DELETE('/api/v1/schedules/{name}', { params: { path: { name: 'nightly' } } }), 200).deleted;

// Observability as the read-only token: metrics, alerts, tuning, audit, and the Prometheus text.
const metrics = expectStatus('metrics', await reader.GET('/api/v1/metrics'), 200);
const storyMetrics = metrics.queues.find((q) => q.queue === queue);
const completedTotal: number | undefined = storyMetrics?.jobsTotal.completed;
outcome.metricsCompleted = completedTotal;
outcome.metricsStaleWrites = storyMetrics?.staleWritesRejected.total;
const alerts = expectStatus('alerts', await reader.GET('/api/v1/alerts'), 200);
outcome.alertStates = [...new Set(alerts.alerts.map((a) => a.state))];
const tuning = expectStatus('tuning', await reader.GET('/api/v1/tuning'), 200);
outcome.tuningLease = tuning.queues.find((q) => q.queue === queue)?.current.leaseMs;
const audit = expectStatus('audit', await reader.GET('/api/v1/audit', { params: { query: { action: 'queue.pause', limit: 5 } } }), 200);
outcome.audited = audit.entries.map((e) => e.action);
const prometheus = await reader.GET('/metrics', { parseAs: 'text' });
outcome.prometheus = prometheus.response.status === 200 && typeof prometheus.data === 'string' && prometheus.data.includes('leasehold_');
outcome.workerMetrics = expectRefusal('metrics as worker', await worker.GET('/api/v1/metrics'), 403);
outcome.fencing = fencing;

console.log(JSON.stringify(outcome));

/** Never called: each line must fail to type-check, so the generated types are as strict as the server. */
export function refusedByTheTypes() {
  // @ts-expect-error limit is an integer, not a string
  void admin.GET('/api/v1/jobs', { params: { query: { limit: '10' } } });
  // @ts-expect-error status is one of the job statuses
  void admin.GET('/api/v1/jobs', { params: { query: { status: 'zombie' } } });
  // @ts-expect-error alive is a boolean
  void admin.GET('/api/v1/workers', { params: { query: { alive: 'true' } } });
  // @ts-expect-error a claim needs its workerId
  void worker.POST('/api/v1/queues/{queue}/claim', { params: { path }, body: { limit: 1 } });
  // @ts-expect-error pause takes no fields
  void admin.POST('/api/v1/queues/{queue}/pause', { params: { path }, body: { queue } });
  // @ts-expect-error the metrics view is typed to its fields
  void metrics.queues[0]?.notAField;
}
