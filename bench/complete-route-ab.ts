/**
 * The server's CPU per job on the worker SDK's hot call: POST
 * /api/v1/completions with 100 completions and a claim of 100 (a claimId and
 * an instanceId, as src/worker/http-transport.ts sends it), through the real
 * app (createApp + app.request, no socket), until a seeded queue is drained.
 * Beside it, the engine's call alone (engine.completeThenClaim with the same
 * inputs), so the route's own share (body, validation, conversions, the
 * answer's JSON) is the difference.
 *
 * The client's side of the call in this process (JSON.stringify of the
 * request, JSON.parse of the answer) is timed apart and taken off the route's
 * figure. What is left is the server's JS plus the engine's.
 *
 * Compare code versions inside one pinned process: with ROUTE_AB_BASE set to
 * another checkout's root (e.g. `git archive <commit> src | tar -x -C
 * /tmp/base` and a node_modules link there), its src runs as the variants
 * `base-route` and `base-engine`, taking turns with this tree's call by call (tsx compiles
 * its .tsx with this tree's settings only when a tsconfig includes it: point
 * TSX_TSCONFIG_PATH at one that extends ours and adds `/tmp/base/src`). The
 * VM's vCPUs run at different speeds, so pin:
 *
 *   taskset -c 1 npx tsx bench/complete-route-ab.ts [rounds=5] [jobs=20000]
 *   ROUTE_AB_BASE=/tmp/base taskset -c 1 npx tsx bench/complete-route-ab.ts 7
 *   ROUTE_AB_ONLY=route taskset -c 1 node --import tsx --cpu-prof bench/complete-route-ab.ts 3
 *
 * Prints each variant's µs of process CPU per job for every round (all its
 * calls, and its median call), their medians, and the route's share (route
 * - engine).
 */
import { abTrees, checkoutServer, printRouteShares } from './ab-trees.ts';
import { check, machineInfo, median, now, openTempDb, seedPending } from './lib.ts';

const ROUNDS = Number(process.argv[2] ?? 5);
const JOBS = Number(process.argv[3] ?? 20_000);
const BATCH = 100;
const QUEUE = 'bench';
const WORKER = 'bench-host-4242-3f9c2a';
const INSTANCE = '5e0b7c1d9a8f4e21';

/** What a variant needs from a checkout's src: its engine and app over a database. */
const loadTree = checkoutServer;

type Tree = Awaited<ReturnType<typeof loadTree>>;
interface Held {
  id: string;
  lockToken: string;
}

/**
 * One variant's queue, drained a call at a time: `step()` makes one call and
 * answers the µs of process CPU it took (for the route, less the client's JSON
 * work), or undefined once the queue is empty.
 */
interface Drain {
  step(): Promise<number | undefined>;
  done(): void;
}

async function seeded(build: Tree) {
  const db = await openTempDb('route-ab');
  await seedPending(db.client, QUEUE, JOBS);
  const { engine, app } = build(db.db);
  const held: Held[] = (await engine.claim({ queue: QUEUE, limit: BATCH, workerId: WORKER, instanceId: INSTANCE })).jobs;
  return { db, engine, app, held };
}

/** Through POST /completions, as the SDK's HTTP transport sends it. */
async function routeDrain(build: Tree): Promise<Drain> {
  const { db, app, held: first } = await seeded(build);
  let held = first;
  let calls = 0;
  return {
    async step() {
      if (held.length === 0) return undefined;
      const cpu0 = process.cpuUsage();
      const t0 = now();
      const body = JSON.stringify({
        workerId: WORKER,
        instanceId: INSTANCE,
        results: held.map((x) => ({ id: x.id, lockToken: x.lockToken, result: null })),
        claim: { queue: QUEUE, limit: BATCH, claimId: `${INSTANCE}-${++calls}` },
      });
      // As node:http sends it: the length declared (src/api/body-limit.ts reads it).
      const headers = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) };
      let clientMs = now() - t0;
      const res = await app.request('/api/v1/completions', { method: 'POST', headers, body });
      const text = await res.text();
      const t1 = now();
      const answer = JSON.parse(text) as { results: { ok: boolean }[]; jobs: Held[] };
      clientMs += now() - t1;
      const cpu = process.cpuUsage(cpu0);
      check(res.status === 200, `completions answered ${res.status}: ${text.slice(0, 300)}`);
      check(answer.results.length === held.length && answer.results.every((r) => r.ok), 'every completion accepted');
      held = answer.jobs;
      return cpu.user + cpu.system - clientMs * 1000;
    },
    done: () => db.done(),
  };
}

