/**
 * Starting a canary requeue, written once for the API, the dashboard and
 * (through the API) the CLI: freeze the jobs, start the run, take its first
 * step at once (guarded like the maintenance pass's, so a pass running now
 * takes it once with us). Later steps are the pass's (src/maintenance/canary.ts).
 * With nothing to take it starts nothing: a 409 conflict that says so.
 */
import { CANARY_MAX_JOBS, canaryDefaults, canaryNothingToTakeText, type CanaryOptions } from '../core/canary.ts';
import { LeaseholdError } from '../core/errors.ts';
import type { Now } from '../core/clock.ts';
import type { Config } from '../core/config.ts';
import type { Alongside, AuditActor, CanaryEventRecord, CanaryRunRecord, CanaryStepRecord, JobStore } from '../db/store/port.ts';
import { advanceCanaryRun } from '../maintenance/canary.ts';

/** The options a caller gave over the defaults (a heartbeat counts as late past one interval plus the grace). */
export function canaryOptions(config: Config, given: Partial<CanaryOptions> & { first: number }): CanaryOptions {
  const options: CanaryOptions = { ...canaryDefaults(config), first: given.first };
  for (const k of ['growth', 'windowMs', 'maxFailures', 'maxStaleWrites', 'maxDuplicates', 'maxHeartbeatLagMs'] as const) {
    if (given[k] !== undefined) options[k] = given[k];
  }
  return options;
}

export async function startCanary(
  deps: { store: JobStore; config: Config; jobsBecameClaimable?: (queue: string, n: number) => void },
  p: { queue: string; force: boolean; options: CanaryOptions; limit?: number | undefined; by: AuditActor; reason: string; now: Now; also?: Pick<Alongside, 'formNonce'> | undefined },
): Promise<{ run: CanaryRunRecord & { remaining: number }; steps: CanaryStepRecord[]; events: CanaryEventRecord[] }> {
  const { store, config } = deps;
  const jobIds = await store.canaryRunSelect({ queue: p.queue, force: p.force, now: p.now, rules: config, limit: p.limit ?? CANARY_MAX_JOBS });
  // The jobs a dry run listed may be gone by now (the reaper took them, their owner completed them).
  if (jobIds.length === 0) throw new LeaseholdError('conflict', canaryNothingToTakeText(p.queue, p.force), 'queue');
  const started = await store.canaryRunStart({ ...p.options, queue: p.queue, force: p.force, jobIds, by: p.by, reason: p.reason, now: p.now, ...(p.also ? { also: p.also } : {}) });
  const at = typeof p.now === 'number' ? p.now : await store.readNow();
  const run = (await store.canaryRunRead({ id: started.id }))!.run;
  await advanceCanaryRun(store, run, at, config, deps.jobsBecameClaimable);
  return (await store.canaryRunRead({ id: started.id }))!;
}
