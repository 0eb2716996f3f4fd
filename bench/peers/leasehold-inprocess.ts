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
import { drainWithWorker, quiet } from './leasehold-drain.ts';
import { enqueueSingle, now, rates, type PeerRun, type PeersSizes } from './workload.ts';

const QUEUE = 'peers';

export async function leaseholdInProcess(s: PeersSizes): Promise<PeerRun> {
  const tmp = tempDb('peers-inprocess');
  try {
    const lh = await openLeasehold({ databaseUrl: tmp.url });
    let result: PeerRun;
    try {
      const t0 = now();
      await enqueueSingle(s.jobs, s.concurrency, (i) => lh.enqueue(QUEUE, { i }));
      const t1 = now();
      const { t2, t3, seen } = await drainWithWorker('leasehold in-process', s, (handler) =>
        lh.createWorker<{ i: number }>({ queue: QUEUE, concurrency: s.concurrency, handler, handleSignals: false, logger: quiet }),
      );
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
