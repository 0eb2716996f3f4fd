/**
 * The chaos harness: a real leasehold server (or two) on loopback, a fleet of
 * real worker processes (HTTP transport, some through an in-process TCP
 * proxy), N jobs, and faults injected on a seeded schedule. At the end the
 * verdict comes from the database's audit trail and the workers' own files.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync, type WriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from '@libsql/client';
import { check, type CheckInput, type EffectRow, type EventRow, type FaultRecord, type JobRow, type Line, type Outage, type Report } from './check.ts';
import { clockSpanMs, clockStepsOn, describeFault, DROPPED_CALLS, makePlan, networkSpanMs, type ChaosOptions, type Fault } from './plan.ts';
import { startOperator } from './operator.ts';
import { runFlowCascade } from './cascade.ts';
import { startProxy, type PartitionMode, type Proxy } from './proxy.ts';
import { printSummary } from './summary.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '..', '..');
// The harness is a development tool: it runs from a clone, its workers through tsx.
const BIN = join(ROOT, 'bin', 'leasehold.js');
const WORKER_ARGS = ['--import', 'tsx', join(HERE, 'worker-process.ts')];
const QUEUE = 'chaos';

/** What the proxy does for each partition fault. */
const PARTITION_MODES = {
  partition_stall: 'stall',
  partition_drop: 'drop',
  partition_stall_requests: 'stall_requests',
  partition_stall_answers: 'stall_answers',
} as const satisfies Record<string, PartitionMode>;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Every child we start, so that every exit path kills them all. */
const children = new Set<ChildProcess>();
function killAll() {
  for (const c of children) {
    if (c.exitCode !== null || c.signalCode !== null || c.pid === undefined) continue;
    try {
      c.kill('SIGCONT');
      c.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
}
let exitHooksInstalled = false;
function installExitHooks() {
  if (exitHooksInstalled) return;
  exitHooksInstalled = true;
  process.on('exit', killAll);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(sig, () => {
      killAll();
      process.exit(130);
    });
  }
  process.on('uncaughtException', (err) => {
    console.error('chaos: uncaught', err);
    killAll();
    process.exit(3);
  });
}

interface ServerProc {
  index: number;
  port: number;
  child: ChildProcess | undefined;
  up: boolean;
  starts: number;
}

interface WorkerProc {
  id: string;
  slot: number;
  child: ChildProcess;
  inFlight: Set<string>;
  stopped: boolean;
  exited: Promise<void>;
  dead: boolean;
  /** The harness killed or stopped it on purpose. */
  expectedExit: boolean;
}

export interface RunResult {
  report: Report;
  reportPath: string;
  exitCode: number;
}

export async function runChaos(o: ChaosOptions, out: (line: string) => void = (l) => console.log(l)): Promise<RunResult> {
  installExitHooks();
  const t0 = Date.now();
  const elapsed = () => Date.now() - t0;
  const hardDeadline = t0 + o.durationLimitMs;
  const dir = o.dir ? (mkdirSync(o.dir, { recursive: true }), o.dir) : mkdtempSync(join(tmpdir(), 'leasehold-chaos-'));
  const dbFile = join(dir, 'chaos.db');
  const reportPath = o.jsonPath ? resolve(o.jsonPath) : join(dir, 'report.json');
  const plan = makePlan(o);
  const tm = o.timings;
  const unexpectedExits: string[] = [];
  let stopping = false;

  out(`leasehold chaos — seed ${o.seed} (replay: npm run chaos -- --seed ${o.seed}${o.long ? ' --long' : ''} --jobs ${o.jobs} --workers ${o.workers})`);
  out(`  ${o.jobs} jobs, ${o.workers} workers x ${o.concurrency} slots, ${plan.servers} server(s), proxied slots ${plan.proxiedSlots.join(',')}, horizon ${o.horizonMs / 1000}s, limit ${o.durationLimitMs / 1000}s`);
  out(`  lease ${tm.leaseMs} / heartbeat ${tm.heartbeatMs} / grace ${tm.graceMs} / worker-alive ${tm.workerAliveMs} / max-reap-defer ${tm.maxReapDeferMs} / reaper ${tm.reaperIntervalMs} ms`);
  out(`  directory ${dir}`);
  out(`fault schedule (${plan.faults.length} faults, hash ${plan.faultsHash}):`);
  for (const f of plan.faults) out(`  #${String(f.n).padStart(2)} ${describeFault(f)}`);
  const planned: Record<string, number> = {};
  for (const j of plan.jobs) planned[j.behaviour] = (planned[j.behaviour] ?? 0) + 1;
  out(`handler behaviours (hash ${plan.jobsHash}): ${Object.entries(planned).map(([k, n]) => `${k} ${n}`).join(', ')}`);

  const logs: WriteStream[] = [];
  const log = (name: string) => {
    const s = createWriteStream(join(dir, name), { flags: 'a' });
    logs.push(s);
    return s;
  };

  // ---- servers ------------------------------------------------------------------
  // Tokens, as in production: workers reach the servers through proxies on
  // other ports, which an open (token-less) server refuses as foreign Hosts.
  const workerToken = `chaos-worker-${randomUUID()}`;
  const adminToken = `chaos-admin-${randomUUID()}`;
  const serverArgs = (port: number) => [
    BIN, 'serve', '--port', String(port), '--host', '127.0.0.1', '--database-url', `file:${dbFile}`,
    '--worker-token', workerToken, '--admin-token', adminToken,
    '--lease-ms', String(tm.leaseMs), '--heartbeat-ms', String(tm.heartbeatMs), '--grace-ms', String(tm.graceMs),
    '--worker-alive-ms', String(tm.workerAliveMs), '--max-reap-defer-ms', String(tm.maxReapDeferMs), '--reaper-interval-ms', String(tm.reaperIntervalMs),
    '--backoff-base-ms', String(tm.backoffBaseMs), '--backoff-max-ms', String(tm.backoffMaxMs), '--max-attempts', String(tm.maxAttempts),
    '--max-lost-attempts', String(tm.maxLostAttempts),
  ];
  // The clock steps go through the servers' test-only hook (src/runtime/test-clock-step.ts): an offset every server reads from this file.
  const clockFile = join(dir, 'clock-offset.json');
  const setClockOffset = (offsetMs: number) => writeFileSync(clockFile, JSON.stringify({ offsetMs }));
  setClockOffset(0);
  const serverEnv = clockStepsOn(o) ? { ...process.env, LEASEHOLD_TEST_ONLY_CLOCK_STEP_FILE: clockFile } : process.env;
  const servers: ServerProc[] = Array.from({ length: plan.servers }, (_, index) => ({ index, port: 0, child: undefined, up: false, starts: 0 }));
  const outages: Outage[] = [];

  /** `firstStart`: the run's first start, all at once on the new file; failing it is a violation (then it is tried again, so the run goes on). */
  async function startServer(s: ServerProc, firstStart = false): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const child = spawn(process.execPath, serverArgs(s.port), { stdio: ['ignore', 'pipe', 'pipe'], env: serverEnv });
      children.add(child);
      const sink = log(`server-${s.index}.log`);
      let text = '';
      const url = await new Promise<string | undefined>((resolveUrl) => {
        const timer = setTimeout(() => resolveUrl(undefined), 30_000);
        const onData = (chunk: Buffer) => {
          sink.write(chunk);
          if (text.length < 10_000) text += chunk.toString();
          const m = /listening on (http:\/\/\S+)/.exec(text);
          if (m) {
            clearTimeout(timer);
            resolveUrl(m[1]!);
          }
        };
        child.stdout!.on('data', onData);
        child.stderr!.on('data', onData);
        child.once('exit', () => {
          clearTimeout(timer);
          resolveUrl(undefined);
        });
      });
      child.once('exit', (code, signal) => {
        children.delete(child);
        if (s.child === child && s.up && !stopping) unexpectedExits.push(`server ${s.index} exited with ${signal ?? `code ${code}`}; see server-${s.index}.log`);
      });
      if (url) {
        s.port = Number(new URL(url).port);
        s.child = child;
        s.up = true;
        s.starts++;
        return;
      }
      child.kill('SIGKILL');
      if (firstStart && attempt === 1) unexpectedExits.push(`server ${s.index} failed its first start (at once with the others and leasehold migrate on the new database): ${text.trim().split('\n').at(-1) ?? ''}`);
      if (attempt >= 5 || Date.now() > hardDeadline) throw new Error(`server ${s.index} did not start (attempt ${attempt}):\n${text.slice(-2000)}`);
      await sleep(500 * attempt); // e.g. the port is not free yet
    }
  }
  /** `leasehold migrate` on the run's database, as a deployment's migrate step runs beside its servers. */
  async function migrateAtStart(): Promise<void> {
    const child = spawn(process.execPath, [BIN, 'migrate', '--database-url', `file:${dbFile}`], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let text = '';
    child.stdout!.on('data', (c: Buffer) => (text += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (text += c.toString()));
    const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
    children.delete(child);
    if (code !== 0) unexpectedExits.push(`leasehold migrate exited with code ${code} at the first start: ${text.trim().split('\n').at(-1) ?? ''}`);
  }
  // The first-start race: every server and `leasehold migrate` at once on the new file (a compose file, two units).
  await Promise.all([...servers.map((s) => startServer(s, true)), migrateAtStart()]);
  out(`first start: ${servers.length} server(s) and leasehold migrate at once on the new database${unexpectedExits.length > 0 ? `: ${unexpectedExits.join('; ')}` : ''}`);
  const serverUrl = (i: number) => `http://127.0.0.1:${servers[i]!.port}`;
  out(`server(s) up: ${servers.map((s) => serverUrl(s.index)).join(', ')}`);

  // ---- proxies and workers --------------------------------------------------------
  const proxies = new Map<number, Proxy>();
  for (const slot of plan.proxiedSlots) {
    const server = servers[slot % servers.length]!;
    proxies.set(slot, await startProxy(() => server.port));
  }
  const workerEvents: Record<string, number> = {};
  const unhandledRejections: { worker: string; message: string }[] = [];
  const slots: (WorkerProc | undefined)[] = [];
  const generation: number[] = [];
  const allWorkers: WorkerProc[] = [];

  function spawnWorker(slot: number): WorkerProc {
    generation[slot] = (generation[slot] ?? 0) + 1;
    const id = `w${slot}.${generation[slot]}`;
    const proxy = proxies.get(slot);
    const url = proxy ? `http://127.0.0.1:${proxy.port}` : serverUrl(slot % servers.length);
    const child = spawn(process.execPath, WORKER_ARGS, {
      cwd: ROOT,
      env: { ...process.env, LEASEHOLD_URL: url, LEASEHOLD_WORKER_TOKEN: workerToken, WORKER_ID: id, EFFECTS_FILE: join(dir, `effects-${id}.jsonl`), CONCURRENCY: String(o.concurrency) },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    children.add(child);
    const w: WorkerProc = { id, slot, child, inFlight: new Set(), stopped: false, dead: false, expectedExit: false, exited: new Promise((r) => child.once('exit', () => r())) };
    child.once('exit', (code, signal) => {
      w.dead = true;
      children.delete(child);
      if (!w.expectedExit) unexpectedExits.push(`worker ${w.id} (pid ${child.pid}) exited with ${signal ?? `code ${code}`} at ${fmt(elapsed()).trim()}; see worker-${w.id}.log`);
    });
    const sink = log(`worker-${id}.log`);
    child.stderr!.pipe(sink);
    let buffer = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        let ev: { e?: string; job?: string; message?: string; stack?: string };
        try {
          ev = JSON.parse(line);
        } catch {
          continue;
        }
        if (!ev.e) continue;
        if (ev.e === 'unhandled_rejection') {
          unhandledRejections.push({ worker: w.id, message: `${ev.message} at ${ev.stack}` });
          if (unhandledRejections.length <= 3) out(`  [${fmt(elapsed())}] ${w.id}: unhandled rejection ${ev.message} (${ev.stack})`);
        }
        workerEvents[ev.e] = (workerEvents[ev.e] ?? 0) + 1;
        if (ev.e === 'claimed' && ev.job) w.inFlight.add(ev.job);
        else if ((ev.e === 'completed' || ev.e === 'failed' || ev.e === 'abandoned') && ev.job) w.inFlight.delete(ev.job);
        if (ev.e === 'log_error' || ev.e === 'lease_lost' || ev.e === 'abandoned') sink.write(line + '\n');
      }
    });
    slots[slot] = w;
    allWorkers.push(w);
    return w;
  }
  for (let s = 0; s < o.workers; s++) spawnWorker(s);

  // ---- enqueuing -------------------------------------------------------------------
  const acked = new Map<number, string>();
  let enqueueGaveUp = false;
  const enqueueSpan = Math.max(1_000, (o.horizonMs + networkSpanMs(o) + clockSpanMs(o)) * 0.8);
  const batchSize = Math.max(20, Math.ceil(o.jobs / Math.max(1, Math.floor(enqueueSpan / 200))));
  const enqueuer = (async () => {
    let next = 0;
    let failures = 0;
    while (next < o.jobs) {
      if (Date.now() > hardDeadline) {
        enqueueGaveUp = true;
        return;
      }
      const batch = plan.jobs.slice(next, next + batchSize);
      const wantAt = t0 + 1_000 + (next / o.jobs) * enqueueSpan;
      if (Date.now() < wantAt) await sleep(wantAt - Date.now());
      try {
        const res = await fetch(`${serverUrl(0)}/api/v1/queues/${QUEUE}/jobs`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${workerToken}` },
          body: JSON.stringify({ jobs: batch.map((j) => ({ payload: j, idempotencyKey: `chaos-${o.seed}-${j.i}`, ...(j.timeoutMs ? { timeoutMs: j.timeoutMs } : {}), ...(j.onLost ? { onLost: j.onLost } : {}) })) }),
          signal: AbortSignal.timeout(10_000),
        });
        if (res.status !== 201 && res.status !== 200) throw new Error(`enqueue answered ${res.status}`);
        const body = (await res.json()) as { jobs: { id: string; idempotencyKey: string }[] };
        for (const j of body.jobs) acked.set(Number(j.idempotencyKey.slice(`chaos-${o.seed}-`.length)), j.id);
        next += batch.length;
        failures = 0;
      } catch {
        failures++; // the server may be down: the same batch again, deduplicated by its keys
        await sleep(Math.min(2_000, 100 * 2 ** Math.min(failures, 5)));
      }
    }
  })();

  // ---- the operator: held jobs and canary requeues, through the admin API ------------
  const operator = startOperator({
    serverUrl: () => servers.find((s) => s.up) && serverUrl(servers.find((s) => s.up)!.index),
    adminToken,
    queue: QUEUE,
    holdForMs: 1_500,
    maxCanaries: 5,
    log: (line) => out(`  [${fmt(elapsed())}] ${line}`),
  });

  // ---- faults --------------------------------------------------------------------------
  const records: FaultRecord[] = plan.faults.map((f) => ({ n: f.n, kind: f.kind, target: f.target, plannedAtMs: f.atMs }));
  const pendingFaultWork: Promise<unknown>[] = [];
  let faultsDone = 0;
  const faultCounts: Record<string, number> = {};
  const note = (rec: FaultRecord, what: string) => {
    faultCounts[rec.kind] = (faultCounts[rec.kind] ?? 0) + 1;
    out(`  [${fmt(elapsed())}] fault #${rec.n} ${what}`);
  };

  /** Waits (bounded) for the server to be up and marks the fault's start; undefined (fault skipped) if it never came up. */
  async function serverForFault(s: (typeof servers)[number], rec: FaultRecord) {
    for (let i = 0; i < 100 && !s.up; i++) await sleep(100);
    if (!s.up || !s.child) {
      rec.skipped = `server ${s.index} not up`;
      return undefined;
    }
    rec.wallAt = Date.now();
    rec.atMs = elapsed();
    return { child: s.child, from: rec.wallAt };
  }

  /** The planned behaviour of a job, by the id its enqueue was acknowledged with. */
  const behaviourOf = (jobId: string) => {
    for (const [i, id] of acked) if (id === jobId) return plan.jobs[i]?.behaviour;
    return undefined;
  };
  /**
   * Marks a fault on a proxied slot's current worker as started. A one-way
   * stall first waits (bounded) until the worker runs a job that outlasts its
   * lease and heeds its signal: a short job ends before its lease matters.
   */
  async function onProxiedWorker(f: Fault, rec: FaultRecord): Promise<WorkerProc> {
    const waitsForLongJob = f.kind === 'partition_stall_requests' || f.kind === 'partition_stall_answers';
    const long = (w: WorkerProc) => [...w.inFlight].some((id) => behaviourOf(id) === 'long' || behaviourOf(id) === 'hang_io');
    for (let i = 0; waitsForLongJob && i < 40 && !long(slots[f.target]!); i++) await sleep(100);
    const w = slots[f.target]!;
    rec.wallAt = Date.now();
    rec.atMs = elapsed();
    rec.workerId = w.id;
    rec.inFlight = w.inFlight.size;
    return w;
  }

  async function inject(f: Fault, rec: FaultRecord) {
    switch (f.kind) {
      case 'kill_worker': {
        let w = slots[f.target]!;
        // "Mid-job": wait (bounded) until it runs something. Up to 10 s: a
        // restarting server (about 3 s under tsx on a loaded machine) can hold
        // the first jobs back that long, and a kill with nothing in flight
        // tests only a restart.
        for (let i = 0; i < 100 && (w.dead || w.stopped || w.inFlight.size === 0); i++) {
          await sleep(100);
          w = slots[f.target]!;
        }
        // Still idle (its claims backing off after a server outage): the
        // live worker with the most jobs in flight takes the kill instead.
        if (w.inFlight.size === 0) {
          const busiest = slots.filter((x): x is WorkerProc => !!x && !x.dead && !x.stopped).sort((a, b) => b.inFlight.size - a.inFlight.size)[0];
          if (busiest && busiest.inFlight.size > 0) w = busiest;
        }
        rec.wallAt = Date.now();
        rec.atMs = elapsed();
        rec.workerId = w.id;
        rec.inFlight = w.inFlight.size;
        w.expectedExit = true;
        w.child.kill('SIGKILL');
        note(rec, `SIGKILL ${w.id} (${w.inFlight.size} job(s) in flight)`);
        await w.exited;
        await sleep(f.durationMs);
        if (Date.now() < hardDeadline) spawnWorker(w.slot);
        break;
      }
      case 'stop_worker': {
        const w = slots[f.target]!;
        if (w.dead || w.stopped) {
          rec.skipped = `${w.id} is ${w.dead ? 'dead' : 'already stopped'}`;
          out(`  [${fmt(elapsed())}] fault #${rec.n} skipped: ${rec.skipped}`);
          break;
        }
        rec.wallAt = Date.now();
        rec.atMs = elapsed();
        rec.workerId = w.id;
        rec.inFlight = w.inFlight.size;
        w.stopped = true;
        w.child.kill('SIGSTOP');
        note(rec, `SIGSTOP ${w.id} (${w.inFlight.size} job(s) in flight) for ${f.durationMs} ms`);
        await sleep(f.durationMs);
        w.child.kill('SIGCONT');
        w.stopped = false;
        rec.wallEnd = Date.now();
        break;
      }
      case 'partition_stall':
      case 'partition_drop':
      case 'partition_stall_requests':
      case 'partition_stall_answers': {
        const proxy = proxies.get(f.target)!;
        const w = await onProxiedWorker(f, rec);
        const mode = PARTITION_MODES[f.kind];
        note(rec, `partition (${mode}) between ${w.id} and the server for ${f.durationMs} ms`);
        await proxy.partition(mode, f.durationMs);
        rec.wallEnd = Date.now();
        break;
      }
      case 'drop_answers': {
        const proxy = proxies.get(f.target)!;
        let w = await onProxiedWorker(f, rec);
        // Only a worker with a job in flight makes completion, heartbeat and
        // fail calls: wait (bounded) for one, so the fault has a call to lose.
        for (let i = 0; i < 50 && f.call !== 'claim' && slots[f.target]!.inFlight.size === 0; i++) await sleep(100);
        w = slots[f.target]!;
        rec.workerId = w.id;
        const head = DROPPED_CALLS[f.call!];
        const before = proxy.dropped.length;
        const disarm = proxy.dropAnswers((h) => h.startsWith(head), f.count);
        note(rec, `drop the next ${f.count} ${f.call} answer(s) to ${w.id} after the server acts`);
        await sleep(f.durationMs);
        // On a loaded machine the armed window can pass before the call comes
        // (a handler slower than planned): stay armed, bounded, until one answer was lost.
        for (let waited = 0; proxy.dropped.length === before && waited < f.durationMs * 3; waited += 100) await sleep(100);
        disarm();
        rec.wallEnd = Date.now();
        rec.drops = proxy.dropped.slice(before).map((d) => d.at);
        break;
      }
      case 'slow_answers': {
        const proxy = proxies.get(f.target)!;
        const w = await onProxiedWorker(f, rec);
        note(rec, `answers to ${w.id} arrive ${f.delayMs} ms late for ${f.durationMs} ms`);
        await proxy.delayAnswers(f.delayMs!, f.durationMs);
        rec.wallEnd = Date.now();
        break;
      }
      case 'kill_server': {
        const s = servers[f.target]!;
        const started = await serverForFault(s, rec);
        if (!started) break;
        const { child, from } = started;
        s.up = false;
        const gone = new Promise<void>((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.once('exit', () => r())));
        child.kill('SIGKILL');
        await gone;
        note(rec, `SIGKILL server ${s.index} (port ${s.port}); down for ${f.durationMs} ms`);
        await sleep(f.durationMs);
        await startServer(s);
        rec.wallEnd = Date.now();
        outages.push({ server: s.index, from, to: rec.wallEnd });
        out(`  [${fmt(elapsed())}] server ${s.index} back on port ${s.port} after ${rec.wallEnd - from} ms`);
        break;
      }
      case 'clock_step': {
        rec.wallAt = Date.now();
        rec.atMs = elapsed();
        rec.stepMs = f.stepMs!;
        setClockOffset(f.stepMs!);
        note(rec, `lease clock stepped ${f.stepMs! > 0 ? 'forward' : 'back'} ${Math.abs(f.stepMs!)} ms on every server for ${f.durationMs} ms`);
        await sleep(f.durationMs);
        setClockOffset(0);
        rec.wallEnd = Date.now();
        out(`  [${fmt(elapsed())}] lease clock back to true time (a step ${f.stepMs! > 0 ? 'back' : 'forward'} of ${Math.abs(f.stepMs!)} ms)`);
        break;
      }
      case 'flow_cascade': {
        const s = servers[f.target]!;
        if (!(await serverForFault(s, rec))) break;
        const queue = `${QUEUE}-cascade-${f.n}`;
        note(rec, `a flow graph of ${f.count} dependents on ${queue} (server ${s.index}), then its root failed for good`);
        // The server the fault drew, or any server up while it is down.
        const url = () => (s.up ? serverUrl(s.index) : servers.find((x) => x.up) ? serverUrl(servers.find((x) => x.up)!.index) : undefined);
        rec.cascade = await runFlowCascade({ serverUrl: url, workerToken, queue, dependents: f.count! });
        rec.wallEnd = Date.now();
        out(`  [${fmt(elapsed())}] flow cascade on ${queue}: ${rec.cascade.failed ? `root ${rec.cascade.root} failed, cascade settled ${rec.cascade.settledMs === undefined ? 'not seen' : `${rec.cascade.settledMs} ms after the answer`}` : `not failed (${rec.cascade.error})`}`);
        break;
      }
      case 'stop_server': {
        const s = servers[f.target]!;
        const started = await serverForFault(s, rec);
        if (!started) break;
        const { child, from } = started;
        child.kill('SIGSTOP');
        note(rec, `SIGSTOP server ${s.index} (port ${s.port}) for ${f.durationMs} ms`);
        await sleep(f.durationMs);
        child.kill('SIGCONT');
        rec.wallEnd = Date.now();
        // Unreachable while paused, like an outage; its workers' leases all expired meanwhile.
        outages.push({ server: s.index, from, to: rec.wallEnd });
        out(`  [${fmt(elapsed())}] server ${s.index} resumed after ${rec.wallEnd - from} ms`);
        break;
      }
    }
  }

  for (const f of plan.faults) {
    const rec = records[f.n]!;
    pendingFaultWork.push(
      (async () => {
        const wait = t0 + f.atMs - Date.now();
        if (wait > 0) await sleep(wait);
        if (Date.now() > hardDeadline) {
          rec.skipped = 'past the duration limit';
          return;
        }
        try {
          // Bounded: a fault that cannot finish must not hold the run open.
          const limit = f.durationMs + 60_000;
          const timedOut = await Promise.race([inject(f, rec).then(() => false), sleep(limit).then(() => true)]);
          if (timedOut) out(`  [${fmt(elapsed())}] fault #${rec.n} still not finished after ${limit} ms; going on`);
        } catch (err) {
          rec.skipped = `error: ${(err as Error).message.slice(0, 200)}`;
          out(`  [${fmt(elapsed())}] fault #${rec.n} failed: ${rec.skipped}`);
        } finally {
          faultsDone++;
        }
      })(),
    );
  }

  // ---- progress and the wait for the end ------------------------------------------------
  let last = { completed: 0, failed: 0, running: 0, pending: 0 };
  async function poll(): Promise<typeof last | undefined> {
    for (const s of servers) {
      if (!s.up) continue;
      try {
        const res = await fetch(`${serverUrl(s.index)}/api/v1/queues/${QUEUE}`, { headers: { authorization: `Bearer ${adminToken}` }, signal: AbortSignal.timeout(3_000) });
        if (res.status === 404) return { completed: 0, failed: 0, running: 0, pending: 0 };
        const body = (await res.json()) as { queue: { counts: Record<string, number> } };
        const c = body.queue.counts;
        last = { completed: c.completed ?? 0, failed: c.failed ?? 0, running: c.running ?? 0, pending: c.pending ?? 0 };
        return last;
      } catch {
        // try the next server, or report the last known counts
      }
    }
    return undefined;
  }
  const progressLine = (counts: typeof last | undefined) => {
    const c = counts ?? last;
    const total = Object.values(faultCounts).reduce((a, b) => a + b, 0);
    const kinds = Object.entries(faultCounts).map(([k, n]) => `${k} ${n}`).join(', ');
    out(`[${fmt(elapsed())}] done ${c.completed + c.failed}/${o.jobs} (completed ${c.completed}, failed ${c.failed}) running ${c.running} pending ${c.pending} enqueued ${acked.size} | faults ${total}/${plan.faults.length}${kinds ? ` (${kinds})` : ''}${counts ? '' : ' | server unreachable'}`);
  };

  let finishedInTime = false;
  let lastProgress = 0;
  let resultError: unknown;
  try {
    for (;;) {
      await sleep(250);
      const counts = await poll();
      if (Date.now() - lastProgress >= o.progressEveryMs) {
        lastProgress = Date.now();
        progressLine(counts);
      }
      if (
        counts &&
        faultsDone === plan.faults.length &&
        acked.size === o.jobs &&
        counts.running === 0 &&
        counts.pending === 0 &&
        counts.completed + counts.failed >= o.jobs
      ) {
        finishedInTime = true;
        break;
      }
      if (Date.now() > hardDeadline || enqueueGaveUp) break;
    }
    progressLine(last);
  } catch (err) {
    resultError = err;
  }

  // ---- shutdown: every child, whatever happened ---------------------------------------------------
  out(`[${fmt(elapsed())}] stopping workers and servers`);
  stopping = true;
  const operatorReport = await operator.stop();
  for (const w of allWorkers) w.expectedExit = true;
  for (const w of allWorkers) if (!w.dead) w.child.kill('SIGCONT');
  await Promise.race([Promise.all(pendingFaultWork), sleep(5_000)]);
  for (const w of allWorkers) if (!w.dead) w.child.kill('SIGTERM');
  await Promise.race([Promise.all(allWorkers.map((w) => w.exited)), sleep(5_000)]);
  for (const w of allWorkers) if (!w.dead) w.child.kill('SIGKILL');
  for (const p of proxies.values()) await p.close();
  for (const s of servers) {
    const child = s.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) continue;
    const gone = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill('SIGTERM');
    await Promise.race([gone, sleep(5_000)]);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  await Promise.race([enqueuer, sleep(1_000)]);
  killAll();
  for (const s of logs) s.end();

  // ---- the verdict ------------------------------------------------------------------------------------
  const db = createClient({ url: `file:${dbFile}` });
  let jobs: JobRow[] = [];
  let events: EventRow[] = [];
  let effects: EffectRow[] = [];
  const cascades: CheckInput['cascades'] = [];
  try {
    jobs = (await db.execute({ sql: 'SELECT id, status, last_error, idempotency_key, attempt_count, lost_attempts, completed_at, result FROM jobs WHERE queue_name = ?', args: [QUEUE] })).rows.map((r) => ({ ...r }) as unknown as JobRow);
    events = (await db.execute({ sql: 'SELECT id, job_id, type, to_status, reason, message, actor, worker_id, at FROM events WHERE queue_name = ? ORDER BY id', args: [QUEUE] })).rows.map((r) => ({ ...r }) as unknown as EventRow);
    effects = (await db.execute('SELECT job_id, key, state, completed_at FROM effects')).rows.map((r) => ({ ...r }) as unknown as EffectRow);
    for (const rec of records) {
      if (!rec.cascade?.root) continue;
      const root = (await db.execute({ sql: 'SELECT status FROM jobs WHERE id = ?', args: [Number(rec.cascade.root)] })).rows[0];
      const byStatus = (await db.execute({ sql: 'SELECT status, count(*) AS n FROM jobs WHERE queue_name = ? AND id <> ? GROUP BY status', args: [rec.cascade.queue, Number(rec.cascade.root)] })).rows;
      const owed = (await db.execute({ sql: 'SELECT count(*) AS n FROM dependency_cascades WHERE job_id = ?', args: [Number(rec.cascade.root)] })).rows[0];
      cascades.push({ queue: rec.cascade.queue, rootStatus: String(root?.status), dependents: Object.fromEntries(byStatus.map((r) => [String(r.status), Number(r.n)])), owed: Number(owed?.n ?? 0), answered: rec.cascade.failed });
    }
  } finally {
    db.close();
  }
  const lines: Line[] = [];
  for (const name of readdirSync(dir)) {
    if (!name.startsWith('effects-') || !name.endsWith('.jsonl')) continue;
    for (const l of readFileSync(join(dir, name), 'utf8').split('\n')) {
      if (!l) continue;
      try {
        lines.push(JSON.parse(l) as Line);
      } catch {
        // a torn last line of a killed process: at most one per file
      }
    }
  }
  const input: CheckInput = {
    plan, timings: tm, jobsWanted: o.jobs, seed: o.seed, jobs, events, effects, lines, faults: records, outages, acked, enqueueGaveUp, finishedInTime, workerEvents, cascades,
    unexpectedExits, unhandledRejections, tolerateUnhandledRejections: o.tolerateUnhandledRejections,
  };
  const report = check(input);
  if (resultError) report.violations.unshift(`harness error: ${String(resultError)}`);
  report.ok = report.violations.length === 0;
  const full = {
    seed: o.seed,
    options: { ...o, jsonPath: undefined },
    plan: { faultsHash: plan.faultsHash, jobsHash: plan.jobsHash, faults: plan.faults, behavioursPlanned: planned, proxiedSlots: plan.proxiedSlots, servers: plan.servers },
    faultsInjected: records,
    outages,
    durationMs: elapsed(),
    directory: dir,
    serverStarts: servers.map((s) => s.starts),
    workerProcesses: allWorkers.length,
    operator: operatorReport,
    ...report,
  };
  if (!existsSync(dirname(reportPath))) mkdirSync(dirname(reportPath), { recursive: true });
  writeFileSync(reportPath, JSON.stringify(full, null, 2));
  printSummary(full, out);
  out(`report: ${reportPath}`);
  out(report.ok ? `OK: no violations (seed ${o.seed}, ${fmt(elapsed())})` : `FAILED: ${report.violations.length} violation(s) (seed ${o.seed})`);
  return { report, reportPath, exitCode: report.ok ? 0 : 1 };
}

export function fmt(ms: number) {
  return `${(ms / 1000).toFixed(1)}s`.padStart(7);
}
