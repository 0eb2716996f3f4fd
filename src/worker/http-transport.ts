/**
 * The HTTP transport: only `fetch`, so it runs on Node, Deno, Bun and Workers
 * (on Node the default fetch is node:http with a kept-alive connection, see
 * src/http/node-fetch.ts).
 */
import { sdkFetch } from '../http/node-fetch.ts';
import { checkSenderOptions } from '../http/options.ts';
import type { CallOptions, ClaimedJob, EffectFinish, EffectStart, LeaseAnswer, LeaseRef, Transport } from './transport.ts';
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
   * POSTs JSON. Answers the parsed body, or a lease verdict for 404/409; throws TransportError otherwise.
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
      res = await doFetch(base + path, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(options.token ? { authorization: `Bearer ${options.token}` } : {}) },
        body: JSON.stringify(body),
        signal: wait.signal ? AbortSignal.any([limit, wait.signal]) : limit,
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

  /** Set once a server refuses the beat inside /heartbeats (it predates it): beats then go to /workers/beat. */
  let beatsApart = false;
  /** False once a server refused a beat's `lostClaims` (it predates them): beats then leave them out. */
  let serverTakesLostClaims = true;
  const withoutLostClaims = <B extends { lostClaims?: unknown }>(beat: B): Omit<B, 'lostClaims'> => {
    const { lostClaims: _, ...rest } = beat;
    return rest;
  };

  /**
   * False once a server refused a claim's `claimId` (it predates claim ids):
   * such a server would claim again when a claim is sent again, so each
   * claim id goes to it once, and a retry claims nothing (the jobs of a lost
   * answer then wait for the reaper, as they always did there).
   */
  let serverTakesClaimIds = true;
  const sentToOldServer = new Set<string>();
  function firstSendToOldServer(claimId: string): boolean {
    if (sentToOldServer.has(claimId)) return false;
    sentToOldServer.add(claimId);
    // Only recent ids are ever sent again.
    if (sentToOldServer.size > 1_000) sentToOldServer.delete(sentToOldServer.values().next().value!);
    return true;
  }

  /** A 400 that was let through to look at its field, and is not a field we can leave out: refused as sent. */
  function refused(path: string, r: { status: number; json: WireError }): never {
    throw new Error(`leasehold refused ${path}: ${r.status} ${r.json.error?.code ?? ''} ${r.json.error?.message ?? ''}`.trim());
  }

  async function heartbeats(body: { workerId: string; leases: unknown[]; leaseMs?: number | undefined }, c: CallOptions = {}): Promise<LeaseAnswer[]> {
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

  /** False once the server refused a claim's waitMs (a server from before it). */
  let serverWaits = true;
  const transport: Transport = {
    requestTimeoutMs: timeout,
    async claim(p) {
      const path = `/queues/${encodeURIComponent(p.queue)}/claim`;
      for (;;) {
        const claimId = serverTakesClaimIds ? p.claimId : undefined;
        if (p.claimId !== undefined && claimId === undefined && !firstSendToOldServer(p.claimId)) return [];
        const waitMs = serverWaits ? p.waitMs : undefined;
        const body = { workerId: p.workerId, instanceId: p.instanceId, limit: p.limit, leaseMs: p.leaseMs, ...(claimId === undefined ? {} : { claimId }), ...(waitMs ? { waitMs } : {}) };
        const r = await post<{ jobs: ClaimedJob[]; retryAfterMs?: number }>(path, body, waitMs || claimId !== undefined ? [400, 429] : [429], { waitMs, signal: p.signal });
        // The server holds as many waiting claims as it allows (or this
        // token does): nothing was claimed; come back when it says.
        if (r.status === 429) return Object.assign([], { retryAfterMs: 1_000 * retryAfterSeconds(r.json.error) });
        if (r.status === 400) {
          // A server older than claimId or waitMs refuses the field: claim
          // without it from now on (claimId comes first in the body, so it
          // is the one named when both are unknown).
          if (claimId !== undefined && r.json.error?.field === 'claimId') serverTakesClaimIds = false;
          else if (waitMs) serverWaits = false;
          else refused(path, r);
          continue;
        }
        if (r.status !== 200) throw new TransportError(`claim: ${r.status} ${r.json.error?.message ?? ''}`);
        return typeof r.json.retryAfterMs === 'number' ? Object.assign(r.json.jobs, { retryAfterMs: r.json.retryAfterMs }) : r.json.jobs;
      }
    },
    async heartbeat(p, c) {
      const leases = p.leases.map((l) => ({ id: l.id, lockToken: l.lockToken, progress: l.progress }));
      if (p.beat && !beatsApart) {
        const worker = serverTakesLostClaims || !p.beat.lostClaims ? p.beat : withoutLostClaims(p.beat);
        const r = await post<{ results: BatchResult[] }>('/heartbeats', { workerId: p.workerId, leases, leaseMs: p.leaseMs, worker }, [400], c);
        if (r.status === 200) return batch(r.json.results);
        // A server older than lostClaims refuses them: beat without them from now on.
        if (serverTakesLostClaims && r.json.error?.field?.startsWith('worker.lostClaims')) {
          serverTakesLostClaims = false;
          return transport.heartbeat(p);
        }
        // A server older than the beat in the heartbeats call refuses `worker`
        // (or an empty `leases`): beat apart from then on, as before.
        if (r.json.error?.field !== 'worker' && r.json.error?.field !== 'leases') throw new Error(`leasehold refused /heartbeats: 400 ${r.json.error?.message ?? ''}`);
        beatsApart = true;
      }
      const [, answers] = await Promise.all([
        // Such a server predates lostClaims too.
        p.beat ? post('/workers/beat', { workerId: p.workerId, ...withoutLostClaims(p.beat) }, [], c) : undefined,
        leases.length > 0 ? heartbeats({ workerId: p.workerId, leases, leaseMs: p.leaseMs }, c) : [],
      ]);
      return answers;
    },
    async checkpoint(p, c) {
      return verdict(p.lease.id, await post(`/jobs/${p.lease.id}/checkpoint`, { workerId: p.workerId, lockToken: p.lease.lockToken, checkpoint: p.checkpoint }, [], c));
    },
    async complete(p, c) {
      for (;;) {
        let claim = p.claim;
        if (claim?.claimId !== undefined && !serverTakesClaimIds) {
          // A server without claim ids claims again on every send: only the first carries the claim.
          const { claimId, ...rest } = claim;
          claim = firstSendToOldServer(claimId) ? rest : undefined;
        }
        const r = await post<{ results: BatchResult[]; jobs?: ClaimedJob[] }>(
          '/completions',
          { workerId: p.workerId, instanceId: p.instanceId, results: p.results.map((x) => ({ id: x.id, lockToken: x.lockToken, result: x.result })), claim },
          claim?.claimId !== undefined ? [400] : [],
          c,
        );
        if (r.status === 400) {
          // A server older than claim ids refuses the field: nothing was written, send it without.
          if (r.json.error?.field !== 'claim.claimId') refused('/completions', r);
          serverTakesClaimIds = false;
          continue;
        }
        if (r.status !== 200) throw new TransportError(`completions: ${r.status} ${r.json.error?.message ?? ''}`);
        return { answers: batch(r.json.results), claimed: r.json.jobs ?? [] };
      }
    },
    async fail(p, c) {
      return verdict(
        p.lease.id,
        await post(`/jobs/${p.lease.id}/fail`, { workerId: p.workerId, lockToken: p.lease.lockToken, error: p.error, retryable: p.retryable, retryAfterMs: p.retryAfterMs }, [], c),
      );
    },
    async release(p, c) {
      const r = await post<{ results: BatchResult[] }>('/releases', { workerId: p.workerId, leases: p.leases.map((l) => ({ id: l.id, lockToken: l.lockToken })), reason: p.reason }, [], c);
      if (r.status === 200) return batch(r.json.results);
      // A server older than POST /releases has no such route: one call per lease, as before.
      if (r.status === 404 && r.json.error?.message?.startsWith('no route')) {
        return Promise.all(
          p.leases.map(async (l: LeaseRef) => verdict(l.id, await post(`/jobs/${l.id}/release`, { workerId: p.workerId, lockToken: l.lockToken, reason: p.reason }, [], c))),
        );
      }
      throw new TransportError(`releases: ${r.status} ${r.json.error?.message ?? ''}`);
    },
    async beat(p) {
      await post('/workers/beat', p);
    },
    async effectStart(p, c): Promise<EffectStart> {
      const r = await post<{ state: 'run' | 'done'; result?: unknown }>(`/jobs/${p.lease.id}/effects/start`, { workerId: p.workerId, lockToken: p.lease.lockToken, key: p.key }, [], c);
      if (r.status !== 200) return { kind: 'lease_lost', message: r.json.error?.message ?? 'lease lost' };
      return r.json.state === 'done' ? { kind: 'done', result: r.json.result } : { kind: 'run' };
    },
    async effectFinish(p, c): Promise<EffectFinish> {
      const r = await post<{ result: unknown }>(`/jobs/${p.lease.id}/effects/finish`, { workerId: p.workerId, lockToken: p.lease.lockToken, key: p.key, result: p.result }, [], c);
      if (r.status === 409 || r.status === 404) return { kind: 'lease_lost', message: r.json.error?.message ?? 'lease lost' };
      if (r.status !== 200) throw new TransportError(`effects/finish: ${r.status} ${r.json.error?.message ?? ''}`);
      return { kind: 'done', result: r.json.result };
    },
  };
  return transport;
}
