/**
 * Jobs that wait for other jobs (docs/flows.md): POST /flows enqueues jobs
 * together, each naming what it waits for (existing job ids, or "#i" for
 * the flow's own job i, which must come earlier in the list: so a flow has
 * no cycle); GET /jobs/:id/dependencies reads a job's graph, with its
 * completed dependencies' results. A lone job with dependencies is a flow
 * of one. Unknown ids are refused (400 naming them), a dependency that
 * already failed (409, unless the policy is 'run'), more than
 * MAX_DEPENDENCIES per job or jobs per flow, and a job waited for by
 * MAX_DEPENDENTS jobs already (409); nothing is stored.
 */
import { invalid, LeaseholdError } from '../core/errors.ts';
import { toJob } from '../core/job-record.ts';
import { DEPENDENCY_POLICIES, MAX_DEPENDENCIES, MAX_DEPENDENTS } from '../core/wire.ts';
import { newJob, toNewJob, withTrace } from '../engine/enqueue-input.ts';
import { activeJobTrace } from '../core/trace-context.ts';
import { arr, optional, str, word, type JsonSchema, type Validator } from '../core/validate.ts';
import type { FlowJob } from '../db/store/port.ts';
import { parseJobId, parseQueue, queueName } from './http.ts';
import type { AppDeps } from './deps.ts';
import type { Routes } from './router.ts';

