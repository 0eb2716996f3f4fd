/**
 * The dashboard in real headless Chromium against a real `leasehold serve`
 * process (test/process-helpers.ts), configured through its environment:
 * login; a zombie job requeued by the operator and then run by a worker;
 * hostile payloads shown as text; a capped bulk retry with its dry run and
 * typed confirmation; forms without a valid CSRF token refused; live polling
 * that keeps the scroll position and the filters; a read-only login that sees
 * every page but can act on none; and no console errors on any page (a CSP
 * violation would be one). Screenshots of every page go to artifacts/, which
 * git ignores.
 *
 * Each test opens its own browser context (its own cookies) and its own
 * queues, so the tests share one server and one browser but no state.
 *
 * Needs /usr/bin/chromium (Debian: apt-get install -y --no-install-recommends chromium).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createWorker, httpTransport } from '../src/worker/index.ts';
import { startServerProcess, type ServerProcess } from './process-helpers.ts';

const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) {
  console.warn(`test/browser.test.ts: skipped, ${CHROMIUM} is missing (apt-get install -y --no-install-recommends chromium)`);
}

const ADMIN = 'admin-token-for-the-browser-test';
const WORKER = 'worker-token-for-the-browser-test';
const READONLY = 'readonly-token-for-the-browser-test';
const CAP = 3;
const ARTIFACTS = join(import.meta.dirname, '..', 'artifacts');

let dir: string;
let server: ServerProcess;
let browser: Browser;

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

const statusOf = async (id: string): Promise<string> => (await api('GET', `/jobs/${id}`)).job.status;
const eventsOf = async (id: string): Promise<{ type: string; actor: string | null; reason: string | null }[]> => (await api('GET', `/jobs/${id}`)).events;

/** `n` jobs in `queue` that failed for good (one attempt each), ids ascending. */
async function failedJobs(queue: string, n: number): Promise<string[]> {
  const { jobs } = await api('POST', `/queues/${queue}/jobs`, { jobs: Array.from({ length: n }, (_, i) => ({ payload: { i }, maxAttempts: 1 })) }, WORKER);
  const { jobs: claimed } = await api('POST', `/queues/${queue}/claim`, { workerId: `${queue}-worker`, limit: n }, WORKER);
  expect(claimed).toHaveLength(n);
  for (const j of claimed) {
    await api('POST', `/jobs/${j.id}/fail`, { workerId: `${queue}-worker`, lockToken: j.lockToken, error: 'boom', retryable: false }, WORKER);
  }
  return (jobs as { id: string }[]).map((j) => j.id);
}

/** A running job whose worker claimed it and then went silent: no heartbeat, no liveness. */
async function silentClaim(queue: string): Promise<string> {
  const { job } = await api('POST', `/queues/${queue}/jobs`, { payload: { kind: 'zombie' } }, WORKER);
  const claimed = await api('POST', `/queues/${queue}/claim`, { workerId: 'silent-worker' }, WORKER);
  expect(claimed.jobs[0].id).toBe(job.id);
  return job.id;
}

/** A page whose console errors and warnings, page errors and dialogs are recorded. */
interface Tab {
  page: Page;
  errors: string[];
  dialogs: string[];
}

/** A page in a fresh browser context (its own cookies). */
async function newTab(): Promise<Tab> {
  return watch(await (await browser.newContext()).newPage());
}

function watch(page: Page): Tab {
  const tab: Tab = { page, errors: [], dialogs: [] };
  page.on('console', (msg) => {
    if (msg.type() === 'error' || msg.type() === 'warning') tab.errors.push(`${msg.type()}: ${msg.text()} (${page.url()})`);
  });
  page.on('pageerror', (err) => tab.errors.push(`pageerror: ${err.message}`));
  page.on('dialog', (d) => {
    tab.dialogs.push(d.message());
    void d.dismiss();
  });
  return tab;
}

async function logIn(tab: Tab, token: string) {
  await tab.page.goto(`${server.url}/dashboard/login`);
  await tab.page.fill('input[name="name"]', 'Ada Lovelace');
  await tab.page.fill('input[name="token"]', token);
  await Promise.all([tab.page.waitForURL(`${server.url}/dashboard`), tab.page.click('button[type="submit"]')]);
}

/**
 * The console errors so far, cleared. Chromium logs every 4xx page load or
 * fetch as one ("Failed to load resource: ... status of 403"), so a step that
 * expects a refusal takes exactly that one and nothing else.
 */
