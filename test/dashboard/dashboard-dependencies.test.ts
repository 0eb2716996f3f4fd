/**
 * The job page's Dependencies section and snooze count, at the app.request
 * level over a fresh database: a parent waiting for two children shows both
 * with their statuses and that it waits; a child failed for good is retried
 * through the dashboard's own form, completed by a worker, and the parent's
 * page then shows it completed and the parent claimable. A snoozed job's page
 * shows its snoozes against its queue's limit; a job in no graph has no
 * Dependencies section.
 */
import { afterEach, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';
import { dashboardBrowser } from '../support/dashboard-browser.ts';

const ADMIN = 'a'.repeat(24);
const admin = { authorization: `Bearer ${ADMIN}` };
const api = (path: string) => `/api/v1${path}`;

let t: TestBed;
afterEach(() => {
  expect(t.errors).toEqual([]);
  t.close();
});

const browser = dashboardBrowser(() => t.app);
const { req } = browser;
const login = () => browser.login(ADMIN);
async function page(cookie: string, path: string): Promise<string> {
  const res = await req(path, { cookie });
  expect(res.status, path).toBe(200);
  return res.text();
}
/** The HTML from the element with this id up to its first closing `tag`. */
function element(html: string, id: string, tag: string): string {
  const start = html.indexOf(`id="${id}"`);
  expect(start, id).toBeGreaterThan(-1);
  return html.slice(start, html.indexOf(`</${tag}>`, start));
}
const text = (fragment: string) => fragment.replace(/^[^>]*>/, '').replace(/<[^>]*>/g, ' ').replace(/&#39;/g, "'").replace(/\s+/g, ' ').trim();

/** The row of job `id` in the table `table` ('waits-for' or 'waited-for-by'), as its cells' text. */
function row(html: string, table: string, id: string): string[] {
  const tr = element(html, `${table}-${id}`, 'tr');
  return [...tr.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((m) => text(`>${m[1]!}`));
}

async function claimOne(queue: string): Promise<{ id: string; lockToken: string }> {
  const res = await t.call('POST', api(`/queues/${queue}/claim`), { workerId: 'w1' }, admin);
  expect(res.status, res.text).toBe(200);
  expect(res.json.jobs).toHaveLength(1);
  return res.json.jobs[0];
}

test("a parent waiting for two children: a child failed for good is retried from its page, completed by a worker, and the parent is claimable", async () => {
  t = await setup({ adminToken: ADMIN });
  const flow = await t.call(
    'POST',
    api('/flows'),
    { jobs: [{ queue: 'parts', payload: { part: 0 } }, { queue: 'parts', payload: { part: 1 } }, { queue: 'assemble', payload: {}, dependsOn: ['#0', '#1'], dependencyPolicy: 'hold' }] },
    admin,
  );
  expect(flow.status, flow.text).toBe(201);
  const [a, , parent] = (flow.json.jobs as { id: string }[]).map((j) => j.id) as [string, string, string];
  const cookie = await login();

  // Before anything ran: the parent waits for both, each listed with its status.
  let html = await page(cookie, `/dashboard/jobs/${parent}`);
  expect(html).toContain('id="job-dependencies"');
  expect(text(element(html, 'dependency-wait', 'p'))).toBe("Waiting for 2 of 2 dependencies (policy 'hold'): not claimable until they complete.");
  expect(text(element(html, 'job-waiting', 'a'))).toBe('waiting for 2 dependencies');
  expect(row(html, 'waits-for', a)).toEqual([a, 'parts', 'pending', 'waiting', '—', '—']);
  expect(html).toContain(`<a href="/dashboard/jobs/${a}">${a}</a>`);
  expect(html).not.toContain('id="waited-for-by"');
  expect(text(element(html, 'job-available', 'dd'))).toBe('once its 2 dependencies complete');

  // A child's page lists the parent as waiting for it, with the parent's policy and wait.
  html = await page(cookie, `/dashboard/jobs/${a}`);
  expect(html).not.toContain('id="dependency-wait"');
  expect(html).not.toContain('id="waits-for"');
  expect(row(html, 'waited-for-by', parent)).toEqual([parent, 'assemble', 'pending', 'waiting', 'hold', 'waiting for 2']);

  // One child completes, the other fails for good: the parent still waits, held for a person.
  const first = await claimOne('parts');
  expect((await t.call('POST', api(`/jobs/${first.id}/complete`), { workerId: 'w1', lockToken: first.lockToken, result: { ok: true } }, admin)).status).toBe(200);
  const second = await claimOne('parts');
  const failed = await t.call('POST', api(`/jobs/${second.id}/fail`), { workerId: 'w1', lockToken: second.lockToken, error: 'out of <stock>', retryable: false }, admin);
  expect(failed.json.job.status).toBe('failed');
  html = await page(cookie, `/dashboard/jobs/${parent}`);
  expect(html).toContain('<span class="status pending" id="job-status">');
  expect(row(html, 'waits-for', first.id)).toEqual([first.id, 'parts', 'completed', 'completed', '—', '—']);
  expect(row(html, 'waits-for', second.id)).toEqual([second.id, 'parts', 'failed', 'failed', '—', '—']);
  expect(element(html, `waits-for-${second.id}`, 'tr')).toContain('class="status failed" title="out of &lt;stock&gt;"');
  expect(text(element(html, 'dependency-wait', 'p'))).toBe(
    `Waiting for 1 of 2 dependencies (policy 'hold'): not claimable until they complete. Held for a person: dependency ${second.id} failed. Retry job ${second.id} to let the flow go on.`,
  );
  // Held because a dependency failed, not because an attempt was lost.
  expect(html).not.toContain('id="lost-attempt"');

  // The failed child's page still offers Retry; the dashboard's own form retries it.
  html = await page(cookie, `/dashboard/jobs/${second.id}`);
  expect(html).toContain(`action="/dashboard/jobs/${second.id}/retry"`);
  expect(row(html, 'waited-for-by', parent)).toEqual([parent, 'assemble', 'pending', 'failed', 'hold', 'waiting for 1 · held for a person']);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(html)![1]!;
  const retried = await req(`/dashboard/jobs/${second.id}/retry`, { cookie, form: { _csrf: csrf, reason: 'restocked' } });
  expect(retried.status).toBe(303);
  expect(retried.headers.get('location')).toBe(`/dashboard/jobs/${second.id}?notice=retried`);

  // The parent waits again, no longer held; its child is pending again.
  html = await page(cookie, `/dashboard/jobs/${parent}`);
  expect(row(html, 'waits-for', second.id)).toEqual([second.id, 'parts', 'pending', 'waiting', '—', '—']);
  expect(text(element(html, 'dependency-wait', 'p'))).toBe("Waiting for 1 of 2 dependencies (policy 'hold'): not claimable until they complete.");
  expect((await t.call('POST', api('/queues/assemble/claim'), { workerId: 'w1' }, admin)).json.jobs).toEqual([]);

  // A worker completes it: the parent's page shows it completed and the parent claimable.
  const again = await claimOne('parts');
  expect(again.id).toBe(second.id);
  expect((await t.call('POST', api(`/jobs/${again.id}/complete`), { workerId: 'w1', lockToken: again.lockToken, result: { ok: true } }, admin)).status).toBe(200);
  html = await page(cookie, `/dashboard/jobs/${parent}`);
  expect(row(html, 'waits-for', second.id)).toEqual([second.id, 'parts', 'completed', 'completed', '—', '—']);
  expect(text(element(html, 'dependency-wait', 'p'))).toBe('All 2 dependencies met: claimable.');
  expect(html).toContain('<span class="status pending" id="job-status">');
  expect(html).not.toContain('id="job-waiting"');
  expect(html).toMatch(/dependency_retried/);
  expect(html).toMatch(/dependencies_met/);
  const taken = await claimOne('assemble');
  expect(taken.id).toBe(parent);

  // The polled fragment carries the section too.
  const live = await (await req(`/dashboard/live/jobs/${parent}?part=details`, { cookie })).text();
  expect(row(live, 'waits-for', a)).toEqual([a, 'parts', 'completed', 'completed', '—', '—']);
  expect(text(element(live, 'dependency-wait', 'p'))).toBe("All 2 dependencies met (policy 'hold').");
});

test("a job held because its dependency failed (policy 'hold') is offered what fits it: retry the dependency, complete without running, fail; never the lost attempt's release", async () => {
  t = await setup({ adminToken: ADMIN });
  const flow = await t.call(
    'POST',
    api('/flows'),
    { jobs: [{ queue: 'parts', payload: {} }, { queue: 'assemble', payload: {}, dependsOn: ['#0'], dependencyPolicy: 'hold' }, { queue: 'ship', payload: {}, dependsOn: ['#1'] }] },
    admin,
  );
  const [child, parent, next] = (flow.json.jobs as { id: string }[]).map((j) => j.id) as [string, string, string];
  const c = await claimOne('parts');
  await t.call('POST', api(`/jobs/${c.id}/fail`), { workerId: 'w1', lockToken: c.lockToken, error: 'boom', retryable: false }, admin);
  const cookie = await login();
  let html = await page(cookie, `/dashboard/jobs/${parent}`);
  // Its text (a link's tags leave a space before the comma after it).
  const actions = text(element(html, 'dependency-hold-actions', 'div')).replace(/ ,/g, ',');
  // No release (it would not run the job: it still waits for the failed one), and none of the lost attempt's words.
  expect(html).not.toContain(`/dashboard/jobs/${parent}/held/release`);
  expect(html).not.toContain('lost attempt');
  expect(html).not.toContain('runs again');
  expect(element(html, 'dependency-hold-actions', 'div')).toContain(`action="/dashboard/jobs/${child}/retry"`);
  expect(actions).toContain(`Retry job ${child}, the failed dependency: the flow goes on. This job waits again, no longer held, and runs once job ${child} completes.`);
  expect(actions).toContain('Complete by hand, without running it: record a result in its place (JSON, optional); the jobs waiting for this one go on.');
  expect(actions).toContain('Fail for good: it will not run; the jobs waiting for this one follow their own policies.');
  // Cancel still fits a pending job.
  expect(html).toContain(`action="/dashboard/jobs/${parent}/cancel"`);
  // The zombies page's held list says why it is held, not whose attempt was lost.
  const zombies = await page(cookie, '/dashboard/zombies');
  expect(zombies).toContain(`dependency <a href="/dashboard/jobs/${child}">${child}</a> failed (policy &#39;hold&#39;): retry it to let the flow go on`);

  // Completed in its place: the job after it runs. (Each form carries its own token, good for one submission.)
  const csrf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)![1]!;
  const done = await req(`/dashboard/jobs/${parent}/held/complete`, { cookie, form: { _csrf: csrf(html), reason: 'assembled by hand', result: '{"by":"hand"}' } });
  expect(done.headers.get('location')).toBe(`/dashboard/jobs/${parent}?notice=held_completed`);
  expect((await t.get(api(`/jobs/${parent}`), admin)).json.job).toMatchObject({ status: 'completed', result: { by: 'hand' } });
  expect((await claimOne('ship')).id).toBe(next);

  // On a second flow: the Retry form on the held job's page retries the dependency, and the job waits again.
  const again = await t.call('POST', api('/flows'), { jobs: [{ queue: 'parts', payload: {} }, { queue: 'assemble', payload: {}, dependsOn: ['#0'], dependencyPolicy: 'hold' }] }, admin);
  const [child2, parent2] = (again.json.jobs as { id: string }[]).map((j) => j.id) as [string, string];
  const c2 = await claimOne('parts');
  await t.call('POST', api(`/jobs/${c2.id}/fail`), { workerId: 'w1', lockToken: c2.lockToken, error: 'boom', retryable: false }, admin);
  html = await page(cookie, `/dashboard/jobs/${parent2}`);
  expect(html).toContain(`action="/dashboard/jobs/${child2}/retry"`);
  const retried = await req(`/dashboard/jobs/${child2}/retry`, { cookie, form: { _csrf: csrf(html), reason: '' } });
  expect(retried.headers.get('location')).toBe(`/dashboard/jobs/${child2}?notice=retried`);
  expect((await t.get(api(`/jobs/${parent2}`), admin)).json.job).toMatchObject({ status: 'pending', heldAt: null });
  // Failed for good instead (its dependency failed again): its error says which dependency held it, not a lost attempt.
  const c3 = await claimOne('parts');
  await t.call('POST', api(`/jobs/${c3.id}/fail`), { workerId: 'w1', lockToken: c3.lockToken, error: 'boom again', retryable: false }, admin);
  html = await page(cookie, `/dashboard/jobs/${parent2}`);
  const failed = await req(`/dashboard/jobs/${parent2}/held/fail`, { cookie, form: { _csrf: csrf(html), reason: 'not needed' } });
  expect(failed.headers.get('location')).toBe(`/dashboard/jobs/${parent2}?notice=held_failed`);
  expect((await t.get(api(`/jobs/${parent2}`), admin)).json.job).toMatchObject({ status: 'failed', lastError: `failed by hand while held for failed dependency ${child2}: not needed` });
});

test("under policy 'fail' the parent's page says to retry the failed child, not the parent", async () => {
  t = await setup({ adminToken: ADMIN });
  const flow = await t.call('POST', api('/flows'), { jobs: [{ queue: 'parts', payload: {} }, { queue: 'assemble', payload: {}, dependsOn: ['#0'] }] }, admin);
  const [child, parent] = (flow.json.jobs as { id: string }[]).map((j) => j.id) as [string, string];
  const c = await claimOne('parts');
  await t.call('POST', api(`/jobs/${c.id}/fail`), { workerId: 'w1', lockToken: c.lockToken, error: 'boom', retryable: false }, admin);
  const cookie = await login();
  const html = await page(cookie, `/dashboard/jobs/${parent}`);
  expect(html).toContain('<span class="status failed" id="job-status">');
  expect(text(element(html, 'dependency-wait', 'p'))).toBe(
    `Failed because dependency ${child} failed (policy 'fail'). Retry job ${child}, not this one: this job then waits again, and runs once all its dependencies complete.`,
  );
  expect(row(html, 'waits-for', child)).toEqual([child, 'parts', 'failed', 'failed', '—', '—']);
});

test("down a chain under policy 'fail', a job's page names the dependency the failure came through, and says to retry the job that failed first", async () => {
  t = await setup({ adminToken: ADMIN });
  const flow = await t.call('POST', api('/flows'), { jobs: [{ queue: 'parts', payload: {} }, { queue: 'assemble', payload: {}, dependsOn: ['#0'] }, { queue: 'ship', payload: {}, dependsOn: ['#1'] }] }, admin);
  const [root, middle, last] = (flow.json.jobs as { id: string }[]).map((j) => j.id) as [string, string, string];
  const c = await claimOne('parts');
  await t.call('POST', api(`/jobs/${c.id}/fail`), { workerId: 'w1', lockToken: c.lockToken, error: 'boom', retryable: false }, admin);
  await t.post(api('/reaper/run'), {}, admin);
  const html = await page(await login(), `/dashboard/jobs/${last}`);
  expect(html).toContain('<span class="status failed" id="job-status">');
  expect(text(element(html, 'dependency-wait', 'p'))).toBe(
    `Failed because dependency ${middle} failed after job ${root} upstream (policy 'fail'). Retry job ${root}, not this one: this job then waits again, and runs once all its dependencies complete.`,
  );
});

test("a snoozed job's page shows its snoozes against its queue's maxSnoozes, and the snooze reads clearly in its timeline", async () => {
  t = await setup({ adminToken: ADMIN });
  expect((await t.call('PATCH', api('/queues/naps/settings'), { maxSnoozes: 3 }, admin)).status).toBe(200);
  const job = await t.enqueue('naps');
  const c = await claimOne('naps');
  const snoozed = await t.call('POST', api(`/jobs/${c.id}/snooze`), { workerId: 'w1', lockToken: c.lockToken, delayMs: 5000 }, admin);
  expect(snoozed.status, snoozed.text).toBe(200);
  const cookie = await login();
  const html = await page(cookie, `/dashboard/jobs/${job.id}`);
  expect(text(element(html, 'job-snoozes', 'dd'))).toBe('1 of 3');
  const events = element(html, 'job-events', 'table');
  expect(text(events)).toContain('snoozed (not now: due again after 5.0 s; the attempt was given back)');

  // A queue without its own limit shows the default.
  const other = await t.enqueue('plain');
  expect(text(element(await page(cookie, `/dashboard/jobs/${other.id}`), 'job-snoozes', 'dd'))).toBe('0 of 100');
});

test('a job cancelled while it waited does not read as met', async () => {
  t = await setup({ adminToken: ADMIN });
  const flow = await t.call('POST', api('/flows'), { jobs: [{ queue: 'parts', payload: {} }, { queue: 'assemble', payload: {}, dependsOn: ['#0'], dependencyPolicy: 'run' }] }, admin);
  const parent = flow.json.jobs[1].id as string;
  expect((await t.call('POST', api(`/jobs/${parent}/cancel`), { reason: 'not needed' }, admin)).json.job.status).toBe('cancelled');
  const html = await page(await login(), `/dashboard/jobs/${parent}`);
  expect(text(element(html, 'dependency-wait', 'p'))).toBe("1 of 1 dependencies were still unmet when it was cancelled (policy 'run').");
});

test('a job in no graph has no Dependencies section', async () => {
  t = await setup({ adminToken: ADMIN });
  const job = await t.enqueue('solo');
  const cookie = await login();
  const html = await page(cookie, `/dashboard/jobs/${job.id}`);
  expect(html).not.toContain('id="job-dependencies"');
  expect(html).not.toContain('<h2>Dependencies</h2>');
  expect(html).not.toContain('id="job-waiting"');
});

test('a job waited for by more jobs than the page lists shows the first 100 by id and says there are more', async () => {
  t = await setup({ adminToken: ADMIN });
  // A flow holds at most 100 jobs: the child and 99 dependents, then two more waiting for it.
  const first = await t.call('POST', api('/flows'), { jobs: [{ queue: 'c', payload: {} }, ...Array.from({ length: 99 }, () => ({ queue: 'p', payload: {}, dependsOn: ['#0'] }))] }, admin);
  expect(first.status, first.text).toBe(201);
  const child = first.json.jobs[0].id as string;
  const more = await t.call('POST', api('/flows'), { jobs: [{ queue: 'p', payload: {}, dependsOn: [child] }, { queue: 'p', payload: {}, dependsOn: [child] }] }, admin);
  expect(more.status, more.text).toBe(201);
  const last = more.json.jobs[1].id as string;
  const cookie = await login();
  const html = await page(cookie, `/dashboard/jobs/${child}`);
  expect(html.match(/<tr id="waited-for-by-/g)).toHaveLength(100);
  expect(html).not.toContain(`id="waited-for-by-${last}"`);
  expect(text(element(html, 'more-dependents', 'p'))).toBe(`More than 100 jobs wait for this one: the first 100 by id are shown. GET /api/v1/jobs/${child}/dependencies lists up to 1,000.`);
});
