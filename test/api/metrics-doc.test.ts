/**
 * docs/dashboard.md's table of /metrics series against what the real app
 * serves, both ways: every family /metrics declares (`# TYPE name type`) is a
 * row of the table with the same type and label names, and every row is a
 * family /metrics declares. So a new series cannot ship undocumented, and a
 * removed or renamed one cannot stay in the docs.
 *
 * /metrics writes every family's HELP and TYPE lines in any state; what
 * depends on the data is whether a family has samples. The workload below
 * gives each one some, so the label names are read from real series: most
 * need only a known queue, and the rest need
 * - leasehold_schedule_skipped_total: a schedule (a series per schedule),
 * - leasehold_group_jobs: a queue with grouped jobs,
 * - leasehold_job_runtime_recent_seconds: a job completed in the last hour,
 * - leasehold_finished_jobs_by_attempts: a job finished in the last hour.
 * Those are also the families the docs say a queue may be without (every
 * other per-queue family has a series for every known queue, 0 included),
 * which is checked too. Through the real app, on a fresh database.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';

const api = '/api/v1';
const DOC = join(import.meta.dirname, '..', '..', 'docs', 'dashboard.md');
/** Per-queue families that only some queues have, and why (docs/dashboard.md, *Metrics*, says the same). */
const NOT_EVERY_QUEUE: Record<string, string> = {
  leasehold_group_jobs: 'only queues with grouped jobs have group series',
  leasehold_job_runtime_recent_seconds: 'absent while the queue completed nothing in the last hour',
  leasehold_finished_jobs_by_attempts: 'one series per attempt count seen among the jobs finished in the last hour',
};

let t: TestBed;
afterEach(() => t?.close());

interface Family {
  type: string;
  labels: string[];
}

/**
 * The rows of the `| series | type | what |` table under `## Metrics`. A
 * first cell names one family (`name{a,b}`) or several that share labels
 * (`a`, `b` `{a,b}`); a name without braces has no labels.
 */
function documented(markdown: string): Map<string, Family> {
  const section = markdown.slice(markdown.indexOf('\n## Metrics\n'));
  const lines = section.split('\n');
  const start = lines.findIndex((l) => /^\| series \| type \| what \|$/.test(l));
  expect(start, 'the table of series under ## Metrics').toBeGreaterThan(0);
  const families = new Map<string, Family>();
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    const [series, type] = line.split('|').slice(1, 3).map((cell) => cell.trim());
    const spans = [...series!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    const waiting: string[] = [];
    const add = (name: string, labels: string[]) => {
      expect(families.has(name), `${name} is documented once`).toBe(false);
      families.set(name, { type: type!, labels: [...labels].sort() });
    };
    const split = (braces: string) => braces.slice(1, -1).split(',').filter(Boolean);
    for (const span of spans) {
      const m = /^(leasehold_\w+)?(\{[\w,]*\})?$/.exec(span);
      expect(m, `"${span}" in the row: ${line}`).not.toBeNull();
      const [, name, braces] = m!;
      if (name && braces) add(name, split(braces));
      else if (name) waiting.push(name);
      else for (const n of waiting.splice(0)) add(n, split(braces!));
    }
    for (const n of waiting) add(n, []);
  }
  return families;
}

/** Each family /metrics declares, its type, the label names of its samples (a histogram's `le` left out), and the queues it has series for. */
function served(text: string) {
  const families = new Map<string, Family & { samples: number; queues: Set<string> }>();
  let current: string | undefined;
  for (const line of text.split('\n')) {
    const declared = /^# TYPE (\w+) (\w+)$/.exec(line);
    if (declared) {
      current = declared[1]!;
      expect(families.has(current), `${current} is declared once`).toBe(false);
      families.set(current, { type: declared[2]!, labels: [], samples: 0, queues: new Set() });
      continue;
    }
    if (line === '' || line.startsWith('#')) continue;
    const sample = /^(\w+)(?:\{(.*)\})? \S+$/.exec(line);
    expect(sample, line).not.toBeNull();
    const family = families.get(current!)!;
    const suffixes = family.type === 'histogram' ? ['_bucket', '_sum', '_count'] : [''];
    expect(suffixes.map((s) => `${current}${s}`), `${line} under # TYPE ${current}`).toContain(sample![1]);
    family.samples++;
    for (const [, key, value] of sample![2]?.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g) ?? []) {
      if (key === 'queue') family.queues.add(value!);
      if (!(family.type === 'histogram' && key === 'le') && !family.labels.includes(key!)) family.labels.push(key!);
    }
  }
  for (const f of families.values()) f.labels.sort();
  return families;
}

