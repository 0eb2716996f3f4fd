/**
 * A large failure cascade against a real `leasehold serve` process: what
 * one worker token may build within the bounds (flows of 100 jobs, 100
 * dependencies each, at most 1,000 jobs waiting for one job), then one
 * normal failure of its root. Job k (of `dependents`, default 31,000, in
 * flows of 100) waits for the 100 jobs before it (the root for the first
 * ones), so failing the root fails all of them under the default policy
 * 'fail', through about 3.1 million edges.
 *
 * Measured from this process (its event loop is not the server's):
 * - the failing call's time (POST /jobs/:id/fail);
 * - the longest gap between /healthz answers, polled every 5 ms from just
 *   before the failure until every dependent is failed;
 * - the whole cascade's time: from the failure until the queue counts show
 *   every dependent failed;
 * - then the time of one more flow of 100 jobs (each waiting for the one
 *   before), with all those jobs failed.
 *
 * `npx tsx bench/flow-cascade.ts [dependents]` (uses bin/leasehold.js: run
 * `npm run build` first).
 */
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { check, fmt, tempDb } from './lib.ts';

const DEPENDENTS = Number(process.argv[2] ?? 31_000);
const FLOW = 100;
const FAN_IN = 100;
const TOKEN = 'bench-worker-token-0123456789';
const ADMIN = 'bench-admin-token-0123456789';
const BIN = process.env.LEASEHOLD_BIN ?? join(import.meta.dirname, '..', 'bin', 'leasehold.js');

const tmp = tempDb('flow-cascade');
const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--database-url', tmp.url], {
  env: { ...process.env, LEASEHOLD_WORKER_TOKEN: TOKEN, LEASEHOLD_ADMIN_TOKEN: ADMIN },
  stdio: ['ignore', 'pipe', 'pipe'],
  // tsx reads the tsconfig of the directory it runs in.
  cwd: join(dirname(BIN), '..'),
});
const url = await new Promise<string>((resolve, reject) => {
  let out = '';
  const on = (b: Buffer) => {
    out += b.toString();
    const m = /listening on (http:\/\/\S+)/.exec(out);
    if (m) resolve(m[1]!);
  };
  child.stdout!.on('data', on);
  child.stderr!.on('data', on);
  child.once('exit', (code) => reject(new Error(`server exited ${code}: ${out}`)));
});

async function call(method: string, path: string, body?: unknown, token = TOKEN): Promise<any> {
  const res = await fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const json = await res.json();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

try {
  const built = performance.now();
  const root = (await call('POST', '/api/v1/queues/root/jobs', { payload: {}, maxAttempts: 1 })).job;
  const ids: string[] = [];
  for (let start = 0; start < DEPENDENTS; start += FLOW) {
    const jobs = [];
    for (let k = start; k < Math.min(DEPENDENTS, start + FLOW); k++) {
      const dependsOn: string[] = [];
      if (k < FAN_IN) dependsOn.push(String(root.id));
      for (let d = Math.max(0, k - FAN_IN + (k < FAN_IN ? 1 : 0)); d < k; d++) dependsOn.push(d >= start ? `#${d - start}` : ids[d]!);
      jobs.push({ queue: 'dep', payload: { k }, dependsOn });
    }
    const stored = (await call('POST', '/api/v1/flows', { jobs })).jobs as { id: string }[];
    ids.push(...stored.map((j) => j.id));
  }
  console.log(`built ${DEPENDENTS} dependents in ${DEPENDENTS / FLOW} flows in ${fmt((performance.now() - built) / 1000, 1)} s`);

  const [claimed] = (await call('POST', '/api/v1/queues/root/claim', { workerId: 'bench', limit: 1 })).jobs;
  check(claimed?.id === root.id, 'claimed the root');

  let polling = true;
  let lastAnswer = performance.now();
  let longestGap = 0;
  const poller = (async () => {
    while (polling) {
      // A connection the server dropped while its loop was blocked counts as no answer: the gap runs on.
      const answered = await fetch(`${url}/healthz`).then((r) => r.arrayBuffer()).then(() => true, () => false);
      const t = performance.now();
      if (!answered) continue;
      longestGap = Math.max(longestGap, t - lastAnswer);
      lastAnswer = t;
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  await new Promise((r) => setTimeout(r, 100));
  const failedAt = performance.now();
  await call('POST', `/api/v1/jobs/${root.id}/fail`, { workerId: 'bench', lockToken: claimed.lockToken, error: 'root failed', retryable: false });
  const failCallMs = performance.now() - failedAt;
  let failed = 0;
  while (failed < DEPENDENTS) {
    const queues = (await call('GET', '/api/v1/queues', undefined, ADMIN)).queues as { name: string; counts: Record<string, number> }[];
    failed = queues.find((q) => q.name === "dep")?.counts.failed ?? 0;
    if (process.env.DEBUG) console.log(failed, JSON.stringify(queues.map((q) => [q.name, q.counts])));
    if (failed < DEPENDENTS) await new Promise((r) => setTimeout(r, 20));
  }
  const cascadeMs = performance.now() - failedAt;
  polling = false;
  await poller;
  // A flow of 100 (each job waiting for the one before) with every dependent failed: the enqueue's
  // checks look up the jobs it names, whatever number of jobs failed.
  const flowAt = performance.now();
  await call('POST', '/api/v1/flows', { jobs: Array.from({ length: FLOW }, (_, i) => ({ queue: 'after', payload: { i }, dependsOn: i === 0 ? [] : [`#${i - 1}`] })) });
  const flowAfterFailuresMs = performance.now() - flowAt;
  console.log(JSON.stringify({ dependents: DEPENDENTS, failCallMs: Math.round(failCallMs), longestHealthzGapMs: Math.round(longestGap), cascadeMs: Math.round(cascadeMs), flowAfterFailuresMs: Math.round(flowAfterFailuresMs) }));
} finally {
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  tmp.remove();
}
