/**
 * Jobs that wait for other jobs (docs/flows.md).
 *
 * - enqueue with dependencies (jobsInsertFlow): — -> pending, waiting. One
 *   batch: each queue's row (within the cap), then one INSERT per job, in
 *   the flow's order, so a job's references to the flow's earlier jobs find
 *   them. A trigger (drizzle/0031) expands `depends_on` into
 *   job_dependencies, counts what is unmet and, while anything is, keeps the
 *   job out of every claim's reach. It fails the statement (and so the
 *   batch: all or none) on an unknown id, a failed dependency under a policy
 *   other than 'run', or a job already waited for by MAX_DEPENDENTS jobs; a
 *   queue past the cap fails it too (its queue_name comes out NULL).
 * - the transitions that finish a dependency keep the rest (the triggers of
 *   drizzle/0031): nothing here runs after them, and nothing polls. A
 *   worker's completion and failure also say, in their RETURNING, whether
 *   jobs wait for the job they finished (`hasDependentsSql`), so the engine
 *   wakes the claims waiting for work after the commit.
 * - reads: the candidates' statuses before an enqueue (to name the ids it
 *   refuses), and a job's graph (its dependencies with their results, and
 *   the jobs waiting for it).
 */
import { sql } from 'drizzle-orm';
import { LeaseholdError, requireStorableText } from '../../core/errors.ts';
import type { Db } from '../db.ts';
import { nowSql, queueSettingSql } from '../sql.ts';
import { queueCapReached, queueInsertWithinCap, queueJobsGuard } from './enqueue.ts';
import type { JobRecord } from '../../core/job-record.ts';
import type { DependencyCandidate, DependencyLink, FlowInsertParams, JobDependencyGraph } from './port-types.ts';

/** What the trigger's refusals say (drizzle/0031), as each backend words its error. */
const TRIGGER_REFUSALS = ['leasehold: unknown dependency', 'leasehold: failed dependency', 'leasehold: too many dependents'] as const;

/** The trigger's refusal in an error thrown by the batch, or undefined. */
export function dependencyRefusal(err: unknown): (typeof TRIGGER_REFUSALS)[number] | 'queue_cap' | undefined {
  const text = errorText(err);
  if (/NOT NULL constraint failed: jobs\.queue_name/.test(text)) return 'queue_cap';
  return TRIGGER_REFUSALS.find((r) => text.includes(r));
}

function errorText(err: unknown): string {
  let text = '';
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) text += ` ${String((e as Error).message ?? e)}`;
  return text;
}

const flowRef = (nonce: string, i: number) => `${nonce}:${i}`;

/** The flow's jobs, all or none, in input order as stored (with their waiting state). */
export async function jobsInsertFlow(db: Db, p: FlowInsertParams): Promise<JobRecord[]> {
  const now = nowSql(p.now);
  p.jobs.forEach((j, i) => requireStorableText(j.queue, p.jobs.length > 1 ? `jobs[${i}].queue` : 'queue'));
  const queues = [...new Set(p.jobs.map((j) => j.queue))];
  const inserts = p.jobs.map((j, i) => {
    const dependsOn = JSON.stringify(j.dependsOn.map((d) => (typeof d === 'number' ? d : flowRef(p.nonce, d.ref))));
    const maxAttempts = queueSettingSql('max_attempts', sql`${j.queue}`, p.defaults.maxAttempts);
    const availableAt = j.runAt ?? sql`${now} + ${j.delayMs ?? 0}`;
    // A queue the cap refuses gives NULL: the NOT NULL constraint fails the
    // statement, and with it the whole batch.
    return db.run(sql`INSERT INTO jobs (queue_name, payload, priority, max_attempts, available_at, unique_while, timeout_ms, trace_parent, trace_state, on_lost,
        depends_on, dependency_policy, flow_ref, last_event_actor, enqueued_by, created_at, updated_at)
      SELECT CASE WHEN ${queueJobsGuard(j.queue, p.maxQueues)} THEN ${j.queue} END, json(${JSON.stringify(j.payload ?? null)}), ${j.priority ?? 0},
        coalesce(${j.maxAttempts ?? null}, ${maxAttempts}), ${availableAt}, 'retained', ${j.timeoutMs ?? null}, ${j.traceparent ?? null}, ${j.tracestate ?? null}, ${j.onLost ?? null},
        ${j.dependsOn.length > 0 ? dependsOn : null}, ${j.dependencyPolicy ?? null}, ${flowRef(p.nonce, i)}, ${p.actor}, ${p.actor}, ${now}, ${now}`);
  });
  const refs = JSON.stringify(p.jobs.map((_, i) => flowRef(p.nonce, i)));
  const readBack = db.all<JobRecord>(sql`SELECT jobs.* FROM json_each(${refs}) AS r JOIN jobs ON jobs.flow_ref = r.value ORDER BY r.key`);
  let results: readonly unknown[];
  try {
    results = await db.batch([...queues.map((q) => queueInsertWithinCap(db, q, now, p.maxQueues)), ...inserts, readBack] as unknown as Parameters<Db['batch']>[0]);
  } catch (err) {
    const refusal = dependencyRefusal(err);
    if (refusal === 'queue_cap') throw queueCapReached(queues.length === 1 ? queues[0]! : queues.join(', '), p.maxQueues);
    if (refusal !== undefined) throw new LeaseholdError('conflict', `${refusal.replace('leasehold: ', '')}: a dependency changed while the jobs were enqueued; nothing was stored`, 'dependsOn');
    throw err;
  }
  return results[results.length - 1] as JobRecord[];
}

