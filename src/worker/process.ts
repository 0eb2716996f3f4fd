/**
 * What the worker learns from its process, where the runtime has one (Node,
 * Deno, Bun): host and pid for the registry, and SIGTERM / SIGINT for a
 * graceful close. On Workers there is no `process`, and these do nothing.
 */

type ProcessLike = {
  pid?: number;
  env?: Record<string, string | undefined>;
  once?: (s: string, f: () => void) => void;
  off?: (s: string, f: () => void) => void;
  getBuiltinModule?: (name: string) => { hostname?: () => string } | undefined;
};

const processOf = () => (globalThis as { process?: ProcessLike }).process;

export function defaultWorkerId(identity: { host?: string; pid?: number } = {}): string {
  return `${identity.host ?? 'worker'}-${identity.pid ?? 0}-${randomHex(4)}`;
}

export function randomHex(bytes: number): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * Host and pid where the runtime has a `process` (Node, Deno, Bun); nothing on
 * Workers. `getBuiltinModule` reaches os.hostname() without importing a runtime.
 */
export function processIdentity(): { host?: string; pid?: number } {
  const proc = processOf();
  let host: string | undefined;
  try {
    host = proc?.getBuiltinModule?.('os')?.hostname?.();
  } catch {
    host = undefined;
  }
  host ??= proc?.env?.HOSTNAME;
  return { ...(host ? { host } : {}), ...(proc?.pid ? { pid: proc.pid } : {}) };
}

/** Calls `handler` on SIGTERM or SIGINT; answers a function that stops listening. */
export function onProcessSignals(handler: () => void): () => void {
  const proc = processOf();
  if (!proc?.once || !proc.off) return () => {};
  proc.once('SIGTERM', handler);
  proc.once('SIGINT', handler);
  return () => {
    proc.off!('SIGTERM', handler);
    proc.off!('SIGINT', handler);
  };
}
