/** Starting real `leasehold serve` processes on loopback for end-to-end tests. */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'leasehold.js');

/** Short leases so a crash-and-reap story runs in seconds; the lease rules still hold. */
export const FAST_LEASES = {
  LEASEHOLD_LEASE_MS: '1500',
  LEASEHOLD_HEARTBEAT_MS: '300',
  LEASEHOLD_GRACE_MS: '300',
  LEASEHOLD_WORKER_ALIVE_MS: '600',
  LEASEHOLD_MAX_REAP_DEFER_MS: '300',
  LEASEHOLD_BACKOFF_BASE_MS: '50',
  LEASEHOLD_BACKOFF_MAX_MS: '100',
} as const;

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  output: () => string;
  /** Waits for the process to exit (its exit code). */
  exited: Promise<number | null>;
}

/** Starts `leasehold serve` on a free port and resolves once it listens. */
export function startServerProcess(args: string[], env: Record<string, string> = {}): Promise<ServerProcess> {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return untilListening(child, 'server');
}

/**
 * Resolves with the URL once a leasehold process (any runtime) prints its
 * "leasehold listening on URL" line; rejects, with what it printed, if it
 * exits first or does not start in time.
 */
export function untilListening(child: ChildProcess, label: string, timeoutMs = 20_000): Promise<ServerProcess> {
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${label} did not start in ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve({ url: match[1]!, child, output: () => output, exited });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${label} exited with ${code} before listening:\n${output}`));
    });
  });
}

export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as any };
}
