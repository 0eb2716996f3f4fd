/**
 * Constant answers through the real app: the OpenAPI document and the
 * dashboard's static files are built once, gzipped for a client that accepts
 * it, carry an ETag (a 304 when it is sent back) and Vary: Accept-Encoding;
 * answers that hold data stay `no-store`.
 */
import { afterEach, beforeEach, expect, test } from 'vitest';
import { createApp } from '../../src/app.ts';
import { acceptsGzip } from '../../src/api/constant-answer.ts';
import { assetsFromFiles } from '../../src/runtime/public-assets.ts';
import { setup, type TestBed } from '../support/helpers.ts';

let t: TestBed;
beforeEach(async () => {
  t = await setup();
});
afterEach(() => t.close());

const gunzip = async (res: Response) => new Response(res.body!.pipeThrough(new DecompressionStream('gzip'))).text();

test('the OpenAPI document is gzipped for a client that accepts it, with an ETag and Vary, and the same bytes every time', async () => {
  const plain = await t.app.request('/api/v1/openapi.json');
  expect(plain.status).toBe(200);
  expect(plain.headers.get('content-encoding')).toBeNull();
  expect(plain.headers.get('vary')).toBe('accept-encoding');
  expect(plain.headers.get('cache-control')).toBe('no-cache');
  const text = await plain.text();
  expect(Number(plain.headers.get('content-length'))).toBe(new TextEncoder().encode(text).byteLength);
  expect(JSON.parse(text).openapi).toMatch(/^3\./);

  const zipped = await t.app.request('/api/v1/openapi.json', { headers: { 'accept-encoding': 'gzip, deflate, br' } });
  expect(zipped.headers.get('content-encoding')).toBe('gzip');
  expect(zipped.headers.get('vary')).toBe('accept-encoding');
  expect(Number(zipped.headers.get('content-length'))).toBeLessThan(text.length / 4);
  expect(await gunzip(zipped)).toBe(text);
  // Each representation has its own ETag, stable across requests.
  expect(zipped.headers.get('etag')).not.toBe(plain.headers.get('etag'));
  const again = await t.app.request('/api/v1/openapi.json');
  expect(again.headers.get('etag')).toBe(plain.headers.get('etag'));
  expect(await again.text()).toBe(text);
});

test('a client that sends the ETag back gets a 304 without a body; gzip;q=0 gets the plain document', async () => {
  const first = await t.app.request('/api/v1/openapi.json', { headers: { 'accept-encoding': 'gzip' } });
  const etag = first.headers.get('etag')!;
  expect(etag).toMatch(/^"[0-9a-f]{32}-gzip"$/);
  const revalidated = await t.app.request('/api/v1/openapi.json', { headers: { 'accept-encoding': 'gzip', 'if-none-match': `"other", W/${etag}` } });
  expect(revalidated.status).toBe(304);
  expect(await revalidated.text()).toBe('');
  expect(revalidated.headers.get('etag')).toBe(etag);

  // The plain document does not match the gzipped one's ETag.
  const plain = await t.app.request('/api/v1/openapi.json', { headers: { 'accept-encoding': 'gzip;q=0, identity', 'if-none-match': etag } });
  expect(plain.status).toBe(200);
  expect(plain.headers.get('content-encoding')).toBeNull();
});

test('answers that hold data stay no-store', async () => {
  const res = await t.app.request('/api/v1/queues');
  expect(res.headers.get('cache-control')).toBe('no-store');
  const refused = await t.app.request('/api/v1/jobs/1');
  expect(refused.status).toBe(404);
  expect(refused.headers.get('cache-control')).toBe('no-store');
});

test('static files are served gzipped with an ETag, read once', async () => {
  const script = 'console.log("hello");\n'.repeat(200);
  let reads = 0;
  const files = assetsFromFiles(new Map([['app.js', new TextEncoder().encode(script)]]));
  const app = createApp({
    engine: t.engine,
    assets: async (path) => {
      reads++;
      return files(path);
    },
  });
  const zipped = await app.request('/app.js', { headers: { 'accept-encoding': 'gzip' } });
  expect(zipped.status).toBe(200);
  expect(zipped.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
  expect(zipped.headers.get('content-encoding')).toBe('gzip');
  expect(zipped.headers.get('x-content-type-options')).toBe('nosniff');
  expect(zipped.headers.get('cache-control')).toBe('public, max-age=300');
  expect(await gunzip(zipped)).toBe(script);
  const plain = await app.request('/%61pp.js');
  expect(await plain.text()).toBe(script);
  expect(reads).toBe(1);
  expect((await app.request('/missing.js')).status).toBe(404);
});

test('Accept-Encoding is read as RFC 9110 says', () => {
  expect(acceptsGzip(null)).toBe(false);
  expect(acceptsGzip('gzip')).toBe(true);
  expect(acceptsGzip('br;q=1.0, gzip;q=0.8, *;q=0.1')).toBe(true);
  expect(acceptsGzip('gzip;q=0')).toBe(false);
  expect(acceptsGzip('identity')).toBe(false);
  expect(acceptsGzip('*')).toBe(true);
  expect(acceptsGzip('*;q=0')).toBe(false);
});
