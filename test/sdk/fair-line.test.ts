/**
 * The order jobs claimed ahead start in (src/worker/fair-line.ts): without a
 * group first-in first-out and first; grouped ones a turn at a time across
 * groups; a grouped job that waited past twice its budget ahead of its turn.
 */
import { expect, test } from 'vitest';
import type { Running } from '../../src/worker/held.ts';
import { createFairLine } from '../../src/worker/fair-line.ts';

const job = (id: string, group: string | null, queue = 'q') => ({ job: { id, queue, group } }) as unknown as Running;
const drain = (line: ReturnType<typeof createFairLine>) => {
  const out: string[] = [];
  for (let r = line.next(); r; r = line.next()) out.push(r.job.id);
  return out;
};

test('without groups: first in, first out', () => {
  const line = createFairLine(() => 0);
  for (const id of ['1', '2', '3']) line.push(job(id, null), 1_000);
  expect(line.length).toBe(3);
  expect(drain(line)).toEqual(['1', '2', '3']);
  expect(line.length).toBe(0);
});

test("groups take turns, a group that arrives later joins the round at its end, and jobs without a group go first", () => {
  const line = createFairLine(() => 0);
  for (const id of ['a1', 'a2', 'a3', 'a4']) line.push(job(id, 'a'), 1_000);
  expect(line.next()!.job.id).toBe('a1');
  for (const id of ['b1', 'b2']) line.push(job(id, 'b'), 1_000);
  line.push(job('c1', 'c'), 1_000);
  line.push(job('x', null), 1_000);
  expect(drain(line)).toEqual(['x', 'a2', 'b1', 'c1', 'a3', 'b2', 'a4']);
});

test("two queues' groups of the same name are two groups", () => {
  const line = createFairLine(() => 0);
  for (const id of ['p1', 'p2']) line.push(job(id, 'g', 'p'), 1_000);
  line.push(job('q1', 'g', 'q'), 1_000);
  expect(drain(line)).toEqual(['p1', 'q1', 'p2']);
});

test('a grouped job that has waited twice its budget goes next, ahead of turns and of jobs without a group', () => {
  let now = 0;
  const line = createFairLine(() => now);
  line.push(job('a1', 'a'), 1_000);
  line.push(job('a2', 'a'), 1_000);
  now = 1_500;
  line.push(job('b1', 'b'), 1_000);
  line.push(job('x', null), 1_000);
  now = 2_000;
  // a1 waited 2,000 ms, twice its 1,000 ms budget; a2 too, then the rest as usual.
  expect(drain(line)).toEqual(['a1', 'a2', 'x', 'b1']);
});

test('takeAll hands back every job still waiting, and the line is empty after', () => {
  const line = createFairLine(() => 0);
  line.push(job('a1', 'a'), 1_000);
  line.push(job('a2', 'a'), 1_000);
  line.push(job('x', null), 1_000);
  expect(line.next()!.job.id).toBe('x');
  line.push(job('b1', 'b'), 1_000);
  expect(line.next()!.job.id).toBe('a1');
  expect(line.takeAll().map((r) => r.job.id).sort()).toEqual(['a2', 'b1']);
  expect(line.length).toBe(0);
  expect(line.next()).toBeUndefined();
});
