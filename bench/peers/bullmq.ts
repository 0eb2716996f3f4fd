/**
 * BullMQ 6 on a local Redis, as ../shared/peers-bench runs it: Queue.add (8 in
 * flight) or addBulk (chunks of 1,000), then a Worker at concurrency 8 with
 * the library's defaults (attempts 1, completed jobs kept); the clock stops
 * at the N-th `completed` event, which BullMQ emits after the job is moved to
 * completed in Redis. Each run uses its own queue and obliterates it after.
 */
import { Queue, Worker } from 'bullmq';
import { idleLatency, startClock } from './latency.ts';
import type { RedisTarget } from './redis.ts';
import { deferred, enqueueChunks, enqueueSingle, now, rates, tally, type PeerRun, type PeersSizes } from './workload.ts';

async function withQueue<T>(redis: RedisTarget, fn: (queue: Queue, name: string) => Promise<T>): Promise<T> {
  const name = `leasehold-peers-${process.pid}-${Date.now()}`;
  const queue = new Queue(name, { connection: redis.connection });
  await queue.waitUntilReady();
  try {
    return await fn(queue, name);
  } finally {
    await queue.obliterate({ force: true });
    await queue.close();
  }
}

export function bullmq(s: PeersSizes, redis: RedisTarget): Promise<PeerRun> {
  return withQueue(redis, async (queue, name) => {
    const t0 = now();
    await enqueueSingle(s.jobs, s.concurrency, (i) => queue.add('job', { i }));
    const t1 = now();
    const seen = tally('bullmq', s.jobs);
    const done = deferred();
    let completed = 0;
    let t3 = 0;
    const worker = new Worker<{ i: number }>(name, async (job) => seen.add(job.data.i), { connection: redis.connection, concurrency: s.concurrency, autorun: false });
    worker.on('completed', () => {
      if (++completed === s.jobs) {
        t3 = now();
        done.resolve();
      }
    });
    worker.on('failed', (job, err) => done.reject(new Error(`bullmq job ${job?.id} failed: ${err}`)));
    await worker.waitUntilReady();
    const t2 = now();
    const running = worker.run();
    await done.promise;
    await worker.close();
    await running;
    const counts = await queue.getJobCounts('completed', 'wait', 'active', 'failed', 'delayed');
    seen.check(`redis: ${JSON.stringify(counts)}`);
    if (counts.completed !== s.jobs) throw new Error(`bullmq: Redis has ${JSON.stringify(counts)}, expected ${s.jobs} completed`);
    return rates(s.jobs, t0, t1, t2, t3);
  });
}

/** addBulk in chunks of 1,000 (enqueue only). */
export function bullmqBulk(s: PeersSizes, redis: RedisTarget): Promise<PeerRun> {
  return withQueue(redis, async (queue) => {
    const t0 = now();
    const added = await enqueueChunks(s.jobs, s.bulkChunk, async (ids) => (await queue.addBulk(ids.map((i) => ({ name: 'job', data: { i } })))).length);
    const t1 = now();
    const waiting = await queue.getWaitingCount();
    if (added !== s.jobs || waiting !== s.jobs) throw new Error(`bullmq bulk: addBulk says ${added} added, Redis has ${waiting} waiting`);
    return { enqueuePerSec: (s.jobs / (t1 - t0)) * 1000 };
  });
}

/** One job at a time into an idle Worker (default options: concurrency 1, blocking fetch). */
export function bullmqLatency(s: PeersSizes, redis: RedisTarget): Promise<PeerRun> {
  return withQueue(redis, async (queue, name) => {
    const clock = startClock();
    const worker = new Worker<{ i: number }>(name, async (job) => clock.mark(job.data.i), { connection: redis.connection });
    await worker.waitUntilReady();
    try {
      return await idleLatency(s.latencyJobs, (i) => queue.add('job', { i }), clock.started);
    } finally {
      await worker.close();
    }
  });
}
