/** The where clause parser (src/core/job-filter.ts): paths to SQLite JSON paths, values as JSON, and what it refuses. */
import { expect, test } from 'vitest';
import { JSON_PATH_PATTERN, parseWhereClause, parseWhereClauses, wherePathText } from '../../src/core/job-filter.ts';

test('clauses parse to a root, a JSON path, an operator and one JSON value', () => {
  expect(parseWhereClause('payload.customerId = 42')).toEqual({ root: 'payload', jsonPath: '$.customerId', op: '=', value: 42 });
  expect(parseWhereClause('  result.items[03].sku!="X-1"  ')).toEqual({ root: 'result', jsonPath: '$.items[3].sku', op: '!=', value: 'X-1' });
  expect(parseWhereClause('payload<=-1.5e2')).toEqual({ root: 'payload', jsonPath: '$', op: '<=', value: -150 });
  expect(parseWhereClause('payload.a >= "b"')).toMatchObject({ op: '>=', value: 'b' });
  expect(parseWhereClause('payload.a ^= "x \\" y"')).toMatchObject({ op: '^=', value: 'x " y' });
  expect(parseWhereClause('payload.a = null')).toMatchObject({ op: '=', value: null });
  expect(parseWhereClause('payload.a exists')).toEqual({ root: 'payload', jsonPath: '$.a', op: 'exists' });
  expect(parseWhereClause('payload.a !exists')).toEqual({ root: 'payload', jsonPath: '$.a', op: '!exists' });
  expect(wherePathText('payload', '$.items[3].sku')).toBe('payload.items[3].sku');
});

test('every path it accepts is one the store may write into SQL text', () => {
  for (const text of ['payload', 'payload.a', 'result._x9[0][12].y', `payload${'.a'.repeat(16)}`]) {
    const clause = parseWhereClause(`${text} exists`);
    expect(typeof clause, text).toBe('object');
    expect(JSON_PATH_PATTERN.test((clause as { jsonPath: string }).jsonPath), text).toBe(true);
  }
});

test('what it refuses, each with a reason', () => {
  for (const [text, says] of [
    ['payload.a', /expected one of/],
    ['payload.aexists', /expected one of/],
    ['payload.a!exists', /put a space/],
    ['payload.a exists 1', /expected one of/],
    ['payload.a = ', /needs a value/],
    ['payload.a = 01', /not JSON/],
    ['payload.a = NaN', /not JSON/],
    ['payload.a = 1e400', /finite/],
    ['payload.a = {}', /not an object or array/],
    ['payload.a ^= 1', /takes a "string"/],
    ['payload.a < null', /compares with a number or a "string"/],
    ['payload.a[1000000] = 1', /array index/],
    [`payload${'.a'.repeat(17)} = 1`, /at most 16 segments/],
    ['Payload.a = 1', /must start with payload or result/],
    ['payload.a = "\uD800"', /./],
  ] as const) {
    expect(parseWhereClause(text), text).toEqual(expect.stringMatching(says));
  }
  expect(() => parseWhereClauses(Array.from({ length: 6 }, () => 'payload exists'))).toThrow(/at most 5 clauses/);
  expect(() => parseWhereClauses(['payload exists', 'x'])).toThrow(expect.objectContaining({ field: 'where', message: expect.stringMatching(/clause 2/) }));
});
