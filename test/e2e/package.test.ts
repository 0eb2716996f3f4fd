/**
 * The package as users get it: `npm pack` (which builds dist/), the tarball
 * installed into an empty project, and there, with plain Node and no loader:
 * `leasehold --version`, `leasehold serve` on an embedded database, a job
 * enqueued with leasehold/client, run by leasehold/worker and read back with
 * waitForJob; CommonJS callers (require() of an ES module, which Node 20.19+
 * does); and strict `module: nodenext` TypeScript consumers, ESM and CommonJS.
 *
 * No network: the empty project gets a lock file made from ours (the exact
 * versions, integrity hashes and tarball URLs of the package's runtime
 * dependencies), and `npm ci --offline` takes them from the npm cache that our
 * own `npm ci` filled. (`npm install --offline <tarball>` cannot work: it needs
 * the registry's package documents, which `npm ci` does not cache.)
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { untilListening } from '../support/process-helpers.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; dependencies: Record<string, string> };
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

let dir: string;
let project: string;
let tarballFiles: string[];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-package-'));
  const packed = JSON.parse(execFileSync(npm, ['pack', '--json', '--pack-destination', dir], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })) as [{ filename: string; files: { path: string }[] }];
  tarballFiles = packed[0].files.map((f) => f.path);
  const tarball = join(dir, packed[0].filename);

  project = join(dir, 'app');
  mkdirSync(project);
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean; version?: string; license?: string; bin?: unknown; engines?: unknown; dependencies?: unknown }> };
  const own = lock.packages['']!;
  const packages: Record<string, unknown> = {
    '': { name: 'app', dependencies: { leasehold: `file:${tarball}` } },
    'node_modules/leasehold': { version: own.version, resolved: `file:${tarball}`, license: own.license, dependencies: own.dependencies, bin: own.bin, engines: own.engines },
  };
  for (const [path, entry] of Object.entries(lock.packages)) if (path.startsWith('node_modules/') && !entry.dev) packages[path] = entry;
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module', dependencies: { leasehold: `file:${tarball}` } }));
  writeFileSync(join(project, 'package-lock.json'), JSON.stringify({ name: 'app', lockfileVersion: 3, requires: true, packages }));
  execFileSync(npm, ['ci', '--offline', '--no-audit', '--no-fund', '--ignore-scripts=false'], { cwd: project, stdio: ['ignore', 'ignore', 'inherit'] });
}, 300_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('the tarball holds the build, the migrations and public/, and no sources, tests, benches, tools (the chaos harness) or CI', () => {
  expect(tarballFiles).toEqual(expect.arrayContaining(['dist/cli/main.js', 'dist/index.js', 'dist/index.d.ts', 'dist/worker/index.js', 'dist/worker/index.d.ts', 'dist/client/index.js', 'dist/client/index.d.ts', 'drizzle/0000_init.sql', 'drizzle/meta/_journal.json', 'public/htmx.min.js', 'package.json', 'README.md']));
  const unwanted = tarballFiles.filter((f) => /^(src|test|bench|scripts|tools|\.ci|node_modules|artifacts)\/|^dist\/chaos\/|\.test\.|tsconfig|vitest|wrangler|^dist\/leasehold$|\.tsbuildinfo$|_snapshot\.json$/.test(f));
  expect(unwanted).toEqual([]);
});

test('the dependencies are what the built code imports: libsql declared, tsx and htmx.org not', () => {
  expect(Object.keys(pkg.dependencies)).toContain('libsql');
  expect(Object.keys(pkg.dependencies)).not.toContain('tsx');
  expect(Object.keys(pkg.dependencies)).not.toContain('htmx.org');
});

test('leasehold --version prints the package version, with plain Node', () => {
  const bin = join(project, 'node_modules', '.bin', 'leasehold');
  const res = spawnSync(bin, ['--version'], { encoding: 'utf8', cwd: project });
  expect(res.status).toBe(0);
  expect(res.stdout.trim()).toBe(pkg.version);
  const help = spawnSync(bin, ['--help'], { encoding: 'utf8', cwd: project });
  expect(help.stdout).toContain('usage: leasehold <command>');
});

test('leasehold serve on an embedded database; a job enqueued with leasehold/client, run by leasehold/worker, read back with waitForJob', async () => {
  const token = 'worker-token-for-the-package-test';
  const data = join(dir, 'data');
  mkdirSync(data);
  const server = spawn(join(project, 'node_modules', '.bin', 'leasehold'), ['serve', '--port', '0', '--database-url', `file:${join(data, 'jobs.db')}`], {
    cwd: project,
    env: { ...process.env, LEASEHOLD_WORKER_TOKEN: token, LEASEHOLD_ADMIN_TOKEN: 'admin-token-for-the-package-test' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    const { url } = await untilListening(server, 'installed leasehold');
    writeFileSync(
      join(project, 'run.mjs'),
      `import { createClient } from 'leasehold/client';
import { createWorker, httpTransport } from 'leasehold/worker';
const [url, token] = process.argv.slice(2);
let enqueueRequests = 0;
const countingFetch = (input, init) => {
  if (init?.method === 'POST' && String(input).endsWith('/jobs')) enqueueRequests++;
  return fetch(input, init);
};
const client = createClient({ url, token, fetch: countingFetch });
const enqueued = await Promise.all([1, 2, 3].map((n) => client.enqueue('double', { n })));
const worker = createWorker({ transport: httpTransport({ url, token }), queue: 'double', concurrency: 2, pollMs: 50, handleSignals: false, handler: (ctx) => ctx.job.payload.n * 2 });
worker.start();
const done = await Promise.all(enqueued.map((e) => client.waitForJob(e.id, { pollMs: 50, timeoutMs: 60000 })));
await worker.close();
console.log(JSON.stringify({ enqueueRequests, results: done.map((j) => [j.status, j.result]) }));
`,
    );
    const res = spawnSync(process.execPath, ['run.mjs', url, token], { cwd: project, encoding: 'utf8', timeout: 120_000 });
    expect(res.stderr).toBe('');
    expect(JSON.parse(res.stdout)).toEqual({
      // The three enqueues made together went out as one bulk request.
      enqueueRequests: 1,
      results: [
        ['completed', 2],
        ['completed', 4],
        ['completed', 6],
      ],
    });
  } finally {
    server.kill('SIGTERM');
  }
});

test('a strict module: nodenext TypeScript consumer of leasehold/worker and leasehold/client type-checks', () => {
  const consumer = join(project, 'ts');
  mkdirSync(consumer);
  writeFileSync(
    join(consumer, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', target: 'ES2022', lib: ['ES2022', 'DOM'], types: [], strict: true, noEmit: true, skipLibCheck: false, exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true },
      include: ['*.ts'],
    }),
  );
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ type: 'module' }));
  writeFileSync(
    join(consumer, 'index.ts'),
    `import { createClient, LeaseholdApiError, type Job } from 'leasehold/client';
import { createWorker, httpTransport, NonRetryableError, type JobContext } from 'leasehold/worker';

const client = createClient({ url: 'http://127.0.0.1:8787', token: 'x' });
export async function produce(): Promise<Job> {
  const { id, deduplicated } = await client.enqueue('email', { to: 'a@b' }, { idempotencyKey: 'k', delayMs: 10 });
  const ok: boolean = deduplicated;
  void ok;
  try {
    return await client.waitForJob(id, { timeoutMs: 1000 });
  } catch (err) {
    if (err instanceof LeaseholdApiError) console.log(err.code, err.field, err.status);
    throw err;
  }
}
interface Email { to: string }
export const worker = createWorker<Email>({
  transport: httpTransport({ url: 'http://127.0.0.1:8787' }),
  queue: 'email',
  async handler(ctx: JobContext<Email>) {
    if (!ctx.job.payload.to) throw new NonRetryableError('no address');
    return ctx.once('send', async () => ctx.job.payload.to.length);
  },
});
`,
  );
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const res = spawnSync(process.execPath, [tsc, '-p', consumer], { encoding: 'utf8', cwd: consumer });
  expect(res.stdout + res.stderr).toBe('');
  expect(res.status).toBe(0);
});

test('CommonJS: require() of leasehold, leasehold/client and leasehold/worker gives their exports (Node 20.19+ loads ES modules from require)', () => {
  writeFileSync(
    join(project, 'require.cjs'),
    `const { createClient, LeaseholdApiError } = require('leasehold/client');
const { createWorker, httpTransport } = require('leasehold/worker');
const { openLeasehold, VERSION } = require('leasehold');
const client = createClient({ url: 'http://127.0.0.1:8787' });
console.log(JSON.stringify([typeof client.enqueue, typeof LeaseholdApiError, typeof createWorker, typeof httpTransport, typeof openLeasehold, VERSION]));
`,
  );
  const res = spawnSync(process.execPath, ['require.cjs'], { cwd: project, encoding: 'utf8' });
  expect(res.stderr).toBe('');
  expect(JSON.parse(res.stdout)).toEqual(['function', 'function', 'function', 'function', 'function', pkg.version]);
});

test('leasehold/fencing from the package, imported and required: an older token is refused, the newer accepted', () => {
  const check = `console.log(JSON.stringify([f.checkFencingToken('1', 2).status, f.checkFencingToken('3', 2).ok, f.FENCING_TOKEN_HEADER, typeof f.guardedUpdate]));`;
  writeFileSync(join(project, 'fencing.mjs'), `import * as f from 'leasehold/fencing';\n${check}\n`);
  writeFileSync(join(project, 'fencing.cjs'), `const f = require('leasehold/fencing');\n${check}\n`);
  for (const file of ['fencing.mjs', 'fencing.cjs']) {
    const res = spawnSync(process.execPath, [file], { cwd: project, encoding: 'utf8' });
    expect(res.stderr, file).toBe('');
    expect(JSON.parse(res.stdout), file).toEqual([409, true, 'Leasehold-Fencing-Token', 'function']);
  }
});

test('a strict module: nodenext TypeScript consumer in CommonJS type-checks, compiles to require() calls, and runs', () => {
  const consumer = join(project, 'ts-cjs');
  mkdirSync(consumer);
  writeFileSync(
    join(consumer, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', target: 'ES2022', lib: ['ES2022', 'DOM'], types: [], strict: true, outDir: 'out', skipLibCheck: false, exactOptionalPropertyTypes: true },
      include: ['*.ts'],
    }),
  );
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ type: 'commonjs' }));
  writeFileSync(
    join(consumer, 'index.ts'),
    `import { createClient, type Job } from 'leasehold/client';
import { createWorker, httpTransport } from 'leasehold/worker';

const client = createClient({ url: 'http://127.0.0.1:8787' });
export const produce = (): Promise<Job> => client.enqueue('email', { to: 'a@b' }).then(({ id }) => client.waitForJob(id));
export const worker = createWorker({ transport: httpTransport({ url: 'http://127.0.0.1:8787' }), queue: 'email', handleSignals: false, handler: () => 'sent' });
console.log(typeof produce, typeof worker.start);
`,
  );
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const built = spawnSync(process.execPath, [tsc, '-p', consumer], { encoding: 'utf8', cwd: consumer });
  expect(built.stdout + built.stderr).toBe('');
  expect(built.status).toBe(0);
  expect(readFileSync(join(consumer, 'out', 'index.js'), 'utf8')).toContain('require("leasehold/client")');
  const ran = spawnSync(process.execPath, [join(consumer, 'out', 'index.js')], { encoding: 'utf8', cwd: consumer });
  expect(ran.stderr).toBe('');
  expect(ran.stdout.trim()).toBe('function function');
});
