/**
 * A fresh clone, as a user gets it, runs what the README and docs print:
 * `npx leasehold serve`, the README's producer and worker, examples/node-worker.ts,
 * `npm start`, and deploy-bun.md's one-shot commands.
 *
 * The clone: the files git would check out (tracked and new, not ignored: no dist/, no
 * database files) copied into a private temp folder (mode 0700, as `mktemp -d` makes),
 * with node_modules a link to our install, then the root package's lifecycle scripts that
 * `npm ci` runs after installing (preprepare builds dist/), as npm runs them. A real `npm ci`
 * would download the same dependencies again, for minutes.
 *
 * Servers listen on a free port (LEASEHOLD_PORT=0) instead of 8787, which others may be
 * using, and the README's 'http://127.0.0.1:8787' is replaced by that server's URL;
 * deploy-bun.md's `./leasehold` (the Bun binary, the same CLI) runs as the clone's
 * `node dist/cli/main.js`. Nothing else is changed from what the docs print.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { postJson, untilListening, type ServerProcess } from '../support/process-helpers.ts';
import { until } from '../support/until.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const npx = process.platform === 'win32' ? 'npx.cmd' : 'npx';
/** What `npm ci` runs of the root package, in this order, after installing its dependencies. */
const INSTALL_LIFECYCLE = ['preinstall', 'install', 'postinstall', 'prepublish', 'preprepare', 'prepare', 'postprepare'];

let dir: string;
let clone: string;
let server: ServerProcess;
const started: ChildProcess[] = [];

/** Starts a command in its own process group, so stopping it stops what npm or npx started under it. */
function start(command: string, args: string[], opts: { cwd: string; env?: Record<string, string> }): ChildProcess {
  const child = spawn(command, args, { cwd: opts.cwd, env: { ...process.env, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  started.push(child);
  return child;
}
async function stop(child: ChildProcess) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    process.kill(-child.pid!, 'SIGTERM');
  } catch {
    return; // already gone
  }
  await exited;
}
function outputOf(child: ChildProcess): () => string {
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return () => out;
}

/** The README's ```js block whose first line is `// NAME: ...`. */
function readmeExample(name: string): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const block = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]!).find((b) => b.startsWith(`// ${name}:`));
  if (!block) throw new Error(`README.md has no js block starting // ${name}:`);
  return block;
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-clone-'));
  clone = join(dir, 'leasehold');
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' }).split('\0');
  for (const file of files) {
    if (!file || !existsSync(join(ROOT, file)) || statSync(join(ROOT, file)).isDirectory()) continue;
    mkdirSync(dirname(join(clone, file)), { recursive: true });
    copyFileSync(join(ROOT, file), join(clone, file));
  }
  expect(existsSync(join(clone, 'dist'))).toBe(false);
  symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(clone, 'node_modules'));
  for (const script of INSTALL_LIFECYCLE) execFileSync(npm, ['run', script, '--if-present'], { cwd: clone, stdio: ['ignore', 'ignore', 'inherit'] });
}, 180_000);

afterAll(async () => {
  for (const child of started) await stop(child);
  // `npx leasehold` in the clone made an npx cache entry that links to it.
  const npxCache = join(process.env.npm_config_cache ?? join(homedir(), '.npm'), '_npx');
  for (const entry of existsSync(npxCache) ? readdirSync(npxCache) : []) {
    const manifest = join(npxCache, entry, 'package.json');
    if (existsSync(manifest) && clone && readFileSync(manifest, 'utf8').includes(clone)) rmSync(join(npxCache, entry), { recursive: true, force: true });
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('npx leasehold serve, in the clone after the install: the server, on ./leasehold.db', async () => {
  server = await untilListening(start(npx, ['leasehold', 'serve'], { cwd: clone, env: { LEASEHOLD_PORT: '0' } }), 'npx leasehold serve', 60_000);
  expect(existsSync(join(clone, 'leasehold.db'))).toBe(true);
  const health = await fetch(`${server.url}/healthz`);
  expect(health.status).toBe(200);
});

test("the README's producer.mjs and worker.mjs, in the clone: the job runs and the producer prints it completed", async () => {
  const at = (code: string) => code.replaceAll('http://127.0.0.1:8787', server.url);
  writeFileSync(join(clone, 'producer.mjs'), at(readmeExample('producer.mjs')));
  writeFileSync(join(clone, 'worker.mjs'), at(readmeExample('worker.mjs')));
  const worker = start(process.execPath, ['worker.mjs'], { cwd: clone });
  const workerOutput = outputOf(worker);
  const producer = spawnSync(process.execPath, ['producer.mjs'], { cwd: clone, encoding: 'utf8', timeout: 60_000 });
  expect(producer.stderr).toBe('');
  expect(producer.status).toBe(0);
  expect(producer.stdout).toContain("status: 'completed'");
  expect(producer.stdout).toContain("to: 'ada@example.com'");
  await stop(worker);
  expect(workerOutput()).not.toMatch(/error/i);
});

test('examples/node-worker.ts, started as its header says (npx tsx), runs a job enqueued to the email queue', async () => {
  const worker = start(npx, ['tsx', 'examples/node-worker.ts'], { cwd: clone, env: { LEASEHOLD_URL: server.url } });
  const output = outputOf(worker);
  await until('the example worker waits for jobs', () => output().includes('is waiting for jobs on "email"'), 30_000, output);
  // Its header's curl, to this server.
  const { status, json } = await postJson(`${server.url}/api/v1/queues/email/jobs`, { payload: { to: 'ada@example.com' } });
  expect(status).toBe(201);
  await until('the example completes the job', () => output().includes(`job ${json.job.id} completed:`), 30_000, output);
  await stop(worker);
});

test('npm start runs the server from src/', async () => {
  const started = await untilListening(start(npm, ['start'], { cwd: clone, env: { LEASEHOLD_PORT: '0', LEASEHOLD_DATABASE_URL: `file:${join(dir, 'start.db')}` } }), 'npm start', 60_000);
  expect((await fetch(`${started.url}/healthz`)).status).toBe(200);
  await stop(started.child);
});

test("deploy-bun.md's one-shot commands run as printed, with the clone's CLI for the binary", () => {
  const doc = readFileSync(join(ROOT, 'docs', 'deploy-bun.md'), 'utf8');
  const oneShot = doc
    .split('\n')
    .filter((line) => /^\.\/leasehold (migrate|reap|stats|enqueue|serve --help)\b/.test(line))
    .map((line) => line.replace(/\s+#.*$/, ''));
  expect(oneShot.length).toBe(5);
  const cwd = join(dir, 'bun-doc');
  mkdirSync(cwd);
  for (const line of oneShot) {
    const command = line.replace(/^\.\/leasehold/, `${JSON.stringify(process.execPath)} ${JSON.stringify(join(clone, 'dist', 'cli', 'main.js'))}`);
    const res = spawnSync('sh', ['-c', command], { cwd, encoding: 'utf8', timeout: 30_000 });
    expect({ line, status: res.status, stderr: res.status === 0 ? '' : res.stderr }).toEqual({ line, status: 0, stderr: '' });
  }
  expect(existsSync(join(cwd, 'leasehold.db'))).toBe(true);
});
