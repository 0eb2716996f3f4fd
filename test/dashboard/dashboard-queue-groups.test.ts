/**
 * The queue page's Groups section (src/dashboard/queue-groups.tsx): the
 * busiest groups with their pending and running jobs against groupMaxRunning,
 * every other group in one "other" row, polled; no section for a queue
 * without groups or group limits. Through the real app, on a fresh database.
 */
import { afterEach, beforeEach, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';

const api = '/api/v1';
let t: TestBed;
beforeEach(async () => {
  t = await setup();
});
afterEach(() => {
  expect(t.errors).toEqual([]);
  t.close();
});

const enqueue = async (queue: string, jobs: Record<string, unknown>[]) => expect((await t.post(`${api}/queues/${queue}/jobs`, { jobs })).status).toBe(201);
const grouped = (group: string, n: number) => Array.from({ length: n }, (_, i) => ({ payload: i, group }));
/** The cells of each row of the groups table, as text. */
const rowsOf = (html: string) =>
  [...(/<table class="groups" id="queue-groups">([\s\S]*?)<\/table>/.exec(html)?.[1] ?? '').matchAll(/<tr[^>]*>([\s\S]*?)<\/tr>/g)]
    .map((r) => [...r[1]!.matchAll(/<t[dh][^>]*>([\s\S]*?)<\/t[dh]>/g)].map((c) => c[1]!.trim()))
    .slice(1);

test('uneven backlogs: the busiest groups against groupMaxRunning, the other groups summed in one row, polled', async () => {
  expect((await t.call('PATCH', `${api}/queues/q/settings`, { groupMaxRunning: 2 })).status).toBe(200);
  await enqueue('q', [...grouped('tenant-A', 50), ...grouped('tenant-B', 3)]);
  // A and B reach their cap of 2 running.
  expect(await t.claim('q', 'w', { limit: 10 })).toHaveLength(4);
  await enqueue('q', [...Array.from({ length: 15 }, (_, i) => ({ payload: i, group: `s${String(i).padStart(2, '0')}` })), { payload: 'x' }, { payload: 'y' }]);
  // The two jobs without a group and each single group's job: A and B are full.
  expect(await t.claim('q', 'w', { limit: 100 })).toHaveLength(17);

  const page = await t.get('/dashboard/queues/q');
  expect(page.status).toBe(200);
  expect(page.text).toContain('<h2>Groups</h2>');
  expect(page.text).toContain('hx-get="/dashboard/live/queues/q/groups"');
  expect(page.text).toMatch(/<dd id="queue-counts">49 pending \(49 ready\) · 21 running/);
  expect(page.text).toContain('At most 2 running jobs per group (groupMaxRunning)');
  expect(page.text).toMatch(/<caption>\s*The 10 busiest of 17 groups with pending or running jobs\s*<\/caption>/);
  expect(rowsOf(page.text)).toEqual([
    ['tenant-A', '48', '2 of at most 2'],
    ['tenant-B', '1', '2 of at most 2'],
    ...['s00', 's01', 's02', 's03', 's04', 's05', 's06', 's07'].map((g) => [g, '0', '1 of at most 2']),
    ['other (7 groups)', '0', '7'],
  ]);
  // A group at its cap is marked.
  expect(page.text).toContain('<td class="group">tenant-A</td><td>48</td><td class="bad">2 of at most 2</td>');
  expect(page.text).toContain('<td class="group">s00</td><td>0</td><td>1 of at most 2</td>');

  // The polled fragment: the same table, as the counts move (A's jobs finished, one by one).
  const running = (await t.client.execute(`SELECT id, lock_token FROM jobs WHERE group_key = 'tenant-A' AND status = 'running'`)).rows;
  for (const r of running) expect((await t.post(`${api}/jobs/${r.id}/complete`, { workerId: 'w', lockToken: String(r.lock_token) })).status).toBe(200);
  const live = await t.get('/dashboard/live/queues/q/groups');
  expect(live.status).toBe(200);
  expect(live.text).not.toContain('<html');
  expect(rowsOf(live.text).slice(0, 2)).toEqual([
    ['tenant-A', '48', '0 of at most 2'],
    ['tenant-B', '1', '2 of at most 2'],
  ]);
  expect(rowsOf(live.text).at(-1)).toEqual(['other (7 groups)', '0', '7']);
  expect((await t.get('/dashboard/live/queues/nope/groups')).status).toBe(404);
});

test('no Groups section for a queue without groups; a group limit alone shows the section with no group; keys are escaped', async () => {
  await enqueue('plain', [{ payload: 1 }]);
  const plain = await t.get('/dashboard/queues/plain');
  expect(plain.status).toBe(200);
  expect(plain.text).not.toContain('<h2>Groups</h2>');
  expect(plain.text).not.toContain('/groups"');

  expect((await t.call('PATCH', `${api}/queues/capped/settings`, { groupMaxRunning: 3, groupRateLimit: { max: 5, windowMs: 60_000 } })).status).toBe(200);
  const capped = await t.get('/dashboard/queues/capped');
  expect(capped.text).toContain('<h2>Groups</h2>');
  expect(capped.text).toContain('At most 3 running jobs per group (groupMaxRunning); at most 5 claims per group in any 1 m 0 s (groupRateLimit)');
  expect(capped.text).toContain('No group has pending or running jobs.');

  await enqueue('odd', [{ payload: 1, group: '<b>"x"</b> & \'y\'' }]);
  const odd = await t.get('/dashboard/queues/odd');
  expect(odd.text).not.toContain('<b>"x"</b>');
  expect(rowsOf(odd.text)).toEqual([['&lt;b&gt;&quot;x&quot;&lt;/b&gt; &amp; &#39;y&#39;', '1', '0']]);
  expect(odd.text).toMatch(/<caption>\s*All 1 group with pending or running jobs\s*<\/caption>/);
  expect(odd.text).toContain('No limit on running jobs per group');
  expect(odd.text).not.toContain('queue-groups-other');
});