test("every family /metrics serves is in docs/dashboard.md's table with its type and labels, and every row there is served", async () => {
  t = await setup();
  // A job through a dead-letter queue, a redrive, a snooze, a reported
  // duplicate, a renewal and a completion; a rewriting enqueue; a schedule;
  // a grouped job.
  expect((await t.call('PATCH', `${api}/queues/emails/settings`, { deadLetterQueue: 'emails-dead' })).status).toBe(200);
  const job = await t.enqueue('emails', { payload: {}, maxAttempts: 1 });
  const [first] = await t.claim('emails', 'W');
  expect((await t.post(`${api}/jobs/${job.id}/fail`, { workerId: 'W', lockToken: first!.lockToken, error: 'smtp refused' })).status).toBe(200);
  expect((await t.post(`${api}/queues/emails-dead/redrive`, { reason: 'smtp fixed' })).json).toMatchObject({ changed: 1 });
  const [second] = await t.claim('emails', 'W');
  expect((await t.post(`${api}/jobs/${job.id}/snooze`, { workerId: 'W', lockToken: second!.lockToken, delayMs: 10 })).status).toBe(200);
  t.clock.advance(10);
  const [third] = await t.claim('emails', 'W');
  expect((await t.post(`${api}/jobs/${job.id}/duplicates`, { workerId: 'W', lockToken: third!.lockToken, key: 'message 1' })).status).toBe(200);
  t.clock.advance(400);
  expect((await t.post(`${api}/heartbeats`, { workerId: 'W', leases: [{ id: job.id, lockToken: third!.lockToken }] })).status).toBe(200);
  expect((await t.post(`${api}/jobs/${job.id}/complete`, { workerId: 'W', lockToken: third!.lockToken })).status).toBe(200);
  await t.enqueue('emails', { payload: { v: 1 }, idempotencyKey: 'digest', uniqueWhile: 'replace' });
  expect((await t.post(`${api}/queues/emails/jobs`, { payload: { v: 2 }, idempotencyKey: 'digest', uniqueWhile: 'replace' })).json).toMatchObject({ replaced: true });
  expect((await t.post(`${api}/schedules`, { name: 'tick', queue: 'ticks', intervalMs: 60_000 })).status).toBe(201);
  expect((await t.post(`${api}/queues/tenants/jobs`, { jobs: [{ payload: {}, group: 'acme' }] })).status).toBe(201);

  const res = await t.get('/metrics');
  expect(res.status).toBe(200);
  const emitted = served(res.text);
  const docs = documented(readFileSync(DOC, 'utf8'));
  // The five families the table once missed, so a parser that finds nothing cannot pass.
  for (const name of ['leasehold_jobs_dead_lettered_total', 'leasehold_jobs_snoozed_total', 'leasehold_jobs_redriven_total', 'leasehold_duplicates_reported_total', 'leasehold_enqueue_replaced_total']) {
    expect(emitted.get(name)?.type, name).toBe('counter');
  }
  expect(emitted.size).toBeGreaterThan(50);

  expect([...emitted.keys()].filter((n) => !docs.has(n)), 'served but not in the table').toEqual([]);
  expect([...docs.keys()].filter((n) => !emitted.has(n)), 'in the table but not served').toEqual([]);
  const rows = (from: Map<string, Family>) => [...emitted.keys()].map((name) => ({ name, type: from.get(name)?.type, labels: from.get(name)?.labels }));
  expect(rows(docs), "the table's type and labels of each family").toEqual(rows(emitted));

  // Every family has series after the workload, and every per-queue family
  // one for each known queue, save the documented exceptions.
  expect([...emitted].filter(([, f]) => f.samples === 0).map(([n]) => n), 'families without a sample').toEqual([]);
  const queues = emitted.get('leasehold_jobs')!.queues;
  expect([...queues].sort()).toEqual(['emails', 'tenants']);
  const partial = [...emitted].filter(([, f]) => f.labels.includes('queue') && f.queues.size !== queues.size).map(([n]) => n);
  expect(partial.sort()).toEqual(Object.keys(NOT_EVERY_QUEUE).sort());
  expect(t.errors).toEqual([]);
});