/**
 * A RETURNING column of a statement that finishes jobs: 1 when some job
 * waits (or waited) for the row's job, else 0. Any edge counts, whatever
 * its state: whether SQLite evaluates RETURNING before or after the
 * triggers that settle the edges, a job that had dependents says so (a job
 * finished a second time says so again: that costs a look, no more). One
 * probe of job_dependencies_dependency_idx per finished job, as the
 * triggers' own WHEN already makes.
 */
export const hasDependentsSql = sql`EXISTS (SELECT 1 FROM job_dependencies WHERE job_dependencies.dependency_id = jobs.id) AS has_dependents`;

/** The ids among `ids` that exist, with their status and how many jobs wait for each already. */
export function jobsDependencyCandidates(db: Db, p: { ids: readonly number[] }): Promise<DependencyCandidate[]> {
  return db.all<DependencyCandidate>(sql`SELECT jobs.id AS id, jobs.status AS status,
      (SELECT count(*) FROM job_dependencies e WHERE e.dependency_id = jobs.id) AS dependents
    FROM json_each(${JSON.stringify(p.ids)}) AS c JOIN jobs ON jobs.id = c.value`);
}

/** The other job's own wait: its policy (null when it waits for nothing), its unmet count, whether a person holds it. */
const linkedJobColumns = sql`CASE WHEN j.depends_on IS NULL THEN NULL ELSE coalesce(j.dependency_policy, 'fail') END AS dependencyPolicy,
        j.dependencies_unmet AS dependenciesUnmet, j.held_at AS heldAt`;

/** A job's dependencies (with each completed one's result) and the jobs waiting for it, by id, at most `limit` of each. */
export async function jobDependencyGraph(db: Db, p: { id: number; limit: number }): Promise<JobDependencyGraph> {
  const [dependencies, dependents] = await db.batch([
    db.all<DependencyLink>(sql`SELECT j.id AS id, j.queue_name AS queue, j.status AS status, e.state AS state,
        CASE WHEN j.status = 'completed' THEN j.result END AS result, j.last_error AS lastError, j.updated_at AS updatedAt, ${linkedJobColumns}
      FROM job_dependencies e JOIN jobs j ON j.id = e.dependency_id WHERE e.dependent_id = ${p.id} ORDER BY j.id LIMIT ${p.limit}`),
    db.all<DependencyLink>(sql`SELECT j.id AS id, j.queue_name AS queue, j.status AS status, e.state AS state,
        NULL AS result, j.last_error AS lastError, j.updated_at AS updatedAt, ${linkedJobColumns}
      FROM job_dependencies e JOIN jobs j ON j.id = e.dependent_id WHERE e.dependency_id = ${p.id} ORDER BY j.id LIMIT ${p.limit}`),
  ]);
  return { dependencies: dependencies as DependencyLink[], dependents: dependents as DependencyLink[] };
}
