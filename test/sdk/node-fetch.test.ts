/**
 * The SDK's default fetch on Node (src/http/node-fetch.ts) answers like the
 * global fetch for everything the worker SDK and the client send: status,
 * headers and body both ways, refusals, aborts and timeouts, a server that
 * is not there, redirects (a read's followed, a POST's answered, never sent
 * twice), and a kept-alive connection the server closed (a read is sent
 * again, a POST is not).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, test } from 'vitest';
import { sdkFetch } from '../../src/http/node-fetch.ts';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

async function serve(handler: (req: IncomingMessage, res: ServerResponse, body: string) => void): Promise<string> {
  server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => handler(req, res, body));
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

test('a POST carries its method, headers and body, and the answer its status, headers and JSON', async () => {
  const url = await serve((req, res, body) => {
    res.writeHead(201, { 'content-type': 'application/json', 'x-seen': `${req.method} ${req.url} ${req.headers.authorization}` });
    res.end(JSON.stringify({ echoed: JSON.parse(body), length: req.headers['content-length'] }));
  });
  const body = JSON.stringify({ jobs: [{ payload: { text: 'grüße 👋' } }] });
  const res = await sdkFetch(`${url}/api/v1/queues/q/jobs`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer t' }, body });
  expect(res.status).toBe(201);
  expect(res.ok).toBe(true);
  expect(res.headers.get('x-seen')).toBe('POST /api/v1/queues/q/jobs Bearer t');
  // content-length counts bytes, not characters.
  expect(await res.json()).toEqual({ echoed: JSON.parse(body), length: String(Buffer.byteLength(body)) });
});

test('a refusal comes back as its status with its body; a 204 has no body', async () => {
  const url = await serve((req, res) => {
    if (req.url === '/none') return res.writeHead(204).end();
    res.writeHead(409, { 'content-type': 'application/json' }).end('{"error":{"code":"lease_lost"}}');
  });
  const refused = await sdkFetch(`${url}/x`, { method: 'POST', body: '{}' });
  expect([refused.status, refused.ok]).toEqual([409, false]);
  expect(await refused.json()).toEqual({ error: { code: 'lease_lost' } });
  const none = await sdkFetch(`${url}/none`);
  expect(none.status).toBe(204);
  expect(await none.text()).toBe('');
});

test('a timeout signal rejects with its TimeoutError, and an abort with its reason', async () => {
  const url = await serve(() => {}); // never answers
  await expect(sdkFetch(url, { signal: AbortSignal.timeout(50) })).rejects.toMatchObject({ name: 'TimeoutError' });
  const abort = new AbortController();
  const pending = sdkFetch(url, { method: 'POST', body: '{}', signal: abort.signal });
  abort.abort(new Error('worker closing'));
  await expect(pending).rejects.toThrow('worker closing');
  const already = new AbortController();
  already.abort(new Error('already'));
  await expect(sdkFetch(url, { signal: already.signal })).rejects.toThrow('already');
});

test('no server there: a TypeError, as the global fetch throws, with the cause', async () => {
  const url = await serve(() => {});
  await new Promise((resolve) => server!.close(resolve));
  server = undefined;
  const err = await sdkFetch(`${url}/x`).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(TypeError);
  expect((err as TypeError & { cause: { code: string } }).cause.code).toBe('ECONNREFUSED');
});

test('a read\'s redirect is followed, as the global fetch does', async () => {
  const url = await serve((req, res) => {
    if (req.url === '/old') return res.writeHead(307, { location: '/new' }).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ at: req.url, method: req.method }));
  });
  expect(await (await sdkFetch(`${url}/old`)).json()).toEqual({ at: '/new', method: 'GET' });
});

test('a POST answered with a redirect is sent once, and the redirect is its answer: it is not followed behind the caller\'s back', async () => {
  const seen: string[] = [];
  const url = await serve((req, res, body) => {
    seen.push(`${req.method} ${req.url} ${body}`);
    const redirect = /^\/old\?s=(\d+)$/.exec(req.url ?? '');
    if (redirect) return res.writeHead(Number(redirect[1]), { location: '/new' }).end();
    res.writeHead(201, { 'content-type': 'application/json' }).end('{}');
  });
  for (const status of [307, 308, 303, 302]) {
    seen.length = 0;
    const res = await sdkFetch(`${url}/old?s=${status}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":1}' });
    expect(res.status).toBe(status);
    expect(res.headers.get('location')).toBe('/new');
    expect(seen).toEqual([`POST /old?s=${status} {"n":1}`]);
  }
  // redirect: 'error' fails on it, clearly; 'manual' answers it for a read too.
  await expect(sdkFetch(`${url}/old?s=307`, { method: 'POST', body: '{}', redirect: 'error' })).rejects.toThrow(/POST .*\/old was redirected \(307\)/);
  expect((await sdkFetch(`${url}/old?s=307`, { redirect: 'manual' })).status).toBe(307);
});

test('calls share one kept-alive connection; a read the server drops before answering is sent again on a fresh one', async () => {
  const seen: number[] = [];
  let dropNextReused = true;
  const url = await serve((req, res) => {
    const socket = req.socket as typeof req.socket & { served?: number };
    socket.served = (socket.served ?? 0) + 1;
    seen.push(socket.remotePort!);
    // The race a kept-alive client meets: the server closes an idle
    // connection just as the next request goes out on it.
    if (socket.served === 3 && dropNextReused) {
      dropNextReused = false;
      return socket.destroy();
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ n: seen.length }));
  });
  for (let i = 0; i < 4; i++) expect((await sdkFetch(`${url}/x`)).status).toBe(200);
  // Calls 1-3 went on one connection; the 3rd was dropped unanswered and went again on a new one, with call 4.
  expect(seen).toHaveLength(5);
  expect(new Set(seen.slice(0, 3)).size).toBe(1);
  expect(seen[3]).not.toBe(seen[0]);
  expect(seen[4]).toBe(seen[3]);
});

test('a POST the server drops before answering is not sent again: it fails as the global fetch fails it', async () => {
  let received = 0;
  const url = await serve((req, res) => {
    received++;
    // The second call, on the kept-alive connection: cut off unanswered (it may have been acted on).
    if (received === 2) return req.socket.destroy();
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  expect((await sdkFetch(`${url}/x`, { method: 'POST', body: '{}' })).status).toBe(200);
  const err = await sdkFetch(`${url}/x`, { method: 'POST', body: '{}' }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(TypeError);
  expect(received).toBe(2);
});
