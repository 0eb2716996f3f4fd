/**
 * Per-group series on /metrics (src/api/metrics.ts): leasehold_group_jobs
 * names at most GROUP_SERIES_PER_QUEUE groups per queue, the rest summed
 * under group="__other__", so a queue's series stay bounded however many
 * groups it has and their sums are every grouped job; leasehold_groups counts
 * the groups; group keys (any text) are escaped as the text format says.
 * Through the real app, on a fresh database.
 */
import { afterEach, beforeEach, expect, test } from 'vitest';
import { GROUP_SERIES_PER_QUEUE } from '../../src/api/metrics.ts';
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

/** A label value as the text format writes it (backslash, double quote and line feed escaped), read back. */
const unescape = (v: string) => v.replace(/\\(["\\n])/g, (_, ch: string) => (ch === 'n' ? '\n' : ch));

/** The samples of one metric: each with its labels (read back) and value. */
function samples(text: string, name: string) {
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`))
    .map((line) => {
      const m = /^\w+\{(.*)\} (\S+)$/.exec(line)!;
      const labels: Record<string, string> = {};
      for (const l of m[1]!.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = unescape(l[2]!);
      return { labels, value: Number(m[2]) };
    });
}

test('uneven backlogs: at most 20 groups named per queue, the rest under __other__, sums equal to the queue', async () => {
  expect((await t.call('PATCH', `${api}/queues/q/settings`, { groupMaxRunning: 2 })).status).toBe(200);
  await enqueue('q', [...grouped('tenant-A', 50), ...grouped('tenant-B', 3)]);
  expect(await t.claim('q', 'w', { limit: 10 })).toHaveLength(4);
  // 30 groups of one job: with A and B, 32 groups; all running (A and B are at their cap).
  await enqueue('q', Array.from({ length: 30 }, (_, i) => ({ payload: i, group: `s${String(i).padStart(2, '0')}` })));
  expect(await t.claim('q', 'w', { limit: 100 })).toHaveLength(30);
  await enqueue('plain', [{ payload: 1 }]);

  const res = await t.get('/metrics');
  expect(res.status).toBe(200);
  expect(res.text).toContain('# TYPE leasehold_group_jobs gauge');
  expect(res.text).toContain('leasehold_groups{queue="q"} 32');
  // Every known queue has leasehold_groups; only a queue with groups has group series.
  expect(res.text).toContain('leasehold_groups{queue="plain"} 0');
  const series = samples(res.text, 'leasehold_group_jobs');
  expect(series.filter((s) => s.labels.queue === 'plain')).toEqual([]);
  const q = series.filter((s) => s.labels.queue === 'q');
  // Bounded: 20 named groups and __other__, a pending and a running series each.
  expect(GROUP_SERIES_PER_QUEUE).toBe(20);
  expect(q).toHaveLength(2 * (GROUP_SERIES_PER_QUEUE + 1));
  const value = (group: string, state: string) => q.find((s) => s.labels.group === group && s.labels.state === state)?.value;
  expect([value('tenant-A', 'pending'), value('tenant-A', 'running'), value('tenant-B', 'pending'), value('tenant-B', 'running')]).toEqual([48, 2, 1, 2]);
  // Ties by group key: s00..s17 named, s18..s29 (12 groups, one running job each) summed.
  expect(value('s17', 'running')).toBe(1);
  expect(value('s18', 'running')).toBeUndefined();
  expect([value('__other__', 'pending'), value('__other__', 'running')]).toEqual([0, 12]);
  // Exact: the series add up to the queue's pending and running jobs (every job of q has a group).
  const jobs = samples(res.text, 'leasehold_jobs').filter((s) => s.labels.queue === 'q');
  for (const state of ['pending', 'running']) {
    const sum = q.filter((s) => s.labels.state === state).reduce((n, s) => n + s.value, 0);
    expect(sum, state).toBe(jobs.find((s) => s.labels.status === state)!.value);
  }
});

test('group keys are escaped as the text format says; a group named __other__ is counted with the rest, never twice', async () => {
  const keys = ['quote " here', 'back \\ slash', 'line\nbreak', 'tab\there', 'uni é 😀', '{a="b"}'];
  await enqueue('odd', keys.map((group) => ({ payload: 1, group })));
  await enqueue('clash', [...grouped('__other__', 5), ...grouped('x', 1)]);
  const text = (await t.get('/metrics')).text;
  expect(text).toContain('leasehold_group_jobs{queue="odd",group="quote \\" here",state="pending"} 1');
  expect(text).toContain('leasehold_group_jobs{queue="odd",group="back \\\\ slash",state="pending"} 1');
  expect(text).toContain('leasehold_group_jobs{queue="odd",group="line\\nbreak",state="pending"} 1');
  // A tab is not escaped (\t is no escape of the format: a parser refuses it).
  expect(text).toContain('leasehold_group_jobs{queue="odd",group="tab\there",state="pending"} 1');
  expect(text).not.toMatch(/\\t|\\u/);
  // Every line is one sample or comment: no key broke a line.
  for (const line of text.trimEnd().split('\n')) expect(line).toMatch(/^(# (HELP|TYPE) \w+ .+|\w+(\{.*\})? -?[\d.e+-]+|\w+(\{.*\})? NaN)$/);
  const odd = samples(text, 'leasehold_group_jobs').filter((s) => s.labels.queue === 'odd' && s.labels.state === 'pending');
  expect(odd.map((s) => s.labels.group).sort()).toEqual([...keys, '__other__'].sort());

  const clash = samples(text, 'leasehold_group_jobs').filter((s) => s.labels.queue === 'clash');
  expect(clash.map((s) => [s.labels.group, s.labels.state, s.value])).toEqual([
    ['x', 'pending', 1],
    ['x', 'running', 0],
    ['__other__', 'pending', 5],
    ['__other__', 'running', 0],
  ]);
  expect(text).toContain('leasehold_groups{queue="clash"} 2');
});