const dependsOn = arr(str({ min: 1, max: 16, pattern: /^#?[0-9]{1,15}$/, patternHelp: 'must be a job id, or #i for the flow\'s own job i' }), { min: 0, max: MAX_DEPENDENCIES });
const policy = optional(word(DEPENDENCY_POLICIES, "what a failed or cancelled dependency does: 'fail' (default) fails this job, naming it; 'run' counts it as met; 'hold' holds this job for a person. Retrying the failed dependency puts this job back to waiting"));

interface FlowItem { queue: string; dependsOn: string[]; dependencyPolicy: (typeof DEPENDENCY_POLICIES)[number] | undefined; job: ReturnType<typeof toNewJob> }

/** One flow job: a job as POST /queues/:queue/jobs takes it, with its queue, what it waits for and its policy. */
const flowJob: Validator<FlowItem> = {
  optional: false,
  schema: {
    ...newJob.schema,
    required: ['queue', ...((newJob.schema.required as string[] | undefined) ?? [])],
    properties: { queue: queueName.schema, ...(newJob.schema.properties as Record<string, JsonSchema>), dependsOn: dependsOn.schema, dependencyPolicy: policy.schema },
  } as JsonSchema,
  parse(value, path) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid(path, `${path} must be an object`);
    const { queue, dependsOn: deps, dependencyPolicy, ...rest } = value as Record<string, unknown>;
    const parsed = newJob.parse(rest, path);
    if (parsed.idempotencyKey !== undefined) throw invalid(`${path}.idempotencyKey`, `${path}.idempotencyKey is not taken in a flow: a flow is stored all or none, and a duplicate key would leave it half`);
    return {
      queue: parseQueue(queue as string | undefined, `${path}.queue`),
      dependsOn: deps === undefined ? [] : dependsOn.parse(deps, `${path}.dependsOn`),
      dependencyPolicy: dependencyPolicy === undefined ? undefined : policy.parse(dependencyPolicy, `${path}.dependencyPolicy`),
      job: toNewJob(parsed, path),
    };
  },
};
const flowBody = (() => {
  const jobs = arr(flowJob, { min: 1, max: MAX_DEPENDENCIES });
  return {
    optional: false,
    schema: { type: 'object', required: ['jobs'], properties: { jobs: jobs.schema } } as JsonSchema,
    parse(value: unknown, path: string) {
      if (typeof value !== 'object' || value === null) throw invalid('jobs', 'the body must be {"jobs": [...]}');
      return jobs.parse((value as { jobs?: unknown }).jobs, path ? `${path}.jobs` : 'jobs');
    },
  };
})();

/** The flow's references resolved: "#i" only to an earlier job; the ids it names outside the flow. */
function flowJobs(items: readonly FlowItem[]): { jobs: FlowJob[]; ids: Map<number, string> } {
  const ids = new Map<number, string>();
  const trace = activeJobTrace();
  const jobs = items.map((item, i) => ({
    ...withTrace(item.job, trace),
    queue: item.queue,
    dependencyPolicy: item.dependencyPolicy,
    dependsOn: item.dependsOn.map((d, k) => {
      const field = `jobs[${i}].dependsOn[${k}]`;
      if (!d.startsWith('#')) {
        const id = Number(d);
        if (!ids.has(id)) ids.set(id, field);
        return id;
      }
      const ref = Number(d.slice(1));
      if (ref >= i) throw invalid(field, `${field} names ${d}: a flow's job may wait only for jobs listed before it (so a flow has no cycle)`);
      return { ref };
    }),
  }));
  return { jobs, ids };
}

export function flowRoutes(r: Routes, deps: AppDeps) {
  const { store, config, clock } = deps;
  r.add(
    {
      method: 'post',
      path: '/flows',
      role: 'worker',
      operationId: 'enqueueFlow',
      tag: 'jobs',
      summary: `Enqueue jobs that wait for other jobs (at most ${MAX_DEPENDENCIES} jobs, and ${MAX_DEPENDENCIES} dependencies each): all or none; each is claimable once all it waits for completed`,
      body: flowBody,
      answers: { status: 201, schema: 'flow' },
      errors: ['conflict'],
    },
    async (c, items) => {
      const { jobs, ids } = flowJobs(items);
      if (ids.size > 0) {
        const found = new Map((await store.jobsDependencyCandidates({ ids: [...ids.keys()] })).map((d) => [d.id, d]));
        const unknown = [...ids].filter(([id]) => !found.has(id));
        if (unknown.length > 0) throw invalid(unknown[0]![1], `no job has id ${unknown.map(([id]) => id).join(', ')} (${unknown.map(([, f]) => f).join(', ')}); nothing was stored`);
        for (const [i, j] of jobs.entries()) {
          for (const [k, d] of j.dependsOn.entries()) {
            const dep = typeof d === 'number' ? found.get(d) : undefined;
            if (!dep) continue;
            const field = `jobs[${i}].dependsOn[${k}]`;
            if ((dep.status === 'failed' || dep.status === 'cancelled') && j.dependencyPolicy !== 'run') {
              throw new LeaseholdError('conflict', `${field}: job ${dep.id} is ${dep.status}; retry it first, or wait for it with dependencyPolicy 'run'; nothing was stored`, field);
            }
            if (dep.dependents >= MAX_DEPENDENTS) throw new LeaseholdError('conflict', `${field}: job ${dep.id} is waited for by ${MAX_DEPENDENTS} jobs already, the most there may be; nothing was stored`, field);
          }
        }
      }
      const rows = await deps.engine.enqueueFlow({ jobs, actor: 'api', now: clock.now(), defaults: config, maxQueues: config.maxQueues, nonce: crypto.randomUUID() });
      return c.json({ jobs: rows.map(toJob) }, 201);
    },
  );

  r.add(
    {
      method: 'get',
      path: '/jobs/:id/dependencies',
      role: 'worker',
      operationId: 'getJobDependencies',
      tag: 'jobs',
      summary: `What a job waits for, with each completed one's result, and the jobs that wait for it (at most ${MAX_DEPENDENTS} each); the worker token may read it, so a handler reads its inputs`,
      answers: { schema: 'jobDependencies' },
      errors: ['not_found'],
    },
    async (c) => {
      const id = parseJobId(c.req.param('id')!);
      const graph = await deps.engine.jobDependencies(id);
      if (!graph) throw new LeaseholdError('not_found', `no job has id ${id}`, 'id');
      return c.json(graph);
    },
  );
}
