/**
 * The CLI's side of the HTTP API: which server a command talks to (and saying
 * so on stderr), and one request function whose errors are one line each.
 * Only `fetch`: no server code is loaded for a command that uses a server.
 */
import type { Config } from '../core/config.ts';
import { LeaseholdApiError, LeaseholdNetworkError } from '../client/errors.ts';
import { redactUrl } from '../core/redact.ts';

export { LeaseholdApiError, LeaseholdNetworkError };

export const URL_FLAG = { flag: '--url', help: 'leasehold server URL (or LEASEHOLD_URL); the admin token is --admin-token / LEASEHOLD_ADMIN_TOKEN' };

/** --url, else LEASEHOLD_URL, else undefined. */
export function urlGiven(flags: Map<string, string | true>, env: Record<string, string | undefined> = process.env): string | undefined {
  const flag = flags.get('--url');
  if (typeof flag === 'string' && flag !== '') return flag;
  return env.LEASEHOLD_URL || undefined;
}

/**
 * The server an operator command talks to: the URL given, else the one this
 * configuration would serve on (LEASEHOLD_HOST / LEASEHOLD_PORT, a wildcard
 * host read as loopback). Says which on stderr.
 */
export function operatorServer(command: string, config: Config, flags: Map<string, string | true>): ServerApi {
  const given = urlGiven(flags);
  if (given) {
    console.error(`leasehold ${command}: server ${redactUrl(given)}`);
    return serverApi(given, config.adminToken);
  }
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host.includes(':') && !config.host.startsWith('[') ? `[${config.host}]` : config.host;
  const url = `http://${host}:${config.port}`;
  console.error(`leasehold ${command}: server ${url} (no --url or LEASEHOLD_URL: from LEASEHOLD_HOST and LEASEHOLD_PORT)`);
  return serverApi(url, config.adminToken);
}

export interface ServerApi {
  url: string;
  get<T = any>(path: string): Promise<T>;
  post<T = any>(path: string, body?: unknown): Promise<T>;
  patch<T = any>(path: string, body: unknown): Promise<T>;
  put<T = any>(path: string, body: unknown): Promise<T>;
  delete<T = any>(path: string): Promise<T>;
}

/** Calls under /api/v1 with the admin token (when set); an error answer throws LeaseholdApiError. */
export function serverApi(url: string, token: string | undefined, timeoutMs = 30_000): ServerApi {
  const base = url.replace(/\/+$/, '');
  async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
    let res: Response;
    try {
      res = await fetch(`${base}/api/v1${path}`, {
        method,
        headers: {
          // Every call but a GET sends JSON, also those without a body (the server refuses others with 415).
          ...(method === 'GET' ? {} : { 'content-type': 'application/json' }),
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        ...(method === 'GET' ? {} : { body: JSON.stringify(body ?? {}) }),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw new LeaseholdNetworkError(`cannot reach the server at ${redactUrl(base)}: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
    }
    const text = await res.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      throw new LeaseholdNetworkError(`the server at ${redactUrl(base)} answered ${res.status} without JSON to ${method} ${path}: ${text.slice(0, 120)}`);
    }
    if (res.ok) return json as T;
    const e = json?.error ?? {};
    throw new LeaseholdApiError(res.status, e.code ?? `http_${res.status}`, e.message ?? `${method} ${path} answered ${res.status}`, e.field);
  }
  return {
    url: base,
    get: (path) => request('GET', path),
    post: (path, body) => request('POST', path, body),
    patch: (path, body) => request('PATCH', path, body),
    put: (path, body) => request('PUT', path, body),
    delete: (path) => request('DELETE', path),
  };
}

/** The one line an error from the server becomes: status, the API's code, its message, and the field it names. */
export function errorLine(err: LeaseholdApiError | LeaseholdNetworkError): string {
  if (err instanceof LeaseholdApiError) return `${err.status} ${err.code}: ${err.message}${err.field ? ` (field ${err.field})` : ''}`;
  return err.message;
}
