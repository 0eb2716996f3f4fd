/**
 * The HTTP transport: only `fetch`, so it runs on Node, Deno, Bun and Workers
 * (on Node the default fetch is node:http with a kept-alive connection, see
 * src/http/node-fetch.ts).
 */
import { sdkFetch } from '../http/node-fetch.ts';
import { checkSenderOptions } from '../http/options.ts';
import type { JobDependenciesWire, StepWire } from '../core/wire.ts';
import type { CallOptions, ClaimedJob, EffectFinish, EffectStart, LeaseAnswer, StepsAnswer, Transport } from './transport.ts';
import { TokenRefusedError, TransportError } from './transport.ts';

export interface HttpTransportOptions {
  /** Base URL of the leasehold server, e.g. http://127.0.0.1:8787 */
  url: string;
  /** LEASEHOLD_WORKER_TOKEN, when the server has one. */
  token?: string | undefined;
  /**
   * Per-request timeout; a request that takes longer counts as a failed call.
   * Default 10 s. A call that carries leases gives up sooner when they run
   * out first (the worker passes its signal), so this bounds claims and idle
   * beats; createWorker warns when it is longer than a renewal can take and
   * still be in time (lease-rules.ts).
   */
  requestTimeoutMs?: number;
  /** Default: node:http with keep-alive on Node, the global fetch elsewhere. */
  fetch?: typeof fetch;
}

interface WireError {
  error?: { code?: string; message?: string; cause?: string; field?: string; retryAfterSeconds?: number };
}

/** A 429's wait in seconds, as its body says (the Retry-After header says the same); 1 s when it says nothing usable. */
const retryAfterSeconds = (error: WireError['error']) => {
  const s = error?.retryAfterSeconds;
  return typeof s === 'number' && Number.isFinite(s) && s > 0 ? Math.min(s, 60) : 1;
};

type BatchResult = { id: string; ok: true } | { id: string; ok: false; error: { code: string; message: string; cause?: string } };

/** The server says why a lease was refused when the attempt ran out of time. */
const deadlineCause = (error: { cause?: string } | undefined) => (error?.cause === 'deadline_exceeded' ? { cause: 'deadline_exceeded' as const } : {});

