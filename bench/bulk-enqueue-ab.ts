/**
 * The CPU per job of a bulk enqueue over HTTP (client.enqueueMany -> POST
 * /api/v1/queues/:queue/jobs with {jobs: [...]}), split by side, 1,000 jobs
 * of payload {i} a call (the peers row "client.enqueueMany, chunks of
 * 1,000"):
 * - `client`: client.enqueueMany on a fetch that answers from memory (a real
 *   answer of the route, read once at the start): the client's own work per
 *   job, building the request body (wireJob, JSON.stringify) and parsing the
 *   answer (JSON.parse), with no socket and no server;
 * - `route`: the same body through the real app (createApp + app.request, no
 *   socket) on a fresh migrated temp file per round, answer read as text:
 *   the server's JSON, validation, conversions and the engine's work;
 * - `engine`: engine.enqueueMany(..., { summaries: true }) with the jobs the
 *   route gives it, on its own fresh file: the engine and store alone, so the
 *   route's own share is `route - engine`.
 *
 * Compare code versions inside one pinned process: with BULK_AB_BASE set to
 * another checkout's root (e.g. `git archive <commit> src | tar -x -C
 * /tmp/base` and a node_modules link there), its src runs as `base-client`,
 * `base-route` and `base-engine`, taking turns with this tree's call by call.
 * The VM's vCPUs run at different speeds, so pin:
 *
 *   taskset -c 1 npx tsx bench/bulk-enqueue-ab.ts [rounds=7] [calls=20]
 *   BULK_AB_BASE=/tmp/base taskset -c 1 npx tsx bench/bulk-enqueue-ab.ts 9
 *   BULK_AB_ONLY=route taskset -c 1 node --import tsx --cpu-prof bench/bulk-enqueue-ab.ts 3
 *
 * Prints each variant's µs of process CPU per job for every round (the median
 * call of the round), their medians, the route's share, and with a base, this
 * tree / base per round.
 */
import { abTrees, checkoutModule, checkoutServer, printRouteShares } from './ab-trees.ts';
import { check, machineInfo, median, openTempDb } from './lib.ts';

const ROUNDS = Number(process.argv[2] ?? 7);
const CALLS = Number(process.argv[3] ?? 20);
const BATCH = 1000;
const QUEUE = 'bulk';

/** What a variant needs from a checkout's src. */
async function loadTree(root: string) {
  const [server, client] = await Promise.all([checkoutServer(root), checkoutModule(root, 'client/client.ts')]);
  return {
    server,
    /** A client whose fetch answers `answer` (a bulk's 201) without a socket. */
    client(answer: string) {
      // Bytes, as a socket delivers them: encoding the text is not the client's work.
      const bytes = new TextEncoder().encode(answer);
      const fetch = async () => new Response(bytes, { status: 201, headers: { 'content-type': 'application/json' } });
      return client.createClient({ url: 'http://bench.invalid', fetch }) as { enqueueMany(queue: string, items: { payload: unknown }[]): Promise<{ id: string }[]> };
    },
  };
}

type Tree = Awaited<ReturnType<typeof loadTree>>;

/** One variant's calls: `step()` makes one call of BATCH jobs and answers its µs of process CPU. */
interface Runner {
  step(): Promise<number>;
  done(): void;
}

let call = 0;
/** BATCH fresh items, as a producer hands them to enqueueMany. */
const items = () => Array.from({ length: BATCH }, (_, i) => ({ payload: { i: call * BATCH + i } }));
const cpuSince = (cpu0: NodeJS.CpuUsage) => {
  const cpu = process.cpuUsage(cpu0);
  return cpu.user + cpu.system;
};

async function clientRunner(tree: Tree, answer: string): Promise<Runner> {
  const client = tree.client(answer);
  return {
    async step() {
      const input = items();
      const cpu0 = process.cpuUsage();
      const out = await client.enqueueMany(QUEUE, input);
      const us = cpuSince(cpu0);
      check(out.length === BATCH, 'one answer per item');
      return us;
    },
    done() {},
  };
}

