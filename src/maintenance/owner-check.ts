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
 *
 * Two answers are refused outright, and are `unknown` too, never `gone`:
 * - a redirect is not followed (the verdict must come from the URL the
 *   operator configured, not from wherever it points: a 302 to a URL that
 *   says "gone" would take a live worker's job at once);
 * - an answer longer than OWNER_CHECK_MAX_BYTES is not read past that (the
 *   answer is a few bytes of JSON; an endless one grew the server by
 *   hundreds of MiB in one pass before).
 * Each refusal is told to the caller (`refused`), which counts it
 * (leasehold_owner_check_refused_total) and logs it.
 */
import type { OwnerAnswer } from '../core/reaper.ts';
import type { Fetch } from './alerts.ts';

/** The most of an answer read: {"state": "unknown"} is 20 bytes. */
export const OWNER_CHECK_MAX_BYTES = 4096;

/** Why an answer was refused (the label of leasehold_owner_check_refused_total). */
export type OwnerCheckRefusal = 'redirect' | 'too_large';
export const OWNER_CHECK_REFUSALS: readonly OwnerCheckRefusal[] = ['redirect', 'too_large'];

/** The process a lease names: the worker id, and what its liveness row says of it. */
export interface OwnerProcess {
  workerId: string;
  instanceId: string | null;
  host: string | null;
  pid: number | null;
}

/** An answer refused, with the owner it was about; its `detail` is what the reaper's event says. */
export interface RefusedOwnerAnswer {
  workerId: string;
  reason: OwnerCheckRefusal;
  detail: string;
}

const key = (o: OwnerProcess) => `${o.workerId}\u0000${o.instanceId ?? ''}`;

/** Asks about each distinct owner once; answers by owner (see `ownerKey`), and the answers it refused. */
export async function askOwners(
  owners: readonly OwnerProcess[],
  o: { url: string; timeoutMs: number; fetch: Fetch },
): Promise<{ answers: Map<string, OwnerAnswer>; refused: RefusedOwnerAnswer[] }> {
  const distinct = new Map<string, OwnerProcess>();
  for (const owner of owners) distinct.set(key(owner), owner);
  const deadline = AbortSignal.timeout(o.timeoutMs);
  const asked = await Promise.all([...distinct].map(async ([k, owner]) => [k, owner, await askOne(owner, o.url, o.timeoutMs, deadline, o.fetch)] as const));
  const refused = asked.flatMap(([, owner, a]) => (a.refused ? [{ workerId: owner.workerId, reason: a.refused, detail: a.answer.detail }] : []));
  return { answers: new Map(asked.map(([k, , a]) => [k, a.answer])), refused };
}

export const ownerKey = key;

async function askOne(owner: OwnerProcess, url: string, timeoutMs: number, signal: AbortSignal, fetchFn: Fetch): Promise<{ answer: OwnerAnswer; refused?: OwnerCheckRefusal }> {
  const target = new URL(url);
  target.searchParams.set('worker', owner.workerId);
  if (owner.instanceId !== null) target.searchParams.set('instance', owner.instanceId);
  if (owner.host !== null) target.searchParams.set('host', owner.host);
  if (owner.pid !== null) target.searchParams.set('pid', String(owner.pid));
  // The check's URL may carry a token: messages name the process, not the URL.
  const asked = `worker ${owner.workerId}${owner.host !== null ? ` on ${owner.host}` : ''}${owner.pid !== null ? `, pid ${owner.pid}` : ''}`;
  const unknown = (why: string, refused?: OwnerCheckRefusal) => ({ answer: { state: 'unknown' as const, detail: `asked about ${asked}: ${why}` }, ...(refused ? { refused } : {}) });
  try {
    const res = await fetchFn(target.toString(), { method: 'GET', headers: { accept: 'application/json' }, redirect: 'manual', signal });
    // 'manual' hands back the 3xx itself (Node, Workers), or an opaque redirect (browsers' fetch).
    if (res.type === 'opaqueredirect' || (res.status >= 300 && res.status < 400)) {
      await res.body?.cancel().catch(() => undefined);
      return unknown(`the check answered a redirect${res.status ? ` (HTTP ${res.status})` : ''}, which is not followed`, 'redirect');
    }
    const text = await readAtMost(res, OWNER_CHECK_MAX_BYTES);
    if (text === undefined) return unknown(`the check's answer was longer than ${OWNER_CHECK_MAX_BYTES} bytes, and was not read further`, 'too_large');
    if (!res.ok) return unknown(`the check answered HTTP ${res.status}`);
    const state = parseState(text);
    if (!state) return unknown(`the check's answer was not {"state": "alive" | "gone" | "unknown"}`);
    return { answer: { state, detail: `asked about ${asked}: ${state}` } };
  } catch (err) {
    if (signal.aborted) return unknown(`no answer within ${timeoutMs} ms`);
    return unknown(err instanceof Error ? err.message : String(err));
  }
}

/** The body as text, or undefined once it passes `max` bytes (it says so, or it streams past): the rest is not read. */
async function readAtMost(res: Response, max: number): Promise<string | undefined> {
  const declared = Number(res.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > max) {
    await res.body?.cancel().catch(() => undefined);
    return undefined;
  }
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.byteLength;
  }
  return new TextDecoder().decode(all);
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