const takeErrors = (tab: Tab) => tab.errors.splice(0);
const httpError = (status: number) => expect.stringMatching(new RegExp(`status of ${status} `));

/**
 * Resolves once htmx has polled the live region and swapped the answer in `n`
 * more times (each poll is 2 s; bounded, so a stalled poll fails the test).
 */
async function livePolls(page: Page, n: number) {
  await page.evaluate(() => {
    const w = window as unknown as { __livePolls?: number };
    if (w.__livePolls === undefined) {
      document.addEventListener('htmx:after:settle', (e) => {
        if ((e.target as Element | null)?.id === 'live') w.__livePolls!++;
      });
    }
    w.__livePolls = 0;
  });
  await page.waitForFunction((want) => (window as unknown as { __livePolls: number }).__livePolls >= want, n, { timeout: 2_500 * n + 3_000 });
}

/** What a page offers to act with: POST forms in main (the logout form sits in the header) and any way into a bulk action. */
const actionControls = (page: Page) =>
  page.evaluate(() => ({
    posts: Array.from(document.querySelectorAll('main form')).filter((f) => (f as HTMLFormElement).method === 'post').map((f) => f.getAttribute('action')),
    bulk: document.querySelectorAll('[action^="/dashboard/bulk"], [href^="/dashboard/bulk"]').length,
    buttons: Array.from(document.querySelectorAll('main button')).map((b) => b.textContent?.trim()),
  }));

/** Clicks a form's button and waits for the page its POST to `action` (an absolute URL) answers with; that response. */
async function submit(page: Page, button: string, action: string) {
  const [res] = await Promise.all([
    page.waitForResponse((r) => r.url() === action && r.request().method() === 'POST'),
    page.waitForURL(action),
    page.click(button),
  ]);
  return res;
}

const shot = (page: Page, name: string) => page.screenshot({ path: join(ARTIFACTS, `dashboard-${name}.png`), fullPage: true });

