/**
 * A job with large, deeply nested values (payload, progress, checkpoint,
 * result, a long error and its event) renders a small job page: each field
 * within the dashboard's byte budget, indentation bounded, a notice with the
 * link to the whole value, user data still escaped. The link answers the
 * whole stored value as JSON, behind the same login.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { MAX_INDENT_DEPTH, clipToBudget, prettyBounded } from '../../src/dashboard/json-field.tsx';
import { setup, type TestBed } from '../support/helpers.ts';
import { dashboardBrowser } from '../support/dashboard-browser.ts';

const ADMIN = 'a'.repeat(24);
const READONLY = 'r'.repeat(24);
const admin = { authorization: `Bearer ${ADMIN}` };

let t: TestBed;
/** One big job for the whole file (storing it takes a few seconds); the tests only read it. */
let big: Awaited<ReturnType<typeof bigJob>>;
beforeAll(async () => {
  t = await setup({ adminToken: ADMIN, readonlyToken: READONLY });
  big = await bigJob();
}, 60_000);
afterAll(() => {
  expect(t.errors).toEqual([]);
  t.close();
});

const browser = dashboardBrowser(() => t.app);
const { req } = browser;
const login = (token = ADMIN) => browser.login(token);

/** `count` arrays nested `depth` deep, side by side: about count x (2 x depth) bytes of JSON. */
const nested = (count: number, depth: number, leaf: unknown = 1): unknown[] => {
  const one = JSON.parse(`${'['.repeat(depth)}${JSON.stringify(leaf)}${']'.repeat(depth)}`);
  return Array.from({ length: count }, () => one);
};

async function bigJob() {
  // About 1 MiB of arrays 256 deep: pretty-printed whole, this was a 250 MiB page.
  const payload = nested(1_950, 255);
  const id = (await t.enqueue('big', { payload })).id;
  const [first] = await t.claim('big', 'w1');
  const owner = { workerId: 'w1', lockToken: first!.lockToken };
  expect((await t.post(`/api/v1/jobs/${id}/checkpoint`, { ...owner, checkpoint: { cursor: nested(900, 254) } }, admin)).status).toBe(200);
  // Under the API's 16,000 characters, but over the budget once escaped: every quote is six bytes of page.
  const error = `<script>alert("x")</script> ${'"<&>" '.repeat(2_500)}`.slice(0, 15_000);
  expect((await t.post(`/api/v1/jobs/${id}/fail`, { ...owner, error, retryable: true, retryAfterMs: 0 }, admin)).status).toBe(200);
  const [second] = await t.claim('big', 'w2');
  // Progress belongs to the attempt: reported by the second one.
  expect((await t.post(`/api/v1/jobs/${id}/heartbeat`, { workerId: 'w2', lockToken: second!.lockToken, progress: nested(200, 200, '<b>step</b>') }, admin)).status).toBe(200);
  const result = { rows: Array.from({ length: 20_000 }, (_, i) => ({ i, name: `row ${i} "quoted" & <tagged>` })) };
  expect((await t.post(`/api/v1/jobs/${id}/complete`, { workerId: 'w2', lockToken: second!.lockToken, result }, admin)).status).toBe(200);
  return { id, payload, error, result };
}

