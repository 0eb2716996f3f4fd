/**
 * dependencyCascadesOnce: the maintenance pass's share of the failure
 * cascades owed (src/db/store/dependency-cascades.ts). A cascade is owed
 * from the commit of the failure, cancel or retry that made it, written in
 * the database, so the pass finds what no process is stepping: a server
 * stopped mid-cascade, a failure written by another process, a Workers
 * isolate that answered before its cascade was done. At most
 * PASS_CASCADE_STEPS steps per pass, each bounded (LEASEHOLD_CASCADE_STEP_ROWS),
 * with the event loop given back between them; a long-running server's
 * engine goes on with what is left after its pass (src/engine/engine.ts).
 */
import type { Config } from '../core/config.ts';
import type { JobStore } from '../db/store/port.ts';

/** Steps one pass takes at most. */
export const PASS_CASCADE_STEPS = 20;

export interface CascadesReport {
  /** Steps this pass took. */
  steps: number;
  /** Edges those steps settled. */
  edges: number;
  /** Cascades still owed after them. */
  owed: number;
}

/**
 * One turn of the event loop: what is waiting (requests, their I/O) runs
 * first. setImmediate where the runtime has it (Node, Bun, Deno: after the
 * I/O the turn polled), a zero timer elsewhere (Workers).
 */
const immediate = (globalThis as { setImmediate?: (fn: () => void) => unknown }).setImmediate;
export const nextTurn = () => new Promise<void>((resolve) => (immediate ? immediate(resolve) : setTimeout(resolve, 0)));

export async function dependencyCascadesOnce(
  store: Pick<JobStore, 'dependencyCascadeStep' | 'dependencyCascadesOwed'>,
  at: number,
  config: Pick<Config, 'cascadeStepRows'>,
  jobsBecameClaimable?: (queue: string, n: number) => void,
): Promise<CascadesReport> {
  let steps = 0;
  let edges = 0;
  while (steps < PASS_CASCADE_STEPS) {
    const step = await store.dependencyCascadeStep({ rows: config.cascadeStepRows, now: at });
    if (!step) break;
    steps++;
    edges += step.edges;
    for (const { queue } of step.released) jobsBecameClaimable?.(queue, 1);
    await nextTurn();
  }
  return { steps, edges, owed: steps === 0 ? 0 : await store.dependencyCascadesOwed() };
}
