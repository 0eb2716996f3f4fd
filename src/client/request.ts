/**
 * How the producer client sends one call: JSON in and out under /api/v1,
 * the bearer token, a timeout (longer by the time a call waits on the
 * server on purpose), and the server's error answer turned into a
 * LeaseholdApiError with its code, message and field.
 */
import { LeaseholdApiError, LeaseholdNetworkError } from './errors.ts';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface CallOptions {
  /** The server may hold this call this long on purpose (a wait): added to the timeout. */
  waitMs?: number;
  /** Ends the call sooner (the caller gave up). */
  signal?: AbortSignal | undefined;
  /** Query string fields; undefined ones are left out, an array is the field once per item. */
  query?: Record<string, string | number | boolean | readonly string[] | undefined>;
}

export type Request = <T>(method: Method, path: string, body?: unknown, o?: CallOptions) => Promise<T>;

export function requester(p: { base: string; url: string; token: string | undefined; timeoutMs: number; fetch: typeof fetch }): Request {
  return async function request<T>(method: Method, path: string, body?: unknown, o: CallOptions = {}): Promise<T> {
    const query = Object.entries(o.query ?? {}).flatMap(([k, v]): [string, string][] => (v === undefined ? [] : Array.isArray(v) ? v.map((item) => [k, item]) : [[k, String(v)]]));
    const url = `${p.base}/api/v1${path}${query.length ? `?${new URLSearchParams(query)}` : ''}`;
    // Every call but a GET sends JSON, also those without a body (the server refuses others with 415).
    const sendsBody = method !== 'GET';
    let res: Response;
    try {
      const limit = AbortSignal.timeout(p.timeoutMs + (o.waitMs ?? 0));
      res = await p.fetch(url, {
        method,
        headers: { ...(sendsBody ? { 'content-type': 'application/json' } : {}), ...(p.token ? { authorization: `Bearer ${p.token}` } : {}) },
        ...(sendsBody ? { body: JSON.stringify(body ?? {}) } : {}),
        signal: o.signal ? AbortSignal.any([limit, o.signal]) : limit,
      });
    } catch (err) {
      if (o.signal?.aborted) throw o.signal.reason;
      throw new LeaseholdNetworkError(`cannot reach leasehold at ${p.url}: ${(err as Error).message}`, { cause: err });
    }
    let json: unknown;
    try {
      json = await res.json();
    } catch {
      throw new LeaseholdNetworkError(`leasehold answered ${res.status} without JSON on ${method} ${path}`);
    }
    if (res.ok) return json as T;
    const error = (json as { error?: { code?: string; message?: string; field?: string } }).error ?? {};
    const retryAfter = Number(res.headers.get('retry-after'));
    throw new LeaseholdApiError(res.status, error.code ?? `http_${res.status}`, error.message ?? `${method} ${path} answered ${res.status}`, error.field, Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : undefined);
  };
}
