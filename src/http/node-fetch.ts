/**
 * The `fetch` the worker SDK and the client use when none is given.
 *
 * On Node it sends through node:http(s) with a keep-alive agent instead of
 * the global fetch (undici): over loopback, a worker call or a coalesced
 * enqueue of 8 jobs took 1.17 ms against 1.84 ms, and /healthz 0.37 against
 * 0.75 ms (docs/benchmarks.md). Every SDK call is a round trip someone
 * waits on, so that difference is most of what a single enqueue costs.
 * Everywhere else (Deno, Bun, Workers, browsers) it is the global fetch.
 *
 * It covers what our two callers send (a string URL, a method, plain
 * headers, a string body, an abort signal) and answers a real Response.
 * Anything else goes to the global fetch, so a caller never sees a
 * difference but the time.
 *
 * Redirects: a GET or HEAD answered with one is sent again through the
 * global fetch, which follows it (a read may be sent twice). Any other
 * method is sent once, and its redirect is the answer (status and Location,
 * as `redirect: 'manual'` gives): following it would send the call again,
 * and an enqueue or a completion must not be made twice behind the caller's
 * back. Our API never redirects a call; a proxy or a wrong URL that does is
 * for the caller to see. `redirect: 'manual'` answers every redirect as is,
 * `redirect: 'error'` fails on one.
 */

type NodeHttp = typeof import('node:http');
type Sender = { http: NodeHttp; agent: import('node:http').Agent };

/** Node itself, not Bun or Deno (which answer to process.versions.node too) or workerd. */
function isNode(): boolean {
  const g = globalThis as { process?: { versions?: { node?: string } }; Bun?: unknown; Deno?: unknown; navigator?: { userAgent?: string } };
  return typeof g.process?.versions?.node === 'string' && g.Bun === undefined && g.Deno === undefined && g.navigator?.userAgent !== 'Cloudflare-Workers';
}

let senders: Promise<{ 'http:': Sender; 'https:': Sender } | null> | undefined;

/**
 * node:http and node:https, loaded once on first use. The specifiers are
 * not literals, so bundlers leave them alone: leasehold/worker and
 * leasehold/client bundle for any platform without Node built-ins
 * (test/sdk/bundles.test.ts).
 */
function loadSenders() {
  senders ??= (async () => {
    try {
      const specifiers = ['node:http', 'node:https'];
      const [http, https] = (await Promise.all(specifiers.map((name) => import(/* @vite-ignore */ name)))) as [NodeHttp, typeof import('node:https')];
      // keepAlive: one connection serves call after call. Node closes an idle
      // socket a second before the server's Keep-Alive timeout hint, and free
      // sockets do not keep the process alive.
      return { 'http:': { http, agent: new http.Agent({ keepAlive: true }) }, 'https:': { http: https as unknown as NodeHttp, agent: new https.Agent({ keepAlive: true }) } };
    } catch {
      return null;
    }
  })();
  return senders;
}

const REDIRECT = new Set([301, 302, 303, 307, 308]);
/** Methods a request may be sent twice with (RFC 9110 idempotent reads). */
const SAFE_TO_REPEAT = new Set(['GET', 'HEAD']);
const NULL_BODY = new Set([101, 204, 205, 304]);

function send(sender: Sender, url: URL, init: RequestInit, body: string | undefined, signal: AbortSignal | undefined, retry: boolean): Promise<Response> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => (headers[name] = value));
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    const method = (init.method ?? 'GET').toUpperCase();
    const req = sender.http.request(url, { method, headers, agent: sender.agent });
    let answered = false;
    const onAbort = () => req.destroy(signal!.reason as Error);
    signal?.addEventListener('abort', onAbort, { once: true });
    const done = () => signal?.removeEventListener('abort', onAbort);
    req.on('error', (err: NodeJS.ErrnoException) => {
      done();
      if (signal?.aborted) return reject(signal.reason);
      // A kept-alive socket the server closed just as this request went out.
      // Node's documented remedy is to send it again on a fresh connection,
      // but a reset does not prove the server did nothing (a server cut off
      // mid-request may have committed): only a read is safe to send twice.
      // A POST fails as the global fetch fails it; the SDK decides (its
      // completion with a claim must not claim twice, completer.ts).
      if (retry && !answered && SAFE_TO_REPEAT.has(method) && req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) {
        return resolve(send(sender, url, init, body, signal, false));
      }
      reject(new TypeError('fetch failed', { cause: err }));
    });
    req.on('response', (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', (err) => {
        done();
        reject(signal?.aborted ? signal.reason : new TypeError('fetch failed', { cause: err }));
      });
      res.on('end', () => {
        done();
        const status = res.statusCode ?? 0;
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          if (Array.isArray(value)) for (const v of value) responseHeaders.append(name, v);
          else if (value !== undefined) responseHeaders.set(name, value);
        }
        resolve(new Response(NULL_BODY.has(status) ? null : Buffer.concat(chunks), { status, statusText: res.statusMessage ?? '', headers: responseHeaders }));
      });
    });
    req.end(body);
  });
}

/** The default fetch of the SDK and the client (see the top of this file). */
export const sdkFetch: typeof fetch = async (input, init = {}) => {
  const body = init.body;
  const signal = init.signal ?? undefined;
  if (typeof input !== 'string' || !(body === undefined || body === null || typeof body === 'string') || !isNode()) return globalThis.fetch(input, init);
  const loaded = await loadSenders();
  const url = new URL(input);
  const sender = loaded?.[url.protocol as 'http:' | 'https:'];
  if (!sender) return globalThis.fetch(input, init);
  signal?.throwIfAborted();
  const res = await send(sender, url, init, body ?? undefined, signal, true);
  if (!REDIRECT.has(res.status) || !res.headers.has('location')) return res;
  const method = (init.method ?? 'GET').toUpperCase();
  if (init.redirect === 'error') throw new TypeError(`fetch failed: ${method} ${url.origin}${url.pathname} was redirected (${res.status}) and redirect is 'error'`);
  return init.redirect !== 'manual' && SAFE_TO_REPEAT.has(method) ? globalThis.fetch(input, init) : res;
};
