import { describe, expect, it } from 'vitest';
import { iso } from '../../src/core/job-record.ts';

describe('iso', () => {
  it('answers each time as toISOString does, whatever order the times come in (it keeps the last two)', () => {
    const times = [0, 1_700_000_000_000, 1_700_000_000_001, 1_700_000_000_000, 0, 8.64e15, 1_700_000_000_001, 1_700_000_000_001, -1];
    for (const ms of [...times, ...times.reverse()]) expect(iso(ms)).toBe(new Date(ms).toISOString());
    expect(iso(null)).toBeNull();
  });

  it('refuses a time out of range as toISOString does', () => {
    expect(() => iso(8.64e15 + 1)).toThrow(RangeError);
    expect(() => iso(Number.NaN)).toThrow(RangeError);
  });
});
