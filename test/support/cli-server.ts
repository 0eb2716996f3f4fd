/**
 * The operator CLI against a real `leasehold serve` process, for a test
 * file: `servedForCli` starts the server on a fresh database file before the
 * file's tests and stops it after them; `cli` runs `bin/leasehold.js` as its
 * own process (so the test's event loop is free meanwhile) with the server's
 * URL in the environment and no database URL, as an operator's shell has.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { startServerProcess, type ServerProcess } from './process-helpers.ts';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'leasehold.js');

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

export interface ServedForCli {
  /** The running server (set once the file's beforeAll ran). */
  readonly server: ServerProcess;
  /** The file's scratch directory (removed after its tests), beside the served database. */
  readonly dir: string;
  /** An API URL on that server: api('/jobs/1'). */
  api(path: string): string;
  /** Runs the CLI; `env` adds to (or, with undefined, removes from) the defaults given to servedForCli. */
  cli(args: string[], env?: Record<string, string | undefined>): Promise<CliResult>;
}

export function servedForCli(name: string, serverEnv: Record<string, string>, cliEnv: Record<string, string | undefined> = {}): ServedForCli {
  let dir: string | undefined;
  let server: ServerProcess | undefined;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), `leasehold-${name}-`));
    server = await startServerProcess(['--database-url', `file:${join(dir, 'served.db')}`], serverEnv);
  }, 30_000);
  afterAll(async () => {
    server?.child.kill('SIGTERM');
    await server?.exited;
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  const running = () => {
    if (!server) throw new Error('the server starts in beforeAll: use it inside a test');
    return server;
  };
  return {
    get server() {
      return running();
    },
    get dir() {
      running();
      return dir!;
    },
    api: (path) => `${running().url}/api/v1${path}`,
    cli(args, env = {}) {
      const all = { ...process.env, LEASEHOLD_URL: running().url, LEASEHOLD_DATABASE_URL: undefined, ...cliEnv, ...env } as NodeJS.ProcessEnv;
      const child = spawn(process.execPath, [BIN, ...args], { env: all, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      return new Promise((resolve) => child.once('close', (status) => resolve({ status, stdout, stderr })));
    },
  };
}
