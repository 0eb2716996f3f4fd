/**
 * The dashboard in real headless Chromium against a real Node server: login,
 * live polling (htmx), a zombie job requeued by the operator and then run by a
 * worker, hostile payloads shown as text, and no console errors anywhere
 * (a CSP violation would be one). Screenshots go to artifacts/.
 *
 * Needs /usr/bin/chromium (Debian: apt-get install -y --no-install-recommends chromium).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { defaultConfig } from '../src/core/config.ts';
import { startServer, type RunningServer } from '../src/runtime/node.ts';
import { createWorker, httpTransport } from '../src/worker/index.ts';

const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) {
  console.warn(`test/browser.test.ts: skipped, ${CHROMIUM} is missing (apt-get install -y --no-install-recommends chromium)`);
}

const ADMIN = 'admin-token-for-the-browser-test';
const WORKER = 'worker-token-for-the-browser-test';
const ARTIFACTS = join(import.meta.dirname, '..', 'artifacts');

let dir: string;
let server: RunningServer;
let context: BrowserContext;
let page: Page;
const consoleErrors: string[] = [];
const dialogs: string[] = [];

async function api(method: string, path: string, body?: unknown, token = ADMIN) {
  const res = await fetch(`${server.url}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as any;
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `dashboard-${name}.png`), fullPage: true });

describe.skipIf(!hasChromium)('dashboard in Chromium', () => {
  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    dir = mkdtempSync(join(tmpdir(), 'leasehold-browser-'));
    const config = defaultConfig({
      databaseUrl: `file:${join(dir, 'db.sqlite')}`,
      host: '127.0.0.1',
      port: 0,
      adminToken: ADMIN,
      workerToken: WORKER,
      leaseMs: 1500,
      heartbeatMs: 300,
      graceMs: 1000,
      workerAliveMs: 600,
      maxReapDeferMs: 1000,
      // The operator acts, not the reaper.
      reaperIntervalMs: 3_600_000,
    });
    server = await startServer(config, { log: () => {} });
    context = await chromium.launchPersistentContext(join(dir, 'profile'), {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (msg) => {
      if (msg.type() === 'error' || msg.type() === 'warning') consoleErrors.push(`${msg.type()}: ${msg.text()} (${page.url()})`);
    });
    page.on('pageerror', (err) => consoleErrors.push(`pageerror: ${err.message}`));
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('log in, see a zombie, requeue it, a worker completes it; hostile payloads stay text; no console errors', async () => {
    // A job whose worker claims it and then goes silent: no heartbeat, no liveness.
    const { job: zombie } = await api('POST', '/queues/zq/jobs', { payload: { kind: 'zombie' } }, WORKER);
    const claimed = await api('POST', '/queues/zq/claim', { workerId: 'silent-worker' }, WORKER);
    expect(claimed.jobs[0].id).toBe(zombie.id);
    const evil = '<script>window.__pwned = 1; alert("script")</script><img src=x onerror=alert("img")>';
    const { job: hostile } = await api('POST', '/queues/evil/jobs', { payload: { html: evil } }, WORKER);

    // Login: the dashboard sends us to the form first.
    await page.goto(`${server.url}/dashboard`);
    expect(new URL(page.url()).pathname).toBe('/dashboard/login');
    await shot('login');
    await page.fill('input[name="token"]', 'wrong');
    await page.click('button[type="submit"]');
    await page.waitForSelector('text=That token is not valid.');
    // The refused login is a 401, which Chromium logs: the one expected console error.
    expect(consoleErrors).toEqual([expect.stringMatching(/status of 401 .*\/dashboard\/login\)$/)]);
    consoleErrors.length = 0;
    await page.fill('input[name="token"]', ADMIN);
    await Promise.all([page.waitForURL(`${server.url}/dashboard`), page.click('button[type="submit"]')]);
    await page.waitForSelector('table.queues');
    expect(await page.textContent('table.queues')).toContain('zq');
    await shot('overview');

    // The zombies page: the row appears once the lease (1.5 s) is over, through htmx polling.
    await page.goto(`${server.url}/dashboard/zombies`);
    const row = page.locator(`#zombie-${zombie.id}`);
    await row.locator('button', { hasText: 'Requeue' }).waitFor({ timeout: 15_000 });
    const rowText = (await row.textContent()) ?? '';
    expect(rowText).toContain('silent-worker');
    expect(rowText).toContain('overdue by');
    expect(rowText).toContain('not seen');
    await shot('zombies');
    await Promise.all([page.waitForURL(/\/dashboard\/zombies\?notice=requeued$/), row.locator('button', { hasText: 'Requeue' }).click()]);
    await page.waitForSelector('#notice');
    expect(await page.textContent('#notice')).toContain('requeued');
    expect((await api('GET', `/jobs/${zombie.id}`)).job.status).toBe('pending');

    // The job page shows it pending; a worker then runs it and the page follows live.
    await page.goto(`${server.url}/dashboard/jobs/${zombie.id}`);
    expect(await page.textContent('#job-status')).toBe('pending');
    const worker = createWorker({
      transport: httpTransport({ url: server.url, token: WORKER }),
      queue: 'zq',
      handleSignals: false,
      pollMs: 100,
      handler: async () => ({ ok: true }),
    });
    worker.start();
    try {
      await page.waitForFunction(() => document.querySelector('#job-status')?.textContent === 'completed', null, { timeout: 15_000 });
    } finally {
      await worker.close();
    }
    // The status change reloaded the page: the actions now fit a completed job.
    await page.waitForSelector('text=No actions for a completed job.', { timeout: 10_000 });
    const timeline = (await page.textContent('table.events')) ?? '';
    expect(timeline).toContain('requeued_by_operator');
    expect(timeline).toContain('dashboard:admin:');
    expect(timeline).toContain('completed');
    await shot('job-completed');

    // Hostile payload: shown as text, nothing runs.
    await page.goto(`${server.url}/dashboard/jobs/${hostile.id}`);
    expect(await page.textContent('#job-payload')).toContain(JSON.stringify(evil));
    expect(await page.evaluate(() => document.querySelectorAll('main img, main script').length)).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    await page.waitForTimeout(2500); // one polling swap of the fragment, which must stay inert too
    expect(await page.evaluate(() => document.querySelectorAll('main img, main script').length)).toBe(0);
    expect(await page.textContent('#job-payload')).toContain(JSON.stringify(evil));
    await shot('hostile-payload');

    // The other pages, filtered, and their live refresh.
    for (const [name, path] of [
      ['jobs', '/dashboard/jobs?queue=zq&status=completed'],
      ['workers', '/dashboard/workers'],
      ['overview-again', '/dashboard'],
    ] as const) {
      const res = await page.goto(`${server.url}${path}`);
      expect(res?.status(), path).toBe(200);
      await page.waitForTimeout(2200);
      await shot(name);
    }
    expect(await page.textContent('#live')).toContain('zq');

    expect(dialogs).toEqual([]);
    expect(consoleErrors).toEqual([]);
  }, 90_000);
});
