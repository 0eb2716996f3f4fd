/** A D1 database without the migrations: every request answers 503 saying to apply them (not ok, not 500). */
import { createExecutionContext, env } from 'cloudflare:test';
import { expect, test } from 'vitest';
import worker from '../../../src/runtime/cloudflare.ts';

test('an unmigrated D1 answers 503 naming the migrations command, on /healthz and on enqueue', async () => {
  const unmigrated = { ...env, DB: (env as unknown as { EMPTY_DB: unknown }).EMPTY_DB } as typeof env;
  for (const request of [
    new Request('https://leasehold.test/healthz'),
    new Request('https://leasehold.test/api/v1/queues/q/jobs', { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${env.LEASEHOLD_WORKER_TOKEN}` }, body: '{"payload":1}' }),
  ]) {
    const res = await worker.fetch(request, unmigrated as never, createExecutionContext());
    expect(res.status).toBe(503);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('not_migrated');
    expect(body.error.message).toContain('wrangler d1 migrations apply');
  }
});
