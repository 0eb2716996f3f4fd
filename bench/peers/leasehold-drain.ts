/**
 * Processing, the same for both leasehold rows (over HTTP and in-process): a
 * worker at the workload's concurrency with a no-op handler that tallies
 * `i`, timed from start() to the N-th `completed` event (which comes after
 * the store accepted the completion), then closed.
 */
import type { Worker } from '../../src/worker/index.ts';
import { deferred, now, tally, type PeersSizes } from './workload.ts';

export const quiet = { info() {}, warn() {}, error() {} };

type MakeWorker = (handler: (ctx: { job: { payload: { i: number } } }) => null) => Worker;

/** Runs the worker `make` builds until every job completed; its start and end times, and the tally to check. */
export async function drainWithWorker(system: string, s: PeersSizes, make: MakeWorker) {
  const seen = tally(system, s.jobs);
  const done = deferred();
  let completed = 0;
  let t3 = 0;
  const worker = make((ctx) => {
    seen.add(ctx.job.payload.i);
    return null;
  });
  worker.on('completed', () => {
    if (++completed === s.jobs) {
      t3 = now();
      done.resolve();
    }
  });
  const t2 = now();
  worker.start();
  await done.promise;
  await worker.close();
  return { t2, t3, seen };
}
