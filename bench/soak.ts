/**
 * The soak: `npm run bench:soak [-- --minutes 10] [-- --retention-s 60]`.
 *
 * A real server process under a steady load for a long time, with a worker
 * process SIGKILLed and replaced every 30 s (its jobs are reaped and run
 * again). Every 15 s it samples the server's RSS and the database and WAL
 * file sizes with the queue's counts. Once retention is reached (finished
 * jobs start being pruned), all three must stay flat: the verdict compares
 * the last third of the samples with the middle third. Loopback only; a
 * fresh temporary database, deleted afterwards.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fmt, procMemory } from './lib.ts';

const BIN = join(import.meta.dirname, '..', 'bin', 'leasehold.js');
const KILL_EVERY_MS = 30_000;
const SAMPLE_EVERY_MS = 15_000;
/** Jobs enqueued per second, in bulks of ten. */
const RATE = 40;

function parseArgs(argv: readonly string[]) {
  let minutes = 10;
  let retentionS = 60;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = () => Number(argv[++i]);
    if (arg === '--minutes') minutes = value();
    else if (arg === '--retention-s') retentionS = value();
    else if (arg === '--help' || arg === '-h') {
      console.log('usage: npm run bench:soak [-- --minutes N (10)] [-- --retention-s N (60)]');
      process.exit(0);
    } else throw new Error(`unknown argument ${arg} (try --help)`);
  }
  if (!(minutes > 0) || !(retentionS > 0)) throw new Error('--minutes and --retention-s must be positive numbers');
  return { minutes, retentionS };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A free loopback port: bound, read, released. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const port = (probe.address() as AddressInfo).port;
      probe.close(() => resolve(port));
    });
  });
}

/** The server at warn level (its request lines would be most of its work), on a port chosen here. */
async function startServer(dbPath: string, retentionS: number): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, [BIN, 'serve', '--port', String(port), '--database-url', `file:${dbPath}`], {
    env: {
      ...process.env,
      LEASEHOLD_LEASE_MS: '2000',
      LEASEHOLD_HEARTBEAT_MS: '400',
      LEASEHOLD_GRACE_MS: '1000',
      LEASEHOLD_WORKER_ALIVE_MS: '1200',
      LEASEHOLD_MAX_REAP_DEFER_MS: '1000',
      LEASEHOLD_REAPER_INTERVAL_MS: '500',
      LEASEHOLD_RETENTION_MS: String(retentionS * 1000),
      LEASEHOLD_LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}`);
    const ok = await fetch(`${url}/healthz`).then((r) => r.ok, () => false);
    if (ok) return { child, url };
    await sleep(100);
  }
  throw new Error('the server did not answer /healthz within 30 s');
}

/** A `leasehold work` process: runs `true` per job, so each job is a real child process. */
function startWorker(url: string): ChildProcess {
  return spawn(process.execPath, [BIN, 'work', '--queue', 'soak', '--url', url, '--concurrency', '8', '--', 'true'], { stdio: 'ignore' });
}

interface Sample {
  atS: number;
  rssMb: number;
  dbMb: number;
  walMb: number;
  pending: number;
  running: number;
  completed: number;
  enqueued: number;
}

const size = (path: string) => (existsSync(path) ? statSync(path).size / 1024 / 1024 : 0);

async function main() {
  const { minutes, retentionS } = parseArgs(process.argv.slice(2));
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-soak-'));
  const dbPath = join(dir, 'soak.db');
  const server = await startServer(dbPath, retentionS);
  const workers = [startWorker(server.url), startWorker(server.url)];
  const t0 = Date.now();
  const until = t0 + minutes * 60_000;
  let enqueued = 0;
  let stopping = false;

  const producer = (async () => {
    while (!stopping) {
      const res = await fetch(`${server.url}/api/v1/queues/soak/jobs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jobs: Array.from({ length: 10 }, (_, i) => ({ payload: { n: enqueued + i, pad: 'x'.repeat(200) } })) }),
      }).catch(() => undefined);
      if (res?.status === 201) enqueued += 10;
      await sleep(1000 / (RATE / 10));
    }
  })();

  let kills = 0;
  const killer = setInterval(() => {
    const victim = workers.shift()!;
    victim.kill('SIGKILL');
    kills++;
    workers.push(startWorker(server.url));
  }, KILL_EVERY_MS);

  const samples: Sample[] = [];
  console.log(`soak: ${minutes} min, retention ${retentionS} s, ${RATE} jobs/s, a worker killed every ${KILL_EVERY_MS / 1000} s; server ${server.url}`);
  console.log('   t(s)   RSS MB   db MB  WAL MB  pending  running  completed  enqueued');
  while (Date.now() < until) {
    await sleep(Math.min(SAMPLE_EVERY_MS, until - Date.now()));
    const queues = (await (await fetch(`${server.url}/api/v1/queues`)).json()) as { queues: { name: string; counts: Record<string, number> }[] };
    const q = queues.queues.find((x) => x.name === 'soak');
    const s: Sample = {
      atS: Math.round((Date.now() - t0) / 1000),
      rssMb: procMemory(server.child.pid!).rssMb,
      dbMb: size(dbPath),
      walMb: size(`${dbPath}-wal`),
      pending: q?.counts.pending ?? 0,
      running: q?.counts.running ?? 0,
      completed: q?.counts.completed ?? 0,
      enqueued,
    };
    samples.push(s);
    console.log(
      [s.atS, fmt(s.rssMb, 1), fmt(s.dbMb, 1), fmt(s.walMb, 1), s.pending, s.running, s.completed, s.enqueued].map((v, i) => String(v).padStart([7, 9, 8, 8, 9, 9, 11, 10][i]!)).join(''),
    );
  }
  stopping = true;
  clearInterval(killer);
  await producer;
  for (const w of workers) w.kill('SIGKILL');
  server.child.kill('SIGTERM');
  await new Promise((r) => server.child.once('exit', r));
  rmSync(dir, { recursive: true, force: true });

  // Flat once retention is reached: the last third against the middle third (medians).
  const third = Math.floor(samples.length / 3);
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
  const middle = samples.slice(third, 2 * third);
  const last = samples.slice(2 * third);
  const verdicts = (['rssMb', 'dbMb', 'walMb'] as const).map((k) => {
    const before = median(middle.map((s) => s[k]));
    const after = median(last.map((s) => s[k]));
    const growth = before > 0 ? after / before - 1 : 0;
    return { k, before, after, growth, flat: growth < 0.2 };
  });
  console.log(`\n${kills} worker kills; ${enqueued} jobs enqueued; backlog at the end ${samples.at(-1)?.pending ?? 0} pending`);
  for (const v of verdicts) console.log(`${v.k.padEnd(6)} middle third ${fmt(v.before, 1)} -> last third ${fmt(v.after, 1)} (${v.growth >= 0 ? '+' : ''}${fmt(v.growth * 100, 0)}%): ${v.flat ? 'flat' : 'GROWING'}`);
  if (retentionS * 3 > minutes * 60) console.log('note: retention is long for this run; the middle third may be before it was reached');
  process.exitCode = verdicts.every((v) => v.flat) ? 0 : 1;
}

await main();
