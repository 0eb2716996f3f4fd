/**
 * The owner check: before the reaper takes a job whose lease expired, it may
 * ask the platform the workers run on whether the process holding the lease
 * still exists (LEASEHOLD_OWNER_CHECK_URL). Heartbeats and the worker
 * registry can only say "not heard from lately"; Kubernetes or systemd know
 * whether the pod or unit is gone, so a known-dead owner's jobs are taken at
 * once and a live-but-silent one's get the usual bounded wait.
 *
 * One GET per owner process per pass, all at once, with one deadline
 * (LEASEHOLD_OWNER_CHECK_TIMEOUT_MS):
 *
 *   GET <url>?worker=<id>&instance=<id>&host=<host>&pid=<pid>
 *   -> 200 {"state": "alive" | "gone" | "unknown"}
 *
 * Parameters the database does not know are left out. Anything else (another
 * status, another body, a network error, no answer in time) is `unknown`, and
 * the reaper keeps its usual rule: a broken check can delay nothing beyond
 * today's bounds and take nothing early. docs/owner-check.md has sample
 * answers for Kubernetes and systemd.
 */
import type { OwnerAnswer } from '../core/reaper.ts';
import type { Fetch } from './alerts.ts';

/** The process a lease names: the worker id, and what its liveness row says of it. */
export interface OwnerProcess {
  workerId: string;
  instanceId: string | null;
  host: string | null;
  pid: number | null;
}

const key = (o: OwnerProcess) => `${o.workerId}\u0000${o.instanceId ?? ''}`;

/** Asks about each distinct owner once; answers by owner (see `ownerKey`). */
export async function askOwners(owners: readonly OwnerProcess[], o: { url: string; timeoutMs: number; fetch: Fetch }): Promise<Map<string, OwnerAnswer>> {
  const distinct = new Map<string, OwnerProcess>();
  for (const owner of owners) distinct.set(key(owner), owner);
  const deadline = AbortSignal.timeout(o.timeoutMs);
  const answers = await Promise.all([...distinct].map(async ([k, owner]) => [k, await askOne(owner, o.url, o.timeoutMs, deadline, o.fetch)] as const));
  return new Map(answers);
}

export const ownerKey = key;

async function askOne(owner: OwnerProcess, url: string, timeoutMs: number, signal: AbortSignal, fetchFn: Fetch): Promise<OwnerAnswer> {
  const target = new URL(url);
  target.searchParams.set('worker', owner.workerId);
  if (owner.instanceId !== null) target.searchParams.set('instance', owner.instanceId);
  if (owner.host !== null) target.searchParams.set('host', owner.host);
  if (owner.pid !== null) target.searchParams.set('pid', String(owner.pid));
  // The check's URL may carry a token: messages name the process, not the URL.
  const asked = `worker ${owner.workerId}${owner.host !== null ? ` on ${owner.host}` : ''}${owner.pid !== null ? `, pid ${owner.pid}` : ''}`;
  try {
    const res = await fetchFn(target.toString(), { method: 'GET', headers: { accept: 'application/json' }, signal });
    const text = await res.text();
    if (!res.ok) return { state: 'unknown', detail: `asked about ${asked}: the check answered HTTP ${res.status}` };
    const state = parseState(text);
    if (!state) return { state: 'unknown', detail: `asked about ${asked}: the check's answer was not {"state": "alive" | "gone" | "unknown"}` };
    return { state, detail: `asked about ${asked}: ${state}` };
  } catch (err) {
    if (signal.aborted) return { state: 'unknown', detail: `asked about ${asked}: no answer within ${timeoutMs} ms` };
    return { state: 'unknown', detail: `asked about ${asked}: ${err instanceof Error ? err.message : String(err)}` };
  }
}

function parseState(text: string): OwnerAnswer['state'] | undefined {
  try {
    const body: unknown = JSON.parse(text);
    const state = typeof body === 'object' && body !== null ? (body as { state?: unknown }).state : undefined;
    return state === 'alive' || state === 'gone' || state === 'unknown' ? state : undefined;
  } catch {
    return undefined;
  }
}
