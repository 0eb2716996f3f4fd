/** The Worker reads LEASEHOLD_MAX_CLAIM_BYTES from its env and its claims on D1 keep to it. */
import { createExecutionContext, env, waitOnExecutionContext } from 'cloudflare:test';
import { expect, test } from 'vitest';
import worker from '../../../src/runtime/cloudflare.ts';
import { enqueue, WORKER_TOKEN } from './helpers.ts';

/** A worker call to the Worker's `fetch` with settings of its own. */
async function postWithEnv(path: string, body: unknown, overrides: Record<string, string>) {
  const ctx = createExecutionContext();
  const req = new Request(`https://leasehold.test${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${WORKER_TOKEN}` },
    body: JSON.stringify(body),
  });
  const res = await worker.fetch(req, { ...env, ...overrides }, ctx);
  await waitOnExecutionContext(ctx);
  return { status: res.status, json: (await res.json()) as any };
}

test('a claim takes the jobs that fit in LEASEHOLD_MAX_CLAIM_BYTES, in claim order, and leaves the rest for the next claim', async () => {
  const ids: string[] = [];
  // Payloads of 10,000 bytes as stored (a JSON string: the quotes count).
  for (let i = 0; i < 14; i++) ids.push((await enqueue('budget', { payload: 'x'.repeat(9_998) })).id);
  const budget = { LEASEHOLD_MAX_CLAIM_BYTES: String(64 * 1024), LEASEHOLD_MAX_PAYLOAD_BYTES: String(32 * 1024) };
  const first = await postWithEnv('/api/v1/queues/budget/claim', { workerId: 'w1', limit: 10 }, budget);
  expect(first.status, JSON.stringify(first.json).slice(0, 300)).toBe(200);
  expect(first.json.jobs.map((j: { id: string }) => j.id)).toEqual(ids.slice(0, 6));
  const done = await postWithEnv(
    '/api/v1/completions',
    { workerId: 'w1', results: first.json.jobs.map((j: { id: string; lockToken: string }) => ({ id: j.id, lockToken: j.lockToken })), claim: { queue: 'budget', limit: 10 } },
    budget,
  );
  expect(done.status).toBe(200);
  expect(done.json.jobs.map((j: { id: string }) => j.id)).toEqual(ids.slice(6, 12));
});
