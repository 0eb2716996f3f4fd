/**
 * leasehold embedded, as a user embeds it (src/embedded/leasehold.ts):
 * openLeasehold on a fresh database file, `enqueue` calls (8 in flight), and
 * `createWorker` on the in-process transport at concurrency 8 with the SDK's
 * default options (plus handleSignals false and a silent logger). No reaper
 * timer: nothing here can expire, and plainjob's equivalent is not timed either.
 */
import { openLeasehold } from '../../src/embedded/leasehold.ts';
import { tempDb } from '../lib.ts';
import { statusCounts } from './leasehold-sdk.ts';
import { deferred, enqueueSingle, now, rates, tally, type PeerRun, type PeersSizes } from './workload.ts';

const QUEUE = 'peers';
const quiet = { info() {}, warn() {}, error() {} };

export async function leaseholdInProcess(s: PeersSizes): Promise<PeerRun> {
  const tmp = tempDb('peers-inprocess');
  try {
    const lh = await openLeasehold({ databaseUrl: tmp.url });
    let result: PeerRun;
    try {
      const t0 = now();
      await enqueueSingle(s.jobs, s.concurrency, (i) => lh.enqueue(QUEUE, { i }));
      const t1 = now();
      const seen = tally('leasehold in-process', s.jobs);
      const done = deferred();
      let completed = 0;
      let t3 = 0;
      const worker = lh.createWorker<{ i: number }>({
        queue: QUEUE,
        concurrency: s.concurrency,
        handler: (ctx) => {
          seen.add(ctx.job.payload.i);
          return null;
        },
        handleSignals: false,
        logger: quiet,
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
      seen.check();
      result = rates(s.jobs, t0, t1, t2, t3);
    } finally {
      lh.close();
    }
    const counts = await statusCounts(tmp.url);
    if (counts.completed !== s.jobs) throw new Error(`leasehold in-process: store has ${JSON.stringify(counts)}, expected ${s.jobs} completed`);
    return result;
  } finally {
    tmp.remove();
  }
}
