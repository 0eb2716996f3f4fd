/**
 * The logout form is on every dashboard page whenever logins exist: with the
 * single admin token, and with only named ones (LEASEHOLD_ADMIN_TOKENS).
 */
import { afterEach, expect, test } from 'vitest';
import type { Config } from '../../src/core/config.ts';
import { setup, type TestBed } from '../support/helpers.ts';

const ONCALL = 'o'.repeat(24);

let t: TestBed;
afterEach(() => {
  expect(t.errors).toEqual([]);
  t.close();
});

async function session(token: string): Promise<string> {
  const res = await t.app.request('/dashboard/login', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ name: 'Ada', token, next: '/dashboard' }).toString(),
    redirect: 'manual',
  });
  expect(res.status).toBe(303);
  return `leasehold_session=${/leasehold_session=([^;]*)/.exec(res.headers.get('set-cookie') ?? '')![1]}`;
}

const pages = (jobId: string) => [
  '/dashboard',
  '/dashboard/jobs',
  `/dashboard/jobs/${jobId}`,
  '/dashboard/zombies',
  '/dashboard/dead-letters',
  '/dashboard/dead-letters/redrive?queue=mail-dead',
  '/dashboard/workers',
  '/dashboard/schedules',
  '/dashboard/queues/mail',
  '/dashboard/metrics',
  '/dashboard/alerts',
  '/dashboard/alerts/thresholds/mail',
  '/dashboard/tuning',
  '/dashboard/tuning/what-if?queue=mail',
  '/dashboard/audit',
  '/dashboard/bulk?queue=mail&status=pending',
];

for (const [setting, tokens] of [
  ['LEASEHOLD_ADMIN_TOKENS only', { adminTokens: `oncall:${ONCALL}` }],
  ['LEASEHOLD_ADMIN_TOKEN', { adminToken: ONCALL }],
] as [string, Partial<Config>][]) {
  test(`with ${setting}, every page shows the logout form and the operator's name`, async () => {
    t = await setup(tokens);
    const job = await t.enqueue('mail');
    const cookie = await session(ONCALL);
    for (const path of pages(job.id)) {
      const res = await t.app.request(path, { headers: { cookie } });
      expect(res.status, path).toBe(200);
      const html = await res.text();
      expect(html, path).toContain('action="/dashboard/logout"');
      expect(html, path).toContain('<span class="operator" id="operator">Ada</span>');
    }
  });
}

test('open mode (no admin token) has no logout form', async () => {
  t = await setup();
  const job = await t.enqueue('mail');
  for (const path of pages(job.id)) expect(await (await t.app.request(path)).text(), path).not.toContain('action="/dashboard/logout"');
});
