/** On a public edge there is no loopback: without both tokens the Worker refuses to serve. */
import { expect, test } from 'vitest';
import { call, fetchWithEnv, get } from './helpers.ts';

const noTokens = { LEASEHOLD_WORKER_TOKEN: undefined, LEASEHOLD_ADMIN_TOKEN: undefined };

test('without tokens and without LEASEHOLD_ALLOW_OPEN every request gets 503', async () => {
  for (const path of ['/healthz', '/api/v1/jobs']) {
    const res = await fetchWithEnv(path, noTokens);
    expect(res.status).toBe(503);
    expect(res.json.error.code).toBe('unavailable');
    expect(res.json.error.message).toContain('LEASEHOLD_WORKER_TOKEN and LEASEHOLD_ADMIN_TOKEN');
  }
});

test('one token missing is refused too', async () => {
  const res = await fetchWithEnv('/healthz', { LEASEHOLD_ADMIN_TOKEN: undefined });
  expect(res.status).toBe(503);
  expect(res.json.error.message).toContain('LEASEHOLD_ADMIN_TOKEN');
  expect(res.json.error.message).not.toContain('LEASEHOLD_WORKER_TOKEN and');
});

test('LEASEHOLD_ALLOW_OPEN=true serves without tokens (local development), on loopback names only', async () => {
  const res = await fetchWithEnv('/api/v1/queues', { ...noTokens, LEASEHOLD_ALLOW_OPEN: 'true' }, 'http://localhost:8787');
  expect(res.status).toBe(200);
  // Any other name could be a page that rebound its DNS to the developer's machine.
  const rebound = await fetchWithEnv('/api/v1/queues', { ...noTokens, LEASEHOLD_ALLOW_OPEN: 'true' });
  expect(rebound.status).toBe(421);
  expect(rebound.json.error.code).toBe('misdirected_request');
});

test('open mode on a port other than 8787 (wrangler dev --port 9000): loopback names are served, other names still 421', async () => {
  const open = { ...noTokens, LEASEHOLD_ALLOW_OPEN: 'true' };
  for (const origin of ['http://localhost:9000', 'http://127.0.0.1:9000', 'http://[::1]:9000']) {
    expect((await fetchWithEnv('/api/v1/queues', open, origin)).status, origin).toBe(200);
  }
  expect((await fetchWithEnv('/api/v1/queues', open, 'http://attacker.example:9000')).status).toBe(421);
  // LEASEHOLD_PORT names the one port to accept.
  expect((await fetchWithEnv('/api/v1/queues', { ...open, LEASEHOLD_PORT: '9000' }, 'http://localhost:9000')).status).toBe(200);
  const other = await fetchWithEnv('/api/v1/queues', { ...open, LEASEHOLD_PORT: '9000' }, 'http://localhost:9001');
  expect(other.status).toBe(421);
  expect(other.json.error.code).toBe('misdirected_request');
});

test('an impossible setting is answered as 503 misconfigured, naming it', async () => {
  const res = await fetchWithEnv('/healthz', { LEASEHOLD_HEARTBEAT_MS: '5000' });
  expect(res.status).toBe(503);
  expect(res.json.error.code).toBe('misconfigured');
  expect(JSON.stringify(res.json.error.details)).toContain('LEASEHOLD_HEARTBEAT_MS');
});

test('with tokens set, the API checks them', async () => {
  expect((await get('/api/v1/queues', null)).status).toBe(401);
  expect((await get('/api/v1/queues', 'not-the-right-token-at-all')).status).toBe(401);
  expect((await call('GET', '/api/v1/queues')).status).toBe(200);
});

test('LEASEHOLD_DATABASE_URL picks libSQL over HTTP (@libsql/client/web) instead of D1; file: is refused', async () => {
  const file = await fetchWithEnv('/healthz', { LEASEHOLD_DATABASE_URL: 'file:./x.db' });
  expect(file.status).toBe(503);
  expect(file.json.error.code).toBe('misconfigured');
  // The tests' outbound service answers 502 to every request (vitest.workers.config.ts): the
  // client loads, sends its query over HTTP, and the failure is a 500, not a crash (or a D1 answer).
  const remote = await fetchWithEnv('/healthz', { LEASEHOLD_DATABASE_URL: 'http://127.0.0.1:9' });
  expect(remote.status).toBe(500);
  expect(remote.json.error.code).toBe('internal');
});