export function httpTransport(options: HttpTransportOptions): Transport {
  const base = checkSenderOptions('httpTransport', options, "{ url: 'http://127.0.0.1:8787', token: process.env.LEASEHOLD_WORKER_TOKEN }") + '/api/v1';
  const doFetch = options.fetch ?? sdkFetch;
  const timeout = options.requestTimeoutMs ?? 10_000;

  /**
   * POSTs JSON (GETs, without `body`). Answers the parsed body, or a lease verdict for 404/409; throws TransportError otherwise.
   * `wait.waitMs`: the server may hold this request that long on purpose (a waiting claim), on top of the timeout.
   * `wait.signal`: ends the request sooner (the worker closing, or the leases the call carries running out).
   */
  async function post<T>(
    path: string,
    body: unknown,
    pass: readonly number[] = [],
    wait: { waitMs?: number | undefined; signal?: AbortSignal | undefined } = {},
  ): Promise<{ status: number; json: T & WireError }> {
    let res: Response;
    try {
      const limit = AbortSignal.timeout(timeout + (wait.waitMs ?? 0));
      const auth: Record<string, string> = options.token ? { authorization: `Bearer ${options.token}` } : {};
      res = await doFetch(base + path, {
        signal: wait.signal ? AbortSignal.any([limit, wait.signal]) : limit,
        ...(body === undefined ? { method: 'GET', headers: auth } : { method: 'POST', headers: { 'content-type': 'application/json', ...auth }, body: JSON.stringify(body) }),
      });
    } catch (err) {
      throw new TransportError(`cannot reach leasehold at ${options.url}: ${(err as Error).message}`);
    }
    let json: T & WireError;
    try {
      json = (await res.json()) as T & WireError;
    } catch {
      throw new TransportError(`leasehold answered ${res.status} without JSON on ${path}`);
    }
    if (res.status === 409 || res.status === 404 || res.ok || pass.includes(res.status)) return { status: res.status, json };
    const message = `${path}: ${res.status} ${json.error?.code ?? ''} ${json.error?.message ?? ''}`.trim();
    if (res.status === 401 || res.status === 403) {
      throw new TokenRefusedError(res.status, `leasehold at ${options.url} refused the worker token (${res.status} ${json.error?.code ?? ''}: ${json.error?.message ?? ''}); check LEASEHOLD_WORKER_TOKEN`);
    }
    // 5xx and 429 may pass (a restart, a busy server): retry later. Any other
    // 4xx is a request that will never succeed as sent.
    if (res.status >= 500 || res.status === 429) throw new TransportError(message);
    throw new Error(`leasehold refused ${message}`);
  }

  async function heartbeats(body: { workerId: string; leases: unknown[]; leaseMs?: number | undefined; worker?: unknown }, c: CallOptions = {}): Promise<LeaseAnswer[]> {
    const r = await post<{ results: BatchResult[] }>('/heartbeats', body, [], c);
    if (r.status !== 200) throw new TransportError(`heartbeats: ${r.status} ${r.json.error?.message ?? ''}`);
    return batch(r.json.results);
  }

  const verdict = (id: string, r: { status: number; json: WireError }): LeaseAnswer =>
    r.status === 409 || r.status === 404
      ? { id, ok: false, code: r.status === 409 ? 'lease_lost' : 'not_found', message: r.json.error?.message ?? 'lease lost', ...deadlineCause(r.json.error) }
      : { id, ok: true };

  const batch = (results: BatchResult[]): LeaseAnswer[] =>
    results.map((r) => (r.ok ? { id: r.id, ok: true } : { id: r.id, ok: false, code: r.error.code === 'not_found' ? 'not_found' : 'lease_lost', message: r.error.message, ...deadlineCause(r.error) }));

  const transport: Transport = {
    requestTimeoutMs: timeout,
    async claim(p) {
      const body = { workerId: p.workerId, instanceId: p.instanceId, limit: p.limit, leaseMs: p.leaseMs, claimId: p.claimId, ...(p.waitMs ? { waitMs: p.waitMs } : {}) };
      const r = await post<{ jobs: ClaimedJob[]; retryAfterMs?: number }>(`/queues/${encodeURIComponent(p.queue)}/claim`, body, [429], { waitMs: p.waitMs, signal: p.signal });
      // The server holds as many waiting claims as it allows (or this
      // token does): nothing was claimed; come back when it says.
      if (r.status === 429) return { jobs: [], retryAfterMs: 1_000 * retryAfterSeconds(r.json.error) };
      if (r.status !== 200) throw new TransportError(`claim: ${r.status} ${r.json.error?.message ?? ''}`);
      return typeof r.json.retryAfterMs === 'number' ? { jobs: r.json.jobs, retryAfterMs: r.json.retryAfterMs } : { jobs: r.json.jobs };
    },
    async heartbeat(p, c) {
      const leases = p.leases.map((l) => ({ id: l.id, lockToken: l.lockToken, progress: l.progress }));
      return heartbeats({ workerId: p.workerId, leases, leaseMs: p.leaseMs, ...(p.beat ? { worker: p.beat } : {}) }, c);
    },
    async checkpoint(p, c) {
      return verdict(p.lease.id, await post(`/jobs/${p.lease.id}/checkpoint`, { workerId: p.workerId, lockToken: p.lease.lockToken, checkpoint: p.checkpoint }, [], c));
    },
    async complete(p, c) {
      const r = await post<{ results: BatchResult[]; jobs?: ClaimedJob[] }>(
        '/completions',
        { workerId: p.workerId, instanceId: p.instanceId, results: p.results.map((x) => ({ id: x.id, lockToken: x.lockToken, result: x.result })), claim: p.claim },
        [],
        c,
      );
      if (r.status !== 200) throw new TransportError(`completions: ${r.status} ${r.json.error?.message ?? ''}`);
      return { answers: batch(r.json.results), claimed: r.json.jobs ?? [] };
    },
    async fail(p, c) {
      return verdict(
        p.lease.id,
        await post(`/jobs/${p.lease.id}/fail`, { workerId: p.workerId, lockToken: p.lease.lockToken, error: p.error, retryable: p.retryable, retryAfterMs: p.retryAfterMs, abortedBy: p.abortedBy }, [], c),
      );
    },
    async snooze(p, c) {
      const r = await post<{ job: unknown }>(`/jobs/${p.lease.id}/snooze`, { workerId: p.workerId, lockToken: p.lease.lockToken, delayMs: p.delayMs }, [], c);
      const cause = (r.json.error as { cause?: string } | undefined)?.cause;
      if (r.status === 409 && cause === 'snooze_limit') return { id: p.lease.id, ok: false, code: 'snooze_limit', message: r.json.error?.message ?? 'snooze limit' };
      return verdict(p.lease.id, r);
    },
    async release(p, c) {
      const r = await post<{ results: BatchResult[] }>('/releases', { workerId: p.workerId, leases: p.leases.map((l) => ({ id: l.id, lockToken: l.lockToken })), reason: p.reason }, [], c);
      if (r.status === 200) return batch(r.json.results);
      throw new TransportError(`releases: ${r.status} ${r.json.error?.message ?? ''}`);
    },
    async effectStart(p, c): Promise<EffectStart> {
      const r = await post<{ state: 'run' | 'done'; result?: unknown }>(`/jobs/${p.lease.id}/effects/start`, { workerId: p.workerId, lockToken: p.lease.lockToken, key: p.key }, [], c);
      if (r.status !== 200) return { kind: 'lease_lost', message: r.json.error?.message ?? 'lease lost' };
      return r.json.state === 'done' ? { kind: 'done', result: r.json.result } : { kind: 'run' };
    },
    async effectFinish(p, c): Promise<EffectFinish> {
      const body = { workerId: p.workerId, lockToken: p.lease.lockToken, key: p.key, result: p.result, ...(p.checkpoint === undefined ? {} : { checkpoint: p.checkpoint }) };
      const r = await post<{ result: unknown }>(`/jobs/${p.lease.id}/effects/finish`, body, [], c);
      if (r.status === 409 || r.status === 404) return { kind: 'lease_lost', message: r.json.error?.message ?? 'lease lost' };
      if (r.status !== 200) throw new TransportError(`effects/finish: ${r.status} ${r.json.error?.message ?? ''}`);
      return { kind: 'done', result: r.json.result };
    },
    async steps(p, c): Promise<StepsAnswer> {
      const r = await post<{ steps: StepWire[] }>(`/jobs/${p.lease.id}/steps`, { workerId: p.workerId, lockToken: p.lease.lockToken }, [], c);
      if (r.status === 409 || r.status === 404) return { kind: 'lease_lost', message: r.json.error?.message ?? 'lease lost' };
      return { kind: 'ok', steps: r.json.steps };
    },
    async reportDuplicate(p, c) {
      return verdict(p.lease.id, await post(`/jobs/${p.lease.id}/duplicates`, { workerId: p.workerId, lockToken: p.lease.lockToken, key: p.key }, [], c));
    },
    async dependencies(p, c) {
      const path = `/jobs/${encodeURIComponent(p.id)}/dependencies`;
      const r = await post<JobDependenciesWire>(path, undefined, [], c);
      // 404: no such job (its handler runs, so it was deleted meanwhile): a request that cannot succeed as sent.
      if (r.status !== 200) throw new Error(`leasehold refused ${path}: ${r.status} ${r.json.error?.code ?? ''} ${r.json.error?.message ?? ''}`.trim());
      return r.json.dependencies;
    },
  };
  return transport;
}
