/**
 * The checks the worker SDK's httpTransport and the producer client make on
 * the options they are given, so a missing or wrong one fails at once with
 * a TypeError that names it, instead of a `Cannot read properties of
 * undefined` from deep inside (or a 404 on every call later).
 */

/** What both take: a server URL, an optional token, an optional timeout and fetch. */
export interface SenderOptions {
  url: string;
  token?: string | undefined;
  requestTimeoutMs?: number | undefined;
  fetch?: typeof fetch | undefined;
}

/**
 * Checks `options` (given to `caller`, e.g. `createClient`) and answers the
 * base URL without its trailing slashes.
 */
export function checkSenderOptions(caller: string, options: unknown, example: string): string {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new TypeError(`${caller} takes an options object, e.g. ${caller}(${example}); got ${describe(options)}`);
  }
  const o = options as Partial<Record<keyof SenderOptions, unknown>>;
  if (o.url === undefined || o.url === '') {
    throw new TypeError(`${caller}: url is required: the leasehold server's base URL, e.g. ${caller}(${example})`);
  }
  if (typeof o.url !== 'string') throw new TypeError(`${caller}: url must be a string such as 'http://127.0.0.1:8787', got ${describe(o.url)}`);
  let parsed: URL;
  try {
    parsed = new URL(o.url);
  } catch {
    throw new TypeError(`${caller}: url ${JSON.stringify(o.url)} is not a URL: give the server's base URL with its scheme, e.g. 'http://127.0.0.1:8787'`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new TypeError(`${caller}: url must start with http:// or https://, got ${JSON.stringify(o.url)}`);
  }
  if (parsed.search || parsed.hash) throw new TypeError(`${caller}: url is the server's base URL, without ?query or #fragment, got ${JSON.stringify(o.url)}`);
  // An empty string is no token (an environment variable set to nothing).
  if (o.token !== undefined && typeof o.token !== 'string') {
    throw new TypeError(`${caller}: token must be a string (the server's bearer token) or left out, got ${describe(o.token)}`);
  }
  if (o.requestTimeoutMs !== undefined && !(typeof o.requestTimeoutMs === 'number' && Number.isFinite(o.requestTimeoutMs) && o.requestTimeoutMs > 0)) {
    throw new TypeError(`${caller}: requestTimeoutMs must be a positive number of ms, got ${describe(o.requestTimeoutMs)}`);
  }
  if (o.fetch !== undefined && typeof o.fetch !== 'function') throw new TypeError(`${caller}: fetch must be a function like the global fetch, got ${describe(o.fetch)}`);
  return o.url.replace(/\/+$/, '');
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
  if (typeof value === 'object') return 'an object';
  return typeof value === 'number' || typeof value === 'boolean' ? String(value) : typeof value;
}
