/**
 * What-if tuning for one queue, written once for the API, the dashboard and
 * (through the API) the CLI: the candidate's check (each field's range, as
 * the OpenAPI document says, then the heartbeat under the lease), then the
 * window's evidence replayed against the queue's settings today and the
 * candidate (src/core/what-if.ts). A candidate field left out keeps today's
 * value. And the recommendation with the last hour's evidence, as /tuning
 * and the tuning page show it.
 */
import type { Now } from '../core/clock.ts';
import type { Config } from '../core/config.ts';
import { invalid, LeaseholdError } from '../core/errors.ts';
import { recommendTuning, type QueueTuning } from '../core/tuning.ts';
import { obj, optional, queryInt, type Infer } from '../core/validate.ts';
import { replayWhatIf, whatIfProblem, WHAT_IF_DEFAULT_WINDOW_MS, WHAT_IF_MAX_WINDOW_MS, type LeaseSettings, type WhatIfReport } from '../core/what-if.ts';
import type { JobStore, MetricsSnapshot } from '../db/store/port.ts';

const HOUR_MS = 3_600_000;

/**
 * A candidate as query text (the API's query string, the dashboard's GET
 * form): each field left out keeps the queue's value today. A bad field is
 * `invalid_request` naming it.
 */
export const whatIfQuery = (maxLeaseMs: number) =>
  obj({
    leaseMs: optional(queryInt({ min: 1, max: maxLeaseMs, description: "the candidate lease, ms (default: the queue's)" })),
    graceMs: optional(queryInt({ min: 0, max: maxLeaseMs, description: "the candidate grace, ms (default: the queue's)" })),
    heartbeatMs: optional(queryInt({ min: 1, max: maxLeaseMs, description: "the candidate heartbeat interval, ms, under the lease (default: the queue's)" })),
    windowMs: optional(queryInt({ min: 60_000, max: WHAT_IF_MAX_WINDOW_MS, description: 'how far back to replay, ms (default 1 h; the evidence is kept a day)' })),
  });

export type WhatIfQuery = Infer<ReturnType<typeof whatIfQuery>>;

/**
 * One queue's replay. `snapshot`: one the caller already read (the
 * dashboard's, for the queue's settings); else one is read at `now`.
 * Refuses an unknown queue (not_found) and a candidate whose heartbeat is
 * not under its lease (invalid_request naming heartbeatMs), reading no
 * evidence.
 */
export async function whatIfForQueue(
  deps: { store: JobStore; config: Config },
  p: { queue: string; candidate: Partial<LeaseSettings>; windowMs?: number | undefined; now: Now; snapshot?: MetricsSnapshot },
): Promise<WhatIfReport> {
  const m = p.snapshot ?? (await deps.store.metricsSnapshot({ now: p.now, config: deps.config }));
  const q = m.queues.find((x) => x.queue === p.queue);
  if (!q) throw new LeaseholdError('not_found', `no queue is named ${p.queue}`, 'queue');
  const current: LeaseSettings = { leaseMs: q.settings.leaseMs, graceMs: q.settings.graceMs, heartbeatMs: q.settings.heartbeatMs };
  const candidate: LeaseSettings = { ...current, ...definedOnly(p.candidate) };
  const problem = whatIfProblem(candidate);
  if (problem) throw invalid(problem.field, problem.message);
  const window = { sinceMs: m.now - (p.windowMs ?? WHAT_IF_DEFAULT_WINDOW_MS), untilMs: m.now + 1 };
  const evidence = await deps.store.tuningEvidenceRead({ queue: p.queue, ...window });
  return replayWhatIf(evidence, { queue: p.queue, window, current, candidate });
}

/** The recommendation per queue from a snapshot and the last hour's evidence (every queue's, one read). */
export async function tuningWithEvidence(store: JobStore, m: MetricsSnapshot): Promise<QueueTuning[]> {
  const evidence = await store.tuningEvidenceRead({ sinceMs: m.now - HOUR_MS, untilMs: m.now + 1 });
  return recommendTuning(m, {}, evidence);
}

function definedOnly(c: Partial<LeaseSettings>): Partial<LeaseSettings> {
  const out: Partial<LeaseSettings> = {};
  for (const k of ['leaseMs', 'graceMs', 'heartbeatMs'] as const) if (c[k] !== undefined) out[k] = c[k];
  return out;
}
