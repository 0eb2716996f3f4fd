/**
 * The worker API: claim, heartbeat (one or many), extend, checkpoint, complete
 * (one or many), fail, release (one or many), and the worker's liveness beat. Every write to
 * a running job is fenced by its lock token (src/db/store/owned.ts).
 */
import { iso, toJob } from '../core/job-record.ts';
import { invalid } from '../core/errors.ts';
import type { JobAnswer } from '../engine/worker-protocol.ts';
import { CLAIM_ID_PATTERN, claimIdField, instanceIdField, jobIdField, lockTokenField, parseJobId, parseQueue, queueName, workerIdField } from './http.ts';
import { batchEntry, leaseFields, refusalError } from './outcomes.ts';
import { logField } from './request-log.ts';
import { MAX_SNOOZE_MS } from '../core/snooze.ts';
import { MAX_CLAIM_WAIT_MS } from '../engine/claim-waiters.ts';
import type { AppDeps } from './deps.ts';
import type { Routes } from './router.ts';
import { arr, bool, int, json, obj, optional, str, word } from '../core/validate.ts';
import { LOST_ATTEMPT_ABORTS } from '../core/wire.ts';

const MAX_BATCH = 1_000;
const MAX_ERROR_CHARS = 16_000;

/** One entry per job: a batch naming a job twice is ambiguous (which token wins?), so it is refused. */
function uniqueIds<T extends { id: string }>(items: T[], field: string): T[] {
  const seen = new Set<string>();
  items.forEach((item, i) => {
    if (seen.has(item.id)) throw invalid(`${field}[${i}].id`, `${field}[${i}].id names job ${item.id} a second time`);
    seen.add(item.id);
  });
  return items;
}

/** A single-job route's answer: the row, or its refusal as the error response. */
function single<T>(a: JobAnswer<T>): T {
  if (!a.ok) throw refusalError(a.refusal);
  return a.job;
}

/** Most claim ids one beat may name as lost (the SDK sends the rest with its next beats). */
const MAX_LOST_CLAIMS = 100;

/** Caps on what a beat may report: a counter past a billion, or a block past a day, is a bug, not a measurement. */
const MAX_COUNTER = 1_000_000_000;
const MAX_BLOCK_MS = 24 * 3600 * 1000;

/**
 * What a worker says about itself: the body of /workers/beat, and the
 * `worker` field of /heartbeats that carries the same beat. New liveness
 * fields go here, and both routes take them.
 */
const beatFields = {
  instanceId: optional(instanceIdField),
  host: optional(str({ max: 255 })),
  pid: optional(int({ min: 0, max: 2 ** 31 })),
  version: optional(str({ max: 100 })),
  queues: optional(arr(queueName, { min: 0, max: 100 })),
  runningCount: optional(int({ min: 0, max: 1_000_000, description: 'jobs this process holds a lease on: running, claimed ahead and waiting for a slot, or with their result on its way' })),
  // The process's own counters since it started; older SDKs send none.
  eventLoopBlocks: optional(int({ min: 0, max: MAX_COUNTER, description: 'times a heartbeat timer fired late because the event loop was blocked, since the process started' })),
  longestEventLoopBlockMs: optional(int({ min: 0, max: MAX_BLOCK_MS, description: 'the longest of those blocks, in ms' })),
  heartbeatFailures: optional(int({ min: 0, max: MAX_COUNTER, description: 'heartbeat rounds that failed (network, server), since the process started' })),
  leasesLost: optional(int({ min: 0, max: MAX_COUNTER, description: 'jobs whose lease this process lost (refused, or expired before it could renew), since it started' })),
  lostClaims: optional(
    arr(
      str({
        min: 1,
        max: 100,
        pattern: CLAIM_ID_PATTERN,
        patternHelp: 'must be a claimId: 1-100 characters of letters, digits, _ . : -',
        description: 'the claimId of a claim whose answer this process never received and no longer waits for (it will never act on it): the jobs still running under it go back to the queue at once, the attempt not counted',
      }),
      { min: 0, max: MAX_LOST_CLAIMS },
    ),
  ),
};

