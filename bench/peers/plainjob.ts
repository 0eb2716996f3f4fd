/**
 * plainjob on better-sqlite3, as ../shared/peers-bench runs it: defineQueue
 * (which sets WAL, synchronous=NORMAL, busy_timeout itself) on a fresh file,
 * queue.add back to back (it is synchronous), then 8 defineWorker loops (a
 * plainjob worker runs one job at a time) with a logger that drops
 * debug/info (the default logs to console several times per job). The clock
 * stops at the N-th onCompleted, which plainjob calls after its UPDATE.
 * better-sqlite3 is a native module that npm ci does not compile here (see
 * docs/benchmarks.md), so loading it is checked first.
 */
import { join } from 'node:path';
import { tempDb } from '../lib.ts';
import { deferred, enqueueSingle, now, rates, tally, type PeerRun, type PeersSizes } from './workload.ts';

// better-sqlite3 ships no types; the bench only needs its constructor.
type Database = new (path: string) => { prepare(sql: string): { get(): unknown }; close(): void };

/** better-sqlite3's constructor, or why it cannot be used. */
export async function loadBetterSqlite(): Promise<Database | { skip: string }> {
  const name = 'better-sqlite3';
  try {
    const Database = ((await import(name)) as { default: Database }).default;
    new Database(':memory:').close();
    return Database;
  } catch (err) {
    const message = (err as Error).message;
    const why = /bindings file/.test(message) ? 'its native addon is not built' : `it cannot load (${message.split('\n')[0]})`;
    return { skip: `better-sqlite3: ${why}; npm ci does not compile it, run \`npm run bench:peers-setup\` once (1-3 min)` };
  }
}

export async function plainjob(s: PeersSizes, Database: Database): Promise<PeerRun> {
  const { JobStatus, better, defineQueue, defineWorker } = await import('plainjob');
  const tmp = tempDb('peers-plainjob');
  const db = new Database(join(tmp.dir, 'queue.db'));
  const logger = { error: console.error, warn: console.error, info() {}, debug() {} };
  const queue = defineQueue({ connection: better(db as never), logger });
  try {
    const t0 = now();
    await enqueueSingle(s.jobs, s.concurrency, async (i) => queue.add('bench', { i }));
    const t1 = now();
    const seen = tally('plainjob', s.jobs);
    const done = deferred();
    let completed = 0;
    let t3 = 0;
    const workers = Array.from({ length: s.concurrency }, () =>
      defineWorker(
        'bench',
        async (job) => {
          seen.add((JSON.parse(job.data) as { i: number }).i); // plainjob hands over the serialized payload
        },
        {
          queue,
          logger,
          onCompleted: () => {
            if (++completed === s.jobs) {
              t3 = now();
              done.resolve();
            }
          },
          onFailed: (_job, err) => done.reject(new Error(`plainjob job failed: ${err}`)),
        },
      ),
    );
    const t2 = now();
    for (const w of workers) w.start().catch(done.reject);
    await done.promise;
    await Promise.all(workers.map((w) => w.stop()));
    const doneInDb = queue.countJobs({ type: 'bench', status: JobStatus.Done });
    seen.check(`store: ${doneInDb} done`);
    if (doneInDb !== s.jobs) throw new Error(`plainjob: store has ${doneInDb} done, expected ${s.jobs}`);
    return rates(s.jobs, t0, t1, t2, t3);
  } finally {
    queue.close();
    tmp.remove();
  }
}