async function routeRunner(tree: Tree): Promise<Runner> {
  const db = await openTempDb('bulk-ab');
  const { app } = tree.server(db.db);
  return {
    async step() {
      // As the client sends it (node:http declares the length; src/api/body-limit.ts reads it).
      const body = JSON.stringify({ jobs: items() });
      const headers = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) };
      const cpu0 = process.cpuUsage();
      const res = await app.request(`/api/v1/queues/${QUEUE}/jobs`, { method: 'POST', headers, body });
      const text = await res.text();
      const us = cpuSince(cpu0);
      check(res.status === 201, `bulk answered ${res.status}: ${text.slice(0, 300)}`);
      return us;
    },
    done: () => db.done(),
  };
}

async function engineRunner(tree: Tree): Promise<Runner> {
  const db = await openTempDb('bulk-ab');
  const { engine } = tree.server(db.db);
  return {
    async step() {
      const jobs = items();
      const cpu0 = process.cpuUsage();
      const out = await engine.enqueueMany(QUEUE, jobs, 'api', { summaries: true });
      const us = cpuSince(cpu0);
      check(out.length === BATCH, 'one answer per job');
      return us;
    },
    done: () => db.done(),
  };
}

const trees = await abTrees(process.env.BULK_AB_BASE, loadTree);

/** A real answer to a bulk of BATCH, from this tree's route: what every client variant parses. */
async function realAnswer(): Promise<string> {
  const db = await openTempDb('bulk-ab-answer');
  try {
    const res = await trees[0]![1].server(db.db).app.request(`/api/v1/queues/${QUEUE}/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jobs: items() }) });
    check(res.status === 201, 'the answer to copy');
    return await res.text();
  } finally {
    db.done();
  }
}
const answer = await realAnswer();

// BULK_AB_ONLY=route (or client, engine): that variant alone, e.g. under --cpu-prof.
const only = process.env.BULK_AB_ONLY;
const variants = trees
  .flatMap(([prefix, tree]) => [
    [`${prefix}client`, () => clientRunner(tree, answer)],
    [`${prefix}route`, () => routeRunner(tree)],
    [`${prefix}engine`, () => engineRunner(tree)],
  ])
  .filter(([name]) => !only || (name as string).endsWith(only)) as [string, () => Promise<Runner>][];

/** A round: CALLS calls per variant, the variants taking turns call by call; each one's median call, per job. */
async function round(): Promise<number[]> {
  const runners = await Promise.all(variants.map(([, open]) => open()));
  const calls = runners.map(() => [] as number[]);
  try {
    for (let n = 0; n < CALLS; n++) {
      call++;
      for (const [i, r] of runners.entries()) calls[i]!.push(await r.step());
    }
  } finally {
    for (const r of runners) r.done();
  }
  return calls.map((xs) => median(xs) / BATCH);
}

const info = machineInfo();
console.log(`${info.cpu}, ${info.nproc} vCPUs, node ${info.node}; ${CALLS} calls of ${BATCH} jobs per variant per round, ${ROUNDS} rounds`);
// One unreported round first: compiled code, prepared statements.
await round();
const res = new Map(variants.map(([name]) => [name, [] as number[]]));
for (let r = 0; r < ROUNDS; r++) {
  const got = await round();
  for (const [i, [name]] of variants.entries()) res.get(name)!.push(got[i]!);
}
const fmt = (xs: number[], digits = 2) => xs.map((x) => x.toFixed(digits)).join(' ');
for (const [name, xs] of res) console.log(`${name.padEnd(12)} median call, µs CPU/job: ${fmt(xs)}  median ${median(xs).toFixed(2)}`);
if (!only) printRouteShares(res, trees.map(([prefix]) => prefix), 2);
if (trees.length === 2 && !only) {
  for (const name of ['client', 'route', 'engine']) {
    const ratio = res.get(name)!.map((x, i) => x / res.get(`base-${name}`)![i]!);
    console.log(`this / base per round, ${name.padEnd(6)}: ${fmt(ratio, 3)}  median ${median(ratio).toFixed(3)}`);
  }
}
