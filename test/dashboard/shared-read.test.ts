/** sharedRead: the dashboard's one-read-per-second for polls from many tabs. */
import { describe, expect, test } from 'vitest';
import { sharedRead } from '../../src/dashboard/shared-read.ts';

describe('sharedRead', () => {
  test('concurrent and recent callers share one read; an older one reads again', async () => {
    let now = 1_000;
    let reads = 0;
    const read = sharedRead(async () => ++reads, 1_000, () => now);
    expect(await Promise.all([read(), read(), read()])).toEqual([1, 1, 1]);
    now += 999;
    expect(await read()).toBe(1);
    now += 1;
    expect(await read()).toBe(2);
    expect(reads).toBe(2);
  });

  test('a failed read is not kept: the next caller reads again', async () => {
    let reads = 0;
    const read = sharedRead(async () => {
      reads++;
      if (reads === 1) throw new Error('database busy');
      return 'ok';
    }, 60_000, () => 0);
    await expect(read()).rejects.toThrow('database busy');
    expect(await read()).toBe('ok');
    expect(reads).toBe(2);
  });

  test('a clock that moves back does not serve an old read forever', async () => {
    let now = 10_000;
    let reads = 0;
    const read = sharedRead(async () => ++reads, 1_000, () => now);
    await read();
    now = 5_000;
    expect(await read()).toBe(2);
  });
});