/** Through engine.completeThenClaim, with the inputs the route gives it. */
async function engineDrain(build: Tree): Promise<Drain> {
  const { db, engine, held: first } = await seeded(build);
  let held = first;
  let calls = 0;
  return {
    async step() {
      if (held.length === 0) return undefined;
      const cpu0 = process.cpuUsage();
      const r = await engine.completeThenClaim({
        workerId: WORKER,
        instanceId: INSTANCE,
        results: held.map((x) => ({ id: Number(x.id), lockToken: x.lockToken, result: null })),
        claim: { queue: QUEUE, limit: BATCH, claimId: `${INSTANCE}-${++calls}` },
      });
      const cpu = process.cpuUsage(cpu0);
      check((r.answers as { ok: boolean }[]).every((a) => a.ok), 'every completion accepted');
      held = r.claimed;
      return cpu.user + cpu.system;
    },
    done: () => db.done(),
  };
}

const trees = await abTrees(process.env.ROUTE_AB_BASE, loadTree);
// ROUTE_AB_ONLY=route (or engine): that variant alone, e.g. under --cpu-prof.
const only = process.env.ROUTE_AB_ONLY;
const variants = trees
  .flatMap(([prefix, tree]) => [
    [`${prefix}route`, () => routeDrain(tree)],
    [`${prefix}engine`, () => engineDrain(tree)],
  ])
  .filter(([name]) => !only || (name as string).endsWith(only)) as [string, () => Promise<Drain>][];

/**
 * A round: every variant drains its own fresh queue, the variants taking
 * turns call by call (so a change in the machine's load meets them all
 * alike); each one's CPU per job.
 */
async function round(): Promise<{ mean: number[]; mid: number[] }> {
  const drains = await Promise.all(variants.map(([, open]) => open()));
  const calls = drains.map(() => [] as number[]);
  try {
    for (let live = true; live; ) {
      live = false;
      for (const [i, d] of drains.entries()) {
        const us = await d.step();
        if (us === undefined) continue;
        calls[i]!.push(us);
        live = true;
      }
    }
  } finally {
    for (const d of drains) d.done();
  }
  // The mean counts everything (a collection included); the median call is
  // less shaken by what else the machine runs.
  return { mean: calls.map((xs) => xs.reduce((a, b) => a + b, 0) / JOBS), mid: calls.map((xs) => median(xs) / BATCH) };
}

const info = machineInfo();
console.log(`${info.cpu}, ${info.nproc} vCPUs, node ${info.node}; ${JOBS} jobs per drain, ${BATCH} per call, ${ROUNDS} rounds`);
// One unreported round first: compiled code, prepared statements.
await round();
const res = new Map(variants.map(([name]) => [name, [] as number[]]));
const mid = new Map(variants.map(([name]) => [name, [] as number[]]));
for (let r = 0; r < ROUNDS; r++) {
  const got = await round();
  for (const [i, [name]] of variants.entries()) {
    res.get(name)!.push(got.mean[i]!);
    mid.get(name)!.push(got.mid[i]!);
  }
}
const fmt = (xs: number[], digits = 1) => xs.map((x) => x.toFixed(digits)).join(' ');
for (const [name, xs] of res) console.log(`${name.padEnd(12)} µs CPU/job: ${fmt(xs)}  median ${median(xs).toFixed(1)}`);
for (const [name, xs] of mid) console.log(`${name.padEnd(12)} median call, µs CPU/job: ${fmt(xs)}  median ${median(xs).toFixed(1)}`);
if (!only) printRouteShares(res, trees.map(([prefix]) => prefix), 1);
if (trees.length === 2 && !only) {
  for (const [what, m] of [['mean', res], ['median call', mid]] as const) {
    const ratio = (name: string) => m.get(name)!.map((x, i) => x / m.get(`base-${name}`)![i]!);
    console.log(`this / base per round (${what}): route ${fmt(ratio('route'), 3)} (median ${median(ratio('route')).toFixed(3)}), engine ${fmt(ratio('engine'), 3)} (median ${median(ratio('engine')).toFixed(3)})`);
  }
}