export function workerRoutes(r: Routes, deps: AppDeps) {
  const { config } = deps;
  // The engine's worker protocol, with its wake-ups: the routes decode, call it and encode.
  const protocol = deps.engine;
  const leaseMs = int({ min: 1_000, max: config.maxLeaseMs, description: 'lease length in ms' });
  // A claim's limit is a ceiling, and an answer may always hold fewer jobs:
  // one above this server's LEASEHOLD_MAX_CLAIM_BATCH is taken as that
  // maximum rather than refused, so a worker set up for a bigger server
  // still gets work here instead of a 400 on every claim.
  const claimLimitField = int({ min: 1, max: Number.MAX_SAFE_INTEGER, description: `most jobs to claim; above ${config.maxClaimBatch} (LEASEHOLD_MAX_CLAIM_BATCH) counts as ${config.maxClaimBatch}` });
  const claimLimit = (asked: number) => Math.min(asked, config.maxClaimBatch);

  r.add(
    {
      method: 'post',
      path: '/queues/:queue/claim',
      role: 'worker',
      operationId: 'claimJobs',
      tag: 'worker',
      answers: { schema: 'claimed' },
      summary:
        "Claim up to `limit` ready jobs, in claim order, as many as fit in the server's LEASEHOLD_MAX_CLAIM_BYTES of payloads and checkpoints (always at least one: a larger job comes alone); an empty list means nothing is ready. With `waitMs`, a claim that finds nothing waits up to that long for work (an enqueue of jobs due now through this server runs the claim in its own transaction and answers it from there; woken when a job of the queue becomes claimable through this server otherwise: a release, an operator's retry or requeue, its reaper's requeue or schedule occurrence, a delayed job or retry it wrote coming due; and by one shared look every 250 ms for work from elsewhere) before answering; past LEASEHOLD_MAX_WAITING_CLAIMS waiting claims on the server, or LEASEHOLD_MAX_WAITING_CLAIMS_PER_TOKEN for the token, one that finds nothing is answered 429 with Retry-After instead. When the queue's rate limit holds claims back, `rateLimitedUntil` and `retryAfterMs` say when its next window opens. With `claimId`, the claim can be sent again safely when its answer was lost: the same id from the same worker answers the jobs it already took (still running, before their deadline) instead of claiming more",
      body: obj({
        workerId: workerIdField,
        instanceId: optional(instanceIdField),
        limit: optional(claimLimitField),
        leaseMs: optional(leaseMs),
        claimId: optional(claimIdField),
        waitMs: optional(int({ min: 0, max: MAX_CLAIM_WAIT_MS, description: 'longest to wait for work when none is ready, in ms (0 or absent: answer at once)' })),
      }),
    },
    async (c, body) => {
      const queue = parseQueue(c.req.param('queue'));
      const limit = claimLimit(body.limit ?? 1);
      const { jobs, retryAfterMs, rateLimitedUntil } = await deps.engine.claim({
        queue,
        workerId: body.workerId,
        instanceId: body.instanceId,
        limit,
        leaseMs: body.leaseMs,
        claimId: body.claimId,
        waitMs: body.waitMs ?? 0,
        signal: c.req.raw.signal,
        // Every caller is one owner while the worker role is open.
        owner: c.get('principal')?.name ?? '',
      });
      if (jobs.length > 0) logField(c, jobs.length === 1 ? { jobId: jobs[0]!.id } : { jobIds: jobs.map((j) => j.id) });
      // The claim statement kept the payloads and checkpoints within
      // LEASEHOLD_MAX_CLAIM_BYTES (at most 256 MiB; one job over it comes
      // alone, and is at most two request bodies of at most 128 MiB each), so
      // this one JSON string stays below V8's ~512 MiB: encoding it cannot
      // throw `RangeError: Invalid string length` after the jobs were marked
      // running. The same holds for the claim riding on /completions.
      // The rate limit's advice was read in the claim's own round trip.
      if (retryAfterMs !== undefined) return c.json({ jobs, rateLimitedUntil: iso(rateLimitedUntil!), retryAfterMs });
      return c.json({ jobs });
    },
  );

  const heartbeatBody = obj({ workerId: workerIdField, lockToken: lockTokenField, progress: optional(json('progress, any JSON')), leaseMs: optional(leaseMs) });
  for (const path of ['/jobs/:id/heartbeat', '/jobs/:id/extend'] as const) {
    r.add(
      {
        method: 'post',
        path,
        role: 'worker',
        operationId: path.endsWith('extend') ? 'extendLease' : 'heartbeatJob',
        tag: 'worker',
        answers: { schema: 'lease' },
        errors: ['not_found', 'lease_lost'],
        summary: path.endsWith('extend') ? 'Extend the lease to leaseMs from now (before a long blocking step)' : 'Renew the lease, optionally reporting progress',
        body: heartbeatBody,
      },
      async (c, body) => {
        const [answer] = await protocol.heartbeat({
          workerId: body.workerId,
          leases: [{ id: parseJobId(c.req.param('id')!), lockToken: body.lockToken, progress: body.progress }],
          leaseMs: body.leaseMs,
        });
        const job = single(answer!);
        return c.json({ id: String(job.id), ...leaseFields(job) });
      },
    );
  }

  r.add(
    {
      method: 'post',
      path: '/heartbeats',
      role: 'worker',
      operationId: 'heartbeatMany',
      tag: 'worker',
      answers: { schema: 'heartbeats' },
      summary:
        "Renew many of one worker's leases in one call; one result per lease. With `worker` (the fields of /workers/beat), the worker's liveness beat is recorded in the same transaction: one request per tick, and the jobs of the claims it names in `worker.lostClaims` go back to the queue. `leases` may be empty only when `worker` is given (an idle worker's beat)",
      body: obj({
        workerId: workerIdField,
        leases: arr(obj({ id: jobIdField, lockToken: lockTokenField, progress: optional(json()) }), { min: 0, max: MAX_BATCH }),
        leaseMs: optional(leaseMs),
        worker: optional(obj(beatFields)),
      }),
    },
    async (c, body) => {
      if (body.leases.length === 0 && !body.worker) throw invalid('leases', 'leases is empty: name at least one lease, or send `worker` (the liveness beat) with it');
      const answers = await protocol.heartbeat({
        workerId: body.workerId,
        leases: uniqueIds(body.leases, 'leases').map((l) => ({ id: Number(l.id), lockToken: l.lockToken, progress: l.progress })),
        leaseMs: body.leaseMs,
        beat: body.worker,
      });
      return c.json({ results: answers.map((a) => batchEntry(a, leaseFields)) });
    },
  );

  r.add(
    {
      method: 'post',
      path: '/jobs/:id/checkpoint',
      role: 'worker',
      operationId: 'checkpointJob',
      tag: 'worker',
      answers: { schema: 'lease' },
      errors: ['not_found', 'lease_lost'],
      summary: 'Save state for the next attempt (also renews the lease)',
      body: obj({ workerId: workerIdField, lockToken: lockTokenField, checkpoint: json('any JSON') }),
    },
    async (c, body) => {
      const job = single(await protocol.checkpoint({ workerId: body.workerId, id: parseJobId(c.req.param('id')!), lockToken: body.lockToken, checkpoint: body.checkpoint }));
      return c.json({ id: String(job.id), ...leaseFields(job) });
    },
  );

  r.add(
    {
      method: 'post',
      path: '/jobs/:id/complete',
      role: 'worker',
      operationId: 'completeJob',
      tag: 'worker',
      answers: { schema: 'job' },
      errors: ['not_found', 'lease_lost'],
      summary: 'Complete the job with an optional result',
      body: obj({ workerId: workerIdField, lockToken: lockTokenField, result: optional(json()) }),
    },
    async (c, body) => {
      const job = single(await protocol.completeOne({ workerId: body.workerId, id: parseJobId(c.req.param('id')!), lockToken: body.lockToken, result: body.result }));
      return c.json({ job: toJob(job) });
    },
  );

  r.add(
    {
      method: 'post',
      path: '/completions',
      role: 'worker',
      operationId: 'completeMany',
      tag: 'worker',
      answers: { schema: 'completions' },
      summary:
        'Complete many jobs in one statement, each fenced by its own token; one outcome per job. With `claim`, also claim the next jobs in the same transaction (answered as `jobs`, like a claim). Safe to send again when the answer was lost: a completion already stored under the same token with the same result is answered ok again (not a stale write), and a `claim` with the same `claimId` answers the jobs it took the first time',
      body: obj({
        workerId: workerIdField,
        instanceId: optional(instanceIdField),
        results: arr(obj({ id: jobIdField, lockToken: lockTokenField, result: optional(json()) }), { min: 1, max: MAX_BATCH }),
        claim: optional(obj({ queue: queueName, limit: claimLimitField, leaseMs: optional(leaseMs), claimId: optional(claimIdField) })),
      }),
    },
    async (c, body) => {
      const results = uniqueIds(body.results, 'results').map((x) => ({ id: Number(x.id), lockToken: x.lockToken, result: x.result }));
      const completed = (a: JobAnswer) => batchEntry(a, (job) => ({ status: job.status, completedAt: iso(job.completed_at) }));
      if (!body.claim) return c.json({ results: (await protocol.complete({ workerId: body.workerId, results })).map(completed) });
      const { answers, claimed } = await protocol.completeThenClaim({ workerId: body.workerId, instanceId: body.instanceId, results, claim: { ...body.claim, limit: claimLimit(body.claim.limit) } });
      return c.json({ results: answers.map(completed), jobs: claimed });
    },
  );

  r.add(
    {
      method: 'post',
      path: '/jobs/:id/fail',
      role: 'worker',
      operationId: 'failJob',
      tag: 'worker',
      answers: { schema: 'job' },
      errors: ['not_found', 'lease_lost'],
      summary: "Fail the attempt: retried with backoff while attempts remain, unless retryable is false; held for a person instead when it ends a lost attempt (abortedBy, or past the deadline or lease) of a job whose onLost is 'hold'",
      body: obj({
        workerId: workerIdField,
        lockToken: lockTokenField,
        error: str({ min: 1, max: MAX_ERROR_CHARS, description: 'what went wrong' }),
        retryable: optional(bool('default true')),
        retryAfterMs: optional(int({ min: 0, max: 365 * 24 * 3600 * 1000 })),
        abortedBy: optional(
          word(
            LOST_ATTEMPT_ABORTS,
            "why the worker stopped the handler, when the attempt lost its lease or ran out of time: its deadline passed, its lease ran out by the worker's clock (it fenced itself), or the server refused its lease. The attempt is then a lost one: a job whose onLost is 'hold' is held for a person instead of retried (so it is whenever the deadline or lease has already run out on the server)",
          ),
        ),
      }),
    },
    async (c, body) => {
      const job = single(
        await protocol.fail({
          workerId: body.workerId,
          id: parseJobId(c.req.param('id')!),
          lockToken: body.lockToken,
          error: body.error,
          retryable: body.retryable ?? true,
          retryAfterMs: body.retryAfterMs,
          abortedBy: body.abortedBy,
        }),
      );
      return c.json({ job: toJob(job) });
    },
  );

  r.add(
    {
      method: 'post',
      path: '/jobs/:id/snooze',
      role: 'worker',
      operationId: 'snoozeJob',
      tag: 'worker',
      answers: { schema: 'job' },
      errors: ['not_found', 'lease_lost', 'conflict'],
      summary: "Not now, try again in delayMs: the job goes back to pending, due then, the attempt given back (no attempt spent, no error recorded) and its snoozes counted; 409 conflict (cause snooze_limit) once it snoozed its queue's maxSnoozes times (default 100), the job still yours",
      body: obj({ workerId: workerIdField, lockToken: lockTokenField, delayMs: int({ min: 0, max: MAX_SNOOZE_MS, description: 'due again this long from now' }) }),
    },
    async (c, body) => {
      const job = single(await protocol.snooze({ workerId: body.workerId, id: parseJobId(c.req.param('id')!), lockToken: body.lockToken, delayMs: body.delayMs }));
      return c.json({ job: toJob(job) });
    },
  );

  r.add(
    {
      method: 'post',
      path: '/jobs/:id/release',
      role: 'worker',
      operationId: 'releaseJob',
      tag: 'worker',
      answers: { schema: 'job' },
      errors: ['not_found', 'lease_lost'],
      summary: 'Give the lease back (shutdown): the job is ready again at once and the attempt does not count',
      body: obj({ workerId: workerIdField, lockToken: lockTokenField, reason: optional(str({ min: 1, max: 200 })) }),
    },
    async (c, body) => {
      const job = single(await protocol.releaseOne({ workerId: body.workerId, id: parseJobId(c.req.param('id')!), lockToken: body.lockToken, reason: body.reason }));
      return c.json({ job: toJob(job) });
    },
  );

  r.add(
    {
      method: 'post',
      path: '/releases',
      role: 'worker',
      operationId: 'releaseMany',
      tag: 'worker',
      answers: { schema: 'releases' },
      summary: "Give many of one worker's leases back in one statement (shutdown), each fenced by its own token; one result per lease, as /jobs/{id}/release would answer it alone",
      body: obj({
        workerId: workerIdField,
        leases: arr(obj({ id: jobIdField, lockToken: lockTokenField }), { min: 1, max: MAX_BATCH }),
        reason: optional(str({ min: 1, max: 200 })),
      }),
    },
    async (c, body) => {
      const answers = await protocol.release({
        workerId: body.workerId,
        leases: uniqueIds(body.leases, 'leases').map((l) => ({ id: Number(l.id), lockToken: l.lockToken })),
        reason: body.reason,
      });
      return c.json({ results: answers.map((a) => batchEntry(a, (job) => ({ status: job.status }))) });
    },
  );

  r.add(
    {
      method: 'post',
      path: '/workers/beat',
      role: 'worker',
      operationId: 'workerBeat',
      tag: 'worker',
      answers: { schema: 'beat' },
      summary:
        "A worker's liveness beat: lets the reaper tell a dead worker from a slow job (the SDK sends it with its heartbeats instead; this call stays for other clients). `lostClaims`: claim ids whose answer this worker never received and no longer waits for (it will never act on them); the jobs still running under them go back to the queue at once, the attempt not counted (event `released`, reason `claim_answer_lost`)",
      body: obj({ workerId: workerIdField, ...beatFields }),
    },
    async (c, body) => {
      await protocol.beat(body);
      return c.json({ ok: true });
    },
  );

  const effectKey = str({ min: 1, max: 200, description: 'names the side effect within the job' });
  r.add(
    {
      method: 'post',
      path: '/jobs/:id/effects/start',
      role: 'worker',
      operationId: 'startEffect',
      tag: 'worker',
      answers: { schema: 'effectStart' },
      errors: ['not_found', 'lease_lost'],
      summary: 'once(): start a side effect under the lease, or get the result an earlier attempt recorded',
      body: obj({ workerId: workerIdField, lockToken: lockTokenField, key: effectKey }),
    },
    async (c, body) => {
      const a = await protocol.effectStart({ workerId: body.workerId, id: parseJobId(c.req.param('id')!), lockToken: body.lockToken, key: body.key });
      if (a.kind === 'refused') throw refusalError(a.refusal);
      if (a.kind === 'done') return c.json({ state: 'done', result: a.result });
      return c.json({ state: 'run' });
    },
  );

  r.add(
    {
      method: 'post',
      path: '/jobs/:id/effects/finish',
      role: 'worker',
      operationId: 'finishEffect',
      tag: 'worker',
      answers: { schema: 'effectFinish' },
      errors: ['not_found', 'lease_lost'],
      summary: 'once(): record, under the lease, that a side effect this claim started ran; answers the result on record (the first one wins)',
      body: obj({
        workerId: workerIdField,
        lockToken: lockTokenField,
        key: effectKey,
        result: optional(json()),
        checkpoint: optional(json("step(): saved as the job's checkpoint in the same transaction as the result, once it is on record")),
      }),
    },
    async (c, body) => {
      const a = await protocol.effectFinish({ workerId: body.workerId, id: parseJobId(c.req.param('id')!), lockToken: body.lockToken, key: body.key, result: body.result, checkpoint: body.checkpoint });
      if (a.kind === 'refused') throw refusalError(a.refusal);
      return c.json({ result: a.result });
    },
  );

  r.add(
    {
      method: 'post',
      path: '/jobs/:id/steps',
      role: 'worker',
      operationId: 'listSteps',
      tag: 'worker',
      answers: { schema: 'steps' },
      errors: ['not_found', 'lease_lost'],
      summary:
        "step(): the job's steps as this claim finds them, under the lease: done (with its result), uncertain (an earlier claim started it and never recorded it done; each one found is recorded as event `step_uncertain`) or running (this claim started it)",
      body: obj({ workerId: workerIdField, lockToken: lockTokenField }),
    },
    async (c, body) => {
      const a = await protocol.steps({ workerId: body.workerId, id: parseJobId(c.req.param('id')!), lockToken: body.lockToken });
      if (!a.ok) throw refusalError(a.refusal);
      return c.json({ steps: a.steps });
    },
  );

  r.add(
    {
      method: 'post',
      path: '/jobs/:id/duplicates',
      role: 'worker',
      operationId: 'reportDuplicate',
      tag: 'worker',
      answers: { schema: 'beat' },
      errors: ['not_found', 'lease_lost'],
      summary:
        'reportDuplicate(): the handler found, downstream, that its work was already done (by an earlier attempt, or another job). Recorded under the lease as event `duplicate_reported` (reason: the key), counted in leasehold_duplicates_reported_total and by the duplicate_executions alert',
      body: obj({ workerId: workerIdField, lockToken: lockTokenField, key: str({ min: 1, max: 200, description: 'names what was found done twice (a payment id, a row key)' }) }),
    },
    async (c, body) => {
      const a = await protocol.reportDuplicate({ workerId: body.workerId, id: parseJobId(c.req.param('id')!), lockToken: body.lockToken, key: body.key });
      if (!a.ok) throw refusalError(a.refusal);
      return c.json({ ok: true });
    },
  );
}