test('the page of a job with large nested values is small, cut per field with links, indentation bounded, and still escaped', async () => {
  const { id } = big;
  const cookie = await login();
  const res = await req(`/dashboard/jobs/${id}`, { cookie });
  expect(res.status).toBe(200);
  const html = await res.text();
  const bytes = new TextEncoder().encode(html).byteLength;
  // Six budgeted fields (payload, progress, checkpoint, error, result, the events' messages) and the page around them.
  expect(bytes).toBeLessThan(6 * t.config.dashboardFieldBytes + 64 * 1024);
  for (const field of ['payload', 'progress', 'checkpoint', 'error', 'result', 'events']) {
    expect(html, field).toContain(`id="cut-${field}"`);
    expect(html, field).toContain(`href="/dashboard/jobs/${id}/raw/${field}"`);
    expect(html, field).toContain(`href="/dashboard/jobs/${id}/raw/${field}?inline"`);
  }
  expect(html).toContain('show the rest');
  // No line is indented deeper than the bound (two spaces a level).
  const deepest = Math.max(...html.split('\n').map((line) => /^ */.exec(line)![0].length));
  expect(deepest).toBeLessThanOrEqual(2 * MAX_INDENT_DEPTH);
  // User data is escaped, cut or not.
  expect(html).not.toContain('<script>alert');
  expect(html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
  expect(html).not.toContain('<b>step</b>');
  expect(html).not.toContain('<tagged>');
  expect(html).toContain('&quot;&lt;&amp;&gt;&quot; &quot;&lt;&amp;&gt;&quot;');

  // The polled details fragment is as small.
  const live = await req(`/dashboard/live/jobs/${id}?part=details`, { cookie });
  expect(new TextEncoder().encode(await live.text()).byteLength).toBeLessThan(6 * t.config.dashboardFieldBytes + 32 * 1024);
});

test('the link answers the whole stored value as JSON, to be shown or downloaded, behind the same login', async () => {
  const { id, payload, error, result } = big;
  const cookie = await login();
  const raw = await req(`/dashboard/jobs/${id}/raw/payload`, { cookie });
  expect(raw.status).toBe(200);
  expect(raw.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(raw.headers.get('content-disposition')).toBe(`attachment; filename="job-${id}-payload.json"`);
  expect(raw.headers.get('x-content-type-options')).toBe('nosniff');
  expect(raw.headers.get('cache-control')).toBe('no-store');
  expect(JSON.parse(await raw.text())).toEqual(payload);

  const shown = await req(`/dashboard/jobs/${id}/raw/result?inline`, { cookie });
  expect(shown.headers.get('content-disposition')).toBe(`inline; filename="job-${id}-result.json"`);
  expect(JSON.parse(await shown.text())).toEqual(result);
  expect(JSON.parse(await (await req(`/dashboard/jobs/${id}/raw/error`, { cookie })).text())).toBe(error);
  const events = JSON.parse(await (await req(`/dashboard/jobs/${id}/raw/events`, { cookie })).text());
  expect(events.events.find((e: { type: string }) => e.type === 'retry_scheduled' || e.type === 'failed').message).toBe(error);
  expect(JSON.parse(await (await req(`/dashboard/jobs/${id}/raw/checkpoint`, { cookie })).text()).cursor).toHaveLength(900);

  // The same login as the page: none redirects to it; a read-only one may read.
  const anonymous = await req(`/dashboard/jobs/${id}/raw/payload`);
  expect(anonymous.status).toBe(303);
  expect(anonymous.headers.get('location')).toBe(`/dashboard/login?next=${encodeURIComponent(`/dashboard/jobs/${id}/raw/payload`)}`);
  expect((await req(`/dashboard/jobs/${id}/raw/payload`, { cookie: await login(READONLY) })).status).toBe(200);

  // What is not there is a 404 that says so.
  const none = await req(`/dashboard/jobs/999/raw/payload`, { cookie });
  expect(none.status).toBe(404);
  expect((await none.json()).error.code).toBe('not_found');
  const fresh = (await t.enqueue('small', { payload: { a: 1 } })).id;
  const noResult = await req(`/dashboard/jobs/${fresh}/raw/result`, { cookie });
  expect(noResult.status).toBe(404);
  expect((await noResult.json()).error.message).toBe(`job ${fresh} has no result`);
  expect((await req(`/dashboard/jobs/${fresh}/raw/secrets`, { cookie })).status).toBe(404);
});

test('small values are shown whole, pretty-printed, without a notice', async () => {
  const id = (await t.enqueue('small', { payload: { to: 'ada@example.com', tags: ['a', 'b'], deep: [[[1]]] } })).id;
  const html = await (await req(`/dashboard/jobs/${id}`, { cookie: await login() })).text();
  expect(html).toContain('{\n  &quot;to&quot;: &quot;ada@example.com&quot;,\n  &quot;tags&quot;: [\n    &quot;a&quot;,\n    &quot;b&quot;\n  ],');
  expect(html).not.toContain('class="hint cut"');
});

test('pretty-printing stops at the depth bound and at the budget; a cut never splits a character', () => {
  const deep = JSON.parse(`${'['.repeat(10)}1${']'.repeat(10)}`);
  expect(prettyBounded(deep, 1_000, 2)).toEqual({ text: '[\n  [\n    [[[[[[[[1]]]]]]]]\n  ]\n]', complete: true });
  const long = prettyBounded(Array.from({ length: 1_000 }, (_, i) => i), 100);
  expect(long.complete).toBe(false);
  expect(long.text.length).toBeLessThan(200);
  // Escaped bytes count: four quotes are 24 bytes of page.
  expect(clipToBudget('""""x', 24)).toEqual({ text: '""""', complete: false, pageBytes: 24 });
  expect(clipToBudget('ab😀', 5)).toEqual({ text: 'ab', complete: false, pageBytes: 2 });
  expect(clipToBudget('ab😀', 6)).toEqual({ text: 'ab😀', complete: true, pageBytes: 6 });
});