describe.skipIf(!hasChromium)('dashboard in Chromium', () => {
  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    dir = mkdtempSync(join(tmpdir(), 'leasehold-browser-'));
    server = await startServerProcess(['--database-url', `file:${join(dir, 'db.sqlite')}`, '--host', '127.0.0.1'], {
      LEASEHOLD_ADMIN_TOKEN: ADMIN,
      LEASEHOLD_WORKER_TOKEN: WORKER,
      LEASEHOLD_READONLY_TOKEN: READONLY,
      LEASEHOLD_BULK_ACTION_CAP: String(CAP),
      LEASEHOLD_LEASE_MS: '1500',
      LEASEHOLD_HEARTBEAT_MS: '300',
      LEASEHOLD_GRACE_MS: '1000',
      LEASEHOLD_WORKER_ALIVE_MS: '600',
      LEASEHOLD_MAX_REAP_DEFER_MS: '1000',
      // The operator acts, not the reaper.
      LEASEHOLD_REAPER_INTERVAL_MS: '3600000',
    });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    if (server) {
      server.child.kill('SIGTERM');
      await server.exited;
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('log in, see a zombie, requeue it, a worker completes it; hostile payloads stay text; no console errors', async () => {
    const zombie = await silentClaim('zq');
    const evil = '<script>window.__pwned = 1; alert("script")</script><img src=x onerror=alert("img")>';
    const { job: hostile } = await api('POST', '/queues/evil/jobs', { payload: { html: evil } }, WORKER);
    const tab = await newTab();
    const { page } = tab;

    // Login: the dashboard sends us to the form first.
    await page.goto(`${server.url}/dashboard`);
    expect(new URL(page.url()).pathname).toBe('/dashboard/login');
    await shot(page, 'login');
    await page.fill('input[name="name"]', 'Ada Lovelace');
    await page.fill('input[name="token"]', 'wrong');
    await page.click('button[type="submit"]');
    await page.waitForSelector('text=That token is not valid.');
    expect(takeErrors(tab)).toEqual([expect.stringMatching(/status of 401 .*\/dashboard\/login\)$/)]);
    await page.fill('input[name="token"]', ADMIN);
    await Promise.all([page.waitForURL(`${server.url}/dashboard`), page.click('button[type="submit"]')]);
    await page.waitForSelector('table.queues');
    expect(await page.textContent('table.queues')).toContain('zq');

    // The zombies page: the row appears once the lease (1.5 s) is over, through htmx polling.
    await page.goto(`${server.url}/dashboard/zombies`);
    const row = page.locator(`#zombie-${zombie}`);
    await row.locator('button', { hasText: 'Requeue' }).waitFor({ timeout: 15_000 });
    const rowText = (await row.textContent()) ?? '';
    expect(rowText).toContain('silent-worker');
    expect(rowText).toContain('overdue by');
    expect(rowText).toContain('not seen');
    await shot(page, 'zombies-before-requeue');
    await Promise.all([page.waitForURL(/\/dashboard\/zombies\?notice=requeued$/), row.locator('button', { hasText: 'Requeue' }).click()]);
    await page.waitForSelector('#notice');
    expect(await page.textContent('#notice')).toContain('requeued');
    expect(await statusOf(zombie)).toBe('pending');

    // The job page shows it pending; a worker then runs it and the page follows live.
    await page.goto(`${server.url}/dashboard/jobs/${zombie}`);
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
    expect(timeline).toContain('Ada Lovelace');
    expect(timeline).toContain('completed');
    await shot(page, 'job-completed');

    // Hostile payload: shown as text, nothing runs, not even after a polling swap.
    await page.goto(`${server.url}/dashboard/jobs/${hostile.id}`);
    expect(await page.textContent('#job-payload')).toContain(JSON.stringify(evil));
    expect(await page.evaluate(() => document.querySelectorAll('main img, main script').length)).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    await livePolls(page, 1);
    expect(await page.evaluate(() => document.querySelectorAll('main img, main script').length)).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await page.textContent('#job-payload')).toContain(JSON.stringify(evil));
    await shot(page, 'hostile-payload');

    expect(tab.dialogs).toEqual([]);
    expect(tab.errors).toEqual([]);
    await page.context().close();
  }, 60_000);

  test(`bulk retry: the dry run counts and states the cap (${CAP}); a wrong typed count changes nothing; the right one moves exactly ${CAP}`, async () => {
    const ids = await failedJobs('bulkq', 5);
    const tab = await newTab();
    const { page } = tab;
    await logIn(tab, ADMIN);

    await page.goto(`${server.url}/dashboard/jobs?queue=bulkq&status=failed`);
    expect(await page.locator('table.jobs tbody tr').count()).toBe(5);
    await Promise.all([
      page.waitForURL(`${server.url}/dashboard/bulk?queue=bulkq&status=failed`),
      page.click('form.bulk button:has-text("Retry failed jobs in queue bulkq")'),
    ]);
    const dryRun = (await page.textContent('#bulk-count'))!.replace(/\s+/g, ' ');
    expect(dryRun).toContain(`5 matching failed jobs in queue bulkq; at most ${CAP} will be acted on, this time ${CAP}.`);
    expect(dryRun).toContain('Nothing has changed yet.');
    expect(await page.textContent('form.action button')).toMatch(new RegExp(`Retry ${CAP} failed jobs`));
    expect(await Promise.all(ids.map(statusOf))).toEqual(Array(5).fill('failed'));

    // Typing the matching count (5) instead of the number shown (the cap) changes nothing.
    await page.fill('input[name="confirm"]', '5');
    await page.fill('input[name="reason"]', 'retry after the outage');
    const wrong = await submit(page, 'form.action button[type="submit"]', `${server.url}/dashboard/bulk`);
    expect(wrong.status()).toBe(400);
    expect(await page.textContent('main')).toContain(`Nothing changed: to confirm, type the number shown (${CAP}) exactly.`);
    expect(takeErrors(tab)).toEqual([httpError(400)]);
    expect(await Promise.all(ids.map(statusOf))).toEqual(Array(5).fill('failed'));

    // Back to the dry run, and this time the number shown.
    await Promise.all([page.waitForURL(`${server.url}/dashboard/bulk?queue=bulkq&status=failed`), page.click('text=Back to the dry run')]);
    await page.fill('input[name="confirm"]', String(CAP));
    await page.fill('input[name="reason"]', 'retry after the outage');
    const done = await submit(page, 'form.action button[type="submit"]', `${server.url}/dashboard/bulk`);
    expect(done.status()).toBe(200);
    expect((await page.textContent('#bulk-done'))!.replace(/\s+/g, ' ')).toContain(`${CAP} jobs retried`);
    // The lowest ids first (src/db/store/operator.ts), linked from the result.
    const moved = ids.slice(0, CAP);
    expect(await page.locator('ul.bulk-ids a').allTextContents()).toEqual(moved);
    await shot(page, 'bulk-done');

    expect(await Promise.all(ids.map(statusOf))).toEqual([...Array(CAP).fill('pending'), ...Array(5 - CAP).fill('failed')]);
    for (const id of moved) {
      const retried = (await eventsOf(id)).filter((e) => e.type === 'retried_by_operator');
      expect(retried, id).toEqual([expect.objectContaining({ reason: 'retry after the outage', actor: 'Ada Lovelace' })]);
    }
    for (const id of ids.slice(CAP)) expect((await eventsOf(id)).map((e) => e.type)).not.toContain('retried_by_operator');

    // The dry run now counts what is left.
    await page.goto(`${server.url}/dashboard/bulk?queue=bulkq&status=failed`);
    expect((await page.textContent('#bulk-count'))!.replace(/\s+/g, ' ')).toContain(`${5 - CAP} matching failed jobs in queue bulkq; at most ${CAP} will be acted on, this time ${5 - CAP}.`);

    expect(tab.dialogs).toEqual([]);
    expect(tab.errors).toEqual([]);
    await page.context().close();
  }, 30_000);

  test(`bulk dry run: lists the jobs it will touch; a batch below the cap (${CAP}) is shown, confirmed and applied; one above it is refused`, async () => {
    const ids = await failedJobs('batchq', 5);
    const tab = await newTab();
    const { page } = tab;
    await logIn(tab, ADMIN);

    await page.goto(`${server.url}/dashboard/bulk?queue=batchq&status=failed`);
    // The cap's worth of jobs, lowest ids first, each with its queue, status and why.
    expect(await page.locator('#bulk-preview tbody tr td:first-child').allTextContents()).toEqual(ids.slice(0, CAP));
    expect(await page.locator('#bulk-preview tbody tr td:nth-child(2)').allTextContents()).toEqual(Array(CAP).fill('batchq'));
    expect(await page.locator('#bulk-preview tbody tr td:nth-child(3)').allTextContents()).toEqual(Array(CAP).fill('failed'));
    expect(await page.locator('#bulk-preview tbody tr td.why').allTextContents()).toEqual(Array(CAP).fill('failed after 1 of 1 attempts: boom'));
    expect(await page.inputValue('input[name="batch"]')).toBe(String(CAP));

    // A smaller batch: the dry run again, for that many.
    await page.fill('input[name="batch"]', '2');
    await Promise.all([page.waitForURL(`${server.url}/dashboard/bulk?queue=batchq&status=failed&batch=2`), page.click('button:has-text("Dry run this batch")')]);
    expect((await page.textContent('#bulk-count'))!.replace(/\s+/g, ' ')).toContain(`5 matching failed jobs in queue batchq; at most ${CAP} will be acted on, this time 2.`);
    expect(await page.locator('#bulk-preview tbody tr td:first-child').allTextContents()).toEqual(ids.slice(0, 2));
    expect(await page.textContent('form.action button')).toMatch(/Retry 2 failed jobs/);
    await shot(page, 'bulk-batch');
    await page.fill('input[name="confirm"]', '2');
    await page.fill('input[name="reason"]', 'two first, then watch');
    const done = await submit(page, 'form.action button[type="submit"]', `${server.url}/dashboard/bulk`);
    expect(done.status()).toBe(200);
    expect(await page.locator('ul.bulk-ids a').allTextContents()).toEqual(ids.slice(0, 2));
    expect(await Promise.all(ids.map(statusOf))).toEqual(['pending', 'pending', 'failed', 'failed', 'failed']);

    // The number field stops a batch above the cap; typed into the URL it is a 400 that changes nothing.
    const over = await page.goto(`${server.url}/dashboard/bulk?queue=batchq&status=failed&batch=${CAP + 1}`);
    expect(over?.status()).toBe(400);
    expect(await page.textContent('main')).toContain(`batch: a whole number from 1 to the cap (${CAP})`);
    expect(takeErrors(tab)).toEqual([httpError(400)]);
    expect(await Promise.all(ids.map(statusOf))).toEqual(['pending', 'pending', 'failed', 'failed', 'failed']);

    expect(tab.dialogs).toEqual([]);
    expect(tab.errors).toEqual([]);
    await page.context().close();
  }, 30_000);

  test('at 375 px wide the nav wraps and the overview, jobs, zombies and job pages fit without scrolling the page sideways', async () => {
    // Realistic and unkind: a 120-character queue name, a long worker id, a long idempotency key and an error without spaces.
    const queue = `billing.invoices-reconciliation.eu-west-1.${'x'.repeat(78)}`;
    expect(queue).toHaveLength(120);
    const worker = `worker-${'host-'.repeat(20)}pid-123456`;
    const key = `order-${'0123456789abcdef'.repeat(8)}`;
    const error = `TypeError:${'Cannot_read_properties_of_undefined_reading_amount/'.repeat(30)}`;
    const { job: failing } = await api('POST', `/queues/${queue}/jobs`, { payload: { order: key, note: 'y'.repeat(400) }, maxAttempts: 1, idempotencyKey: key }, WORKER);
    const first = await api('POST', `/queues/${queue}/claim`, { workerId: worker }, WORKER);
    await api('POST', `/jobs/${failing.id}/fail`, { workerId: worker, lockToken: first.jobs[0].lockToken, error, retryable: false }, WORKER);
    const { job: zombie } = await api('POST', `/queues/${queue}/jobs`, { payload: { kind: 'zombie' } }, WORKER);
    await api('POST', `/queues/${queue}/claim`, { workerId: worker }, WORKER);
    await api('POST', `/queues/${queue}/jobs`, { payload: { kind: 'waiting' } }, WORKER);
    // Past the lease (1.5 s) and the grace (1 s): a zombie on every page.
    await new Promise((r) => setTimeout(r, 2_700));

    const tab = await newTab();
    await logIn(tab, ADMIN);
    const context = tab.page.context();
    const pages = [
      ['overview', '/dashboard', 'table.queues'],
      ['jobs', `/dashboard/jobs?queue=${encodeURIComponent(queue)}`, 'table.jobs'],
      ['zombies', '/dashboard/zombies', `#zombie-${zombie.id}`],
      ['job-failed', `/dashboard/jobs/${failing.id}`, '#job-summary'],
      ['job-zombie', `/dashboard/jobs/${zombie.id}`, '#job-summary'],
    ] as const;
    const tabs = await Promise.all(
      pages.map(async ([name, path, selector]) => {
        const t = watch(await context.newPage());
        await t.page.setViewportSize({ width: 375, height: 800 });
        expect((await t.page.goto(`${server.url}${path}`))?.status(), name).toBe(200);
        await t.page.waitForSelector(selector);
        const fits = () => t.page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth }));
        expect(await fits(), name).toEqual({ scroll: 375, client: 375 });
        // The nav wraps onto more lines instead of running off the side.
        const nav = await t.page.evaluate(() => {
          const links = Array.from(document.querySelectorAll('header nav a')).map((a) => a.getBoundingClientRect());
          return { right: Math.max(...links.map((r) => r.right)), rows: new Set(links.map((r) => Math.round(r.top))).size };
        });
        expect(nav.right, name).toBeLessThanOrEqual(375);
        expect(nav.rows, name).toBeGreaterThan(1);
        // Still true once the live region has been polled and swapped.
        await livePolls(t.page, 1);
        expect(await fits(), `${name} after a poll`).toEqual({ scroll: 375, client: 375 });
        await t.page.screenshot({ path: join(ARTIFACTS, `dashboard-narrow-${name}.png`), fullPage: true });
        return [name, t] as const;
      }),
    );
    // The jobs list marks the zombie, the job page leads with its lease.
    const jobsTab = tabs.find(([name]) => name === 'jobs')![1];
    expect(await jobsTab.page.textContent(`td.flagged.zombie`)).toContain('zombie: lease expired');
    const zombieTab = tabs.find(([name]) => name === 'job-zombie')![1];
    expect(await zombieTab.page.textContent('#job-lease')).toMatch(/^1\.5 s lease \(this claim's\) · expired/);
    for (const [name, t] of tabs) {
      expect(t.errors, name).toEqual([]);
      expect(t.dialogs, name).toEqual([]);
    }
    await context.close();
  }, 40_000);

  test('CSRF: a tampered token, no token, and a cross-site form are all refused; the job is unchanged', async () => {
    const { job } = await api('POST', '/queues/csrfq/jobs', { payload: { kind: 'csrf' } }, WORKER);
    const tab = await newTab();
    const { page } = tab;
    await logIn(tab, ADMIN);
    const jobUrl = `${server.url}/dashboard/jobs/${job.id}`;
    const cancelUrl = `${jobUrl}/cancel`;

    // The page's own cancel form, its hidden token changed in the DOM.
    await page.goto(jobUrl);
    const token = await page.inputValue(`form[action="/dashboard/jobs/${job.id}/cancel"] input[name="_csrf"]`);
    await page.evaluate((id) => {
      const input = document.querySelector<HTMLInputElement>(`form[action="/dashboard/jobs/${id}/cancel"] input[name="_csrf"]`)!;
      input.value = input.value.slice(0, -4) + (input.value.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    }, job.id);
    expect(await page.inputValue(`form[action="/dashboard/jobs/${job.id}/cancel"] input[name="_csrf"]`)).not.toBe(token);
    await page.fill(`form[action="/dashboard/jobs/${job.id}/cancel"] input[name="reason"]`, 'tampered');
    const tampered = await submit(page, `form[action="/dashboard/jobs/${job.id}/cancel"] button`, cancelUrl);
    expect(tampered.status()).toBe(403);
    expect(await page.textContent('h1')).toBe('Refused');
    expect(await page.textContent('main')).toContain('CSRF token is missing or not valid');
    expect(takeErrors(tab)).toEqual([httpError(403)]);

    // The session's cookie without the form token: a request made with the
    // context's cookies (the session is carried: a GET is answered, not sent
    // to the login form) ...
    expect((await page.request.get(jobUrl, { maxRedirects: 0 })).status()).toBe(200);
    const bare = await page.request.post(cancelUrl, { form: { reason: 'no token' }, maxRedirects: 0 });
    expect(bare.status()).toBe(403);
    // ... and a same-origin fetch from the page itself.
    await page.goto(jobUrl);
    expect(await page.evaluate(async (url) => (await fetch(url, { method: 'POST', body: new URLSearchParams({ reason: 'fetch' }), redirect: 'manual' })).status, cancelUrl)).toBe(403);
    expect(takeErrors(tab)).toEqual([httpError(403)]);

    // A form on another site posting to the dashboard: the SameSite=Strict
    // session cookie does not go with it, so it is refused before any CSRF
    // check. The other site is served by Playwright, never the network.
    await page.route('http://other-site.test/**', (route) =>
      route.fulfill({
        contentType: 'text/html',
        body: `<!DOCTYPE html><form method="post" action="${cancelUrl}"><input type="hidden" name="reason" value="cross-site"><button>go</button></form>`,
      }),
    );
    await page.goto('http://other-site.test/');
    const crossSite = await submit(page, 'button', cancelUrl);
    expect(crossSite.status()).toBe(401);
    expect(takeErrors(tab)).toEqual([httpError(401)]);

    expect(await statusOf(job.id)).toBe('pending');
    expect((await eventsOf(job.id)).map((e) => e.type)).toEqual(['enqueued']);
    expect(tab.dialogs).toEqual([]);
    expect(tab.errors).toEqual([]);
    await page.context().close();
  }, 30_000);

  test('the named operator: the login asks for a name, actions and the audit page carry it, a re-sent form is refused', async () => {
    const { job } = await api('POST', '/queues/auditq/jobs', { payload: { kind: 'audit' } }, WORKER);
    const tab = await newTab();
    const { page } = tab;
    // A name of spaces passes the browser's `required` but not the server: a clear 400, no session.
    await page.goto(`${server.url}/dashboard/login`);
    await page.fill('input[name="name"]', '   ');
    await page.fill('input[name="token"]', ADMIN);
    const blank = await submit(page, 'button[type="submit"]', `${server.url}/dashboard/login`);
    expect(blank.status()).toBe(400);
    expect(await page.textContent('#login-error')).toContain('Your name is required');
    expect(takeErrors(tab)).toEqual([httpError(400)]);
    await logIn(tab, ADMIN);
    expect(await page.textContent('#operator')).toBe('Ada Lovelace');

    const jobUrl = `${server.url}/dashboard/jobs/${job.id}`;
    const cancelUrl = `${jobUrl}/cancel`;
    await page.goto(jobUrl);
    const form = `form[action="/dashboard/jobs/${job.id}/cancel"]`;
    const token = await page.inputValue(`${form} input[name="_csrf"]`);
    await page.fill(`${form} input[name="reason"]`, 'duplicate order');
    await Promise.all([page.waitForURL(`${jobUrl}?notice=cancelled`), page.click(`${form} button`)]);
    expect(await statusOf(job.id)).toBe('cancelled');
    expect((await eventsOf(job.id)).find((e) => e.type === 'cancelled')).toMatchObject({ actor: 'Ada Lovelace', reason: 'duplicate order' });
    // The same form sent again (its token already used), even after the job is pending again: refused, nothing changes.
    await api('POST', `/jobs/${job.id}/retry`, { reason: 'back' });
    const again = await page.request.post(cancelUrl, { form: { _csrf: token, reason: 'duplicate order' }, maxRedirects: 0, headers: { origin: server.url } });
    expect(again.status()).toBe(409);
    expect(await again.text()).toContain('already submitted');
    expect(await statusOf(job.id)).toBe('pending');

    // The audit page from the nav: newest first, the operator's name, a filter by action.
    await Promise.all([page.waitForURL(`${server.url}/dashboard/audit`), page.click('nav a[href="/dashboard/audit"]')]);
    const first = page.locator('table.audit tbody tr').first();
    expect(await first.textContent()).toContain('job.retry');
    expect(await page.locator('table.audit').textContent()).toContain('Ada Lovelace');
    await page.selectOption('select[name="action"]', 'job.cancel');
    await Promise.all([page.waitForURL(/action=job\.cancel/), page.click('form.filters button')]);
    const rows = page.locator('table.audit tbody tr');
    expect(await rows.count()).toBe(1);
    expect(await rows.first().textContent()).toMatch(/Ada Lovelace.*job\.cancel.*job \d+.*duplicate order/s);
    await shot(page, 'audit');

    // Logging out is recorded too.
    await Promise.all([page.waitForURL(`${server.url}/dashboard/login`), page.click('form.logout button')]);
    const { entries } = await api('GET', '/audit?actor=Ada%20Lovelace&limit=1');
    expect(entries[0]).toMatchObject({ action: 'logout', actor: 'Ada Lovelace', source: 'dashboard' });
    expect(takeErrors(tab)).toEqual([]);
    expect(tab.dialogs).toEqual([]);
    await page.context().close();
  }, 30_000);

  test('live polling keeps the scroll position and the filters', async () => {
    // More rows than one page of the list (50) and than the viewport shows.
    await api('POST', '/queues/scrollq/jobs', { jobs: Array.from({ length: 60 }, (_, i) => ({ payload: { i } })) }, WORKER);
    const tab = await newTab();
    const { page } = tab;
    await logIn(tab, ADMIN);
    const listUrl = `${server.url}/dashboard/jobs?queue=scrollq&status=pending`;
    await page.goto(listUrl);
    expect(await page.locator('table.jobs tbody tr').count()).toBe(50);
    const room = await page.evaluate(() => document.documentElement.scrollHeight - window.innerHeight);
    expect(room).toBeGreaterThan(600);
    await page.evaluate(() => window.scrollTo(0, 600));
    await page.waitForFunction(() => window.scrollY === 600);

    await livePolls(page, 2);

    expect(Math.abs((await page.evaluate(() => window.scrollY)) - 600)).toBeLessThanOrEqual(2);
    expect(await page.inputValue('input[name="queue"]')).toBe('scrollq');
    expect(await page.inputValue('select[name="status"]')).toBe('pending');
    expect(page.url()).toBe(listUrl);
    // The swapped-in fragment is still the filtered list, its pager too.
    expect(await page.locator('table.jobs tbody tr').count()).toBe(50);
    expect(await page.locator('table.jobs tbody td:nth-child(2)').allTextContents()).toEqual(Array(50).fill('scrollq'));
    expect(await page.getAttribute('a[rel="next"]', 'href')).toMatch(/^\/dashboard\/jobs\?queue=scrollq&status=pending&after=\d+$/);

    expect(tab.errors).toEqual([]);
    await page.context().close();
  }, 30_000);

  test('a read-only login sees every page and no action; an action it posts with a valid CSRF token is refused', async () => {
    const [failed] = await failedJobs('roq', 1);
    const zombie = await silentClaim('roq');
    const tab = await newTab();
    const { page } = tab;
    await logIn(tab, READONLY);

    const pages = [
      ['overview', '/dashboard'],
      ['jobs', '/dashboard/jobs?queue=roq&status=failed'],
      ['job', `/dashboard/jobs/${failed}`],
      ['running job', `/dashboard/jobs/${zombie}`],
      ['zombies', '/dashboard/zombies'],
      ['workers', '/dashboard/workers'],
      ['metrics', '/dashboard/metrics'],
      ['alerts', '/dashboard/alerts'],
      ['tuning', '/dashboard/tuning'],
    ] as const;
    for (const [name, path] of pages) {
      const res = await page.goto(`${server.url}${path}`);
      expect(res?.status(), name).toBe(200);
      expect(await page.locator('#live').count(), name).toBe(1);
      const controls = await actionControls(page);
      expect(controls.posts, name).toEqual([]);
      expect(controls.bulk, name).toBe(0);
      // The jobs filter (a GET) is the only button in any page's main part.
      expect(controls.buttons.filter((b) => b !== 'Filter'), name).toEqual([]);
      if (path.startsWith('/dashboard/jobs/')) expect(await page.textContent('main'), name).toContain('Read-only login: no actions.');
    }

    // The zombie row says read-only, and still does after the live region is re-polled.
    await page.goto(`${server.url}/dashboard/zombies`);
    const row = page.locator(`#zombie-${zombie}`);
    await row.waitFor({ timeout: 10_000 });
    await livePolls(page, 1);
    expect(await row.locator('td').last().textContent()).toBe('read-only');
    expect(await actionControls(page)).toEqual({ posts: [], bulk: 0, buttons: [] });

    // The session has a valid CSRF token (its logout form carries it), yet every action is refused.
    const csrf = await page.inputValue('form.logout input[name="_csrf"]');
    const before = [await eventsOf(failed!), await eventsOf(zombie)];
    const posts = [
      [`/dashboard/jobs/${failed}/retry`, { _csrf: csrf, reason: 'read-only' }],
      [`/dashboard/jobs/${zombie}/requeue`, { _csrf: csrf, reason: 'read-only' }],
      [`/dashboard/jobs/${zombie}/force-requeue`, { _csrf: csrf, reason: 'read-only', confirm: zombie }],
      ['/dashboard/bulk', { _csrf: csrf, queue: 'roq', status: 'failed', expected: '1', confirm: '1', reason: 'read-only' }],
    ] as const;
    for (const [path, form] of posts) {
      const res = await page.request.post(`${server.url}${path}`, { form, maxRedirects: 0 });
      expect(res.status(), path).toBe(403);
      expect(await res.text(), path).toContain('read-only');
    }
    expect((await page.request.get(`${server.url}/dashboard/bulk?queue=roq&status=failed`, { maxRedirects: 0 })).status()).toBe(403);
    expect(await statusOf(failed!)).toBe('failed');
    expect(await statusOf(zombie)).toBe('running');
    expect([await eventsOf(failed!), await eventsOf(zombie)]).toEqual(before);

    expect(tab.dialogs).toEqual([]);
    expect(tab.errors).toEqual([]);
    await page.context().close();
  }, 30_000);

  test('every page: a full-page screenshot, live polling and no console errors', async () => {
    const [failed] = await failedJobs('shotq', 2);
    const tab = await newTab();
    await logIn(tab, ADMIN);
    const pages = [
      ['overview', '/dashboard'],
      ['jobs', '/dashboard/jobs?queue=shotq'],
      ['job', `/dashboard/jobs/${failed}`],
      ['zombies', '/dashboard/zombies'],
      ['workers', '/dashboard/workers'],
      ['metrics', '/dashboard/metrics'],
      ['alerts', '/dashboard/alerts'],
      ['tuning', '/dashboard/tuning'],
      ['bulk-dry-run', '/dashboard/bulk?queue=shotq&status=failed'],
      ['alert-thresholds', '/dashboard/alerts/thresholds/shotq'],
      ['audit', '/dashboard/audit'],
    ] as const;
    // In parallel, one page each in the logged-in context: every poll takes 2 s.
    const tabs = await Promise.all(
      pages.map(async ([name, path]) => {
        const t = watch(await tab.page.context().newPage());
        const res = await t.page.goto(`${server.url}${path}`);
        expect(res?.status(), name).toBe(200);
        expect(await t.page.textContent('h1'), name).not.toMatch(/Refused|not found|Bad filter/i);
        // A live page is shot after one poll, so an error in the swapped-in fragment shows up too.
        if ((await t.page.locator('#live').count()) > 0) await livePolls(t.page, 1);
        else expect(['bulk-dry-run', 'alert-thresholds', 'audit']).toContain(name);
        await shot(t.page, name);
        return [name, t] as const;
      }),
    );
    for (const [name, t] of tabs) {
      expect(t.errors, name).toEqual([]);
      expect(t.dialogs, name).toEqual([]);
    }
    expect(tab.errors).toEqual([]);
    await tab.page.context().close();
  // Each page waits for a live poll (2 s apart): a dozen pages need about 30 s on a quiet machine.
  }, 90_000);
});
