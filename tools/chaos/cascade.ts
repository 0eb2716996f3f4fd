/**
 * The chaos run's large flow cascade (plan: flow_cascade): what one worker
 * token may build within the bounds, through the worker API, on a queue no
 * worker serves: a root and `dependents` jobs in flows of 100, each waiting
 * for the 10 jobs before it (the root for the first ones), under policy
 * 'fail'. The harness claims the root and fails it for good, then waits
 * (bounded) until its cascade is no longer owed (GET /jobs/:id, `cascade`),
 * whatever other faults land meanwhile: a server killed midway must leave
 * the rest in the database for the next one to finish. The verdict reads
 * the queue afterwards: root failed, so every dependent failed.
 */
export interface CascadeRun {
  queue: string;
  /** The root's id, once stored. */
  root?: string;
  /** The root's failure was answered 200. */
  failed: boolean;
  /** Ms from the failure's answer until no cascade was owed; undefined when not seen. */
  settledMs?: number;
  error?: string;
}

export interface CascadeOptions {
  /** A server that is up now, if any. */
  serverUrl: () => string | undefined;
  workerToken: string;
  queue: string;
  dependents: number;
}

const FLOW = 100;
const FAN_IN = 10;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function runFlowCascade(o: CascadeOptions): Promise<CascadeRun> {
  const run: CascadeRun = { queue: o.queue, failed: false };
  /** One call, retried while no server answers (a restart), at most 30 s in all. */
  async function call(method: string, path: string, body?: unknown): Promise<any> {
    const until = Date.now() + 30_000;
    for (;;) {
      const url = o.serverUrl();
      try {
        if (!url) throw new Error('no server up');
        const res = await fetch(`${url}/api/v1${path}`, {
          method,
          headers: { authorization: `Bearer ${o.workerToken}`, 'content-type': 'application/json' },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          signal: AbortSignal.timeout(10_000),
        });
        const json = await res.json();
        if (res.status >= 300) throw Object.assign(new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json).slice(0, 200)}`), { final: res.status < 500 });
        return json;
      } catch (err) {
        // Only a write that cannot have been stored is sent again: a flow is all or none, a claim takes nothing twice here.
        if ((err as { final?: boolean }).final || Date.now() > until) throw err;
        await sleep(200);
      }
    }
  }
  try {
    run.root = (await call('POST', '/flows', { jobs: [{ queue: o.queue, payload: { root: true }, maxAttempts: 1 }] })).jobs[0].id as string;
    const ids: string[] = [];
    for (let start = 0; start < o.dependents; start += FLOW) {
      const jobs = [];
      for (let k = start; k < Math.min(o.dependents, start + FLOW); k++) {
        const dependsOn = k < FAN_IN ? [run.root] : [];
        for (let d = Math.max(0, k - FAN_IN); d < k; d++) dependsOn.push(d >= start ? `#${d - start}` : ids[d]!);
        jobs.push({ queue: o.queue, payload: { k }, dependsOn });
      }
      ids.push(...((await call('POST', '/flows', { jobs })).jobs as { id: string }[]).map((j) => j.id));
    }
    const [claimed] = (await call('POST', `/queues/${o.queue}/claim`, { workerId: 'chaos-cascade', limit: 1 })).jobs as { id: string; lockToken: string }[];
    if (claimed?.id !== run.root) throw new Error(`claimed ${claimed?.id ?? 'nothing'} instead of the root ${run.root}`);
    await call('POST', `/jobs/${run.root}/fail`, { workerId: 'chaos-cascade', lockToken: claimed.lockToken, error: 'chaos: root failed', retryable: false });
    run.failed = true;
    const from = Date.now();
    while (Date.now() - from < 60_000) {
      const { cascade } = await call('GET', `/jobs/${run.root}`);
      if (cascade === null) {
        run.settledMs = Date.now() - from;
        break;
      }
      await sleep(100);
    }
  } catch (err) {
    run.error = err instanceof Error ? err.message : String(err);
  }
  return run;
}
