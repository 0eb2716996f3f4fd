/**
 * Filters on what a job carries: `where` clauses of the jobs list (API,
 * dashboard, CLI, client), each `<path> <op> <value>`, parsed here into
 * plain data the store compiles to SQL with bound values. Never SQL text:
 * a path is letters, digits, underscores, dots and [n], nothing a quote or
 * a comment can hide in, and a value is one JSON scalar.
 *
 *   payload.customerId = 42          payload.customer.name ^= "Acme"
 *   result.total >= 10.5             payload.items[0].sku != "X-1"
 *   payload.flags.vip = true         result.error exists
 *
 * Semantics (docs/http-api.md, "Finding jobs by payload or result"):
 * - path: `payload` or `result`, then `.name` (name: /^[A-Za-z_][A-Za-z0-9_]*$/)
 *   or `[n]` (an array index) segments, at most MAX_PATH_SEGMENTS;
 * - a value is JSON: a number, a "string" in double quotes, true, false or null;
 * - `=` matches the same type and value (42 is not "42", 1 is not true);
 *   `!=` matches a field that exists with any other value or type;
 * - `<` `<=` `>` `>=` compare numbers with numbers and strings with strings
 *   (by code point); a field of another type never matches;
 * - `^=` is a string prefix (a string value only);
 * - `exists` / `!exists` take no value: the field is present (even as null) / absent;
 * - several clauses are ANDed; at most MAX_WHERE_CLAUSES.
 */
import { invalid } from './errors.ts';
import { textProblem } from './text.ts';
import type { Validator } from './validate.ts';

export const WHERE_ROOTS = ['payload', 'result'] as const;
export type WhereRoot = (typeof WHERE_ROOTS)[number];

export const WHERE_OPS = ['=', '!=', '<', '<=', '>', '>=', '^=', 'exists', '!exists'] as const;
export type WhereOp = (typeof WHERE_OPS)[number];

/** One JSON scalar. */
export type WhereValue = string | number | boolean | null;

export interface WhereClause {
  root: WhereRoot;
  /** The SQLite JSON path: `$`, `$.a.b`, `$.items[0].sku`; only [A-Za-z0-9_.$[\]] characters. */
  jsonPath: string;
  op: WhereOp;
  /** Absent for exists and !exists. */
  value?: WhereValue;
}

/** The most clauses one list may AND: each is evaluated on every job a page examines. */
export const MAX_WHERE_CLAUSES = 5;
export const MAX_WHERE_CHARS = 500;

/**
 * Jobs a filtered page examines at most (src/db/store/job-search.ts): 10,000
 * json_extract calls take ~15-40 ms on one core (docs/benchmarks.md); a
 * bigger window makes pages slower, a smaller one makes rare matches take
 * more pages.
 */
export const WHERE_SCAN_WINDOW = 10_000;
export const MAX_PATH_SEGMENTS = 16;
/** A queue's indexed fields at most: each index costs every enqueue to the queue a little. */
export const MAX_INDEXED_FIELDS = 5;

/** What the store writes into SQL text for an indexed field: checked again where it is written (store/job-search.ts). */
export const JSON_PATH_PATTERN = /^\$(?:\.[A-Za-z_][A-Za-z0-9_]*|\[[0-9]{1,6}\])*$/;

/** The syntax in one line, for error messages and the OpenAPI document. */
export const WHERE_SYNTAX =
  '`<path> <op> <value>`: path payload.a.b, result.x or payload.items[0].sku; op one of =, !=, <, <=, >, >=, ^= (string prefix), exists, !exists (no value); value JSON: 42, "text", true, false or null';

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const PATH_TEXT = /^[A-Za-z0-9_.[\]]+/;
// Longest first, so `<=` is not read as `<` followed by a value starting with `=`.
const SYMBOL_OPS = ['^=', '!=', '<=', '>=', '=', '<', '>'] as const;

/** A path's root and its SQLite JSON path, or what is wrong with it. */
export function parseWherePath(text: string): { root: WhereRoot; jsonPath: string } | string {
  const [rootText, ...rest] = text.split(/(?=[.[])/);
  if (!(WHERE_ROOTS as readonly string[]).includes(rootText ?? '')) return `the path must start with payload or result, got ${JSON.stringify(text.slice(0, 40))}`;
  if (rest.length > MAX_PATH_SEGMENTS) return `a path has at most ${MAX_PATH_SEGMENTS} segments after its root`;
  let jsonPath = '$';
  for (const segment of rest) {
    if (segment.startsWith('.')) {
      if (!NAME.test(segment.slice(1))) return `path segment ${JSON.stringify(segment.slice(0, 40))}: a name is letters, digits and _, not starting with a digit`;
      jsonPath += segment;
    } else if (!/^\[[0-9]{1,6}\]$/.test(segment)) {
      return `path segment ${JSON.stringify(segment.slice(0, 40))}: an array index is [n], n a whole number below 1000000`;
    } else {
      jsonPath += `[${Number(segment.slice(1, -1))}]`;
    }
  }
  return { root: rootText as WhereRoot, jsonPath };
}

/** `root.a.b[0]` back from a clause: how the API and the dashboard name a field. */
export const wherePathText = (root: WhereRoot, jsonPath: string) => root + jsonPath.slice(1);

/** One clause, or what is wrong with it. */
export function parseWhereClause(text: string): WhereClause | string {
  const problem = textProblem(text);
  if (problem) return problem;
  if (text.length > MAX_WHERE_CHARS) return `a clause is at most ${MAX_WHERE_CHARS} characters`;
  const trimmed = text.trim();
  const pathText = PATH_TEXT.exec(trimmed)?.[0];
  if (!pathText) return `expected ${WHERE_SYNTAX}; got ${JSON.stringify(trimmed.slice(0, 60))}`;
  const path = parseWherePath(pathText);
  if (typeof path === 'string') return path;
  const afterPath = trimmed.slice(pathText.length).trimStart();
  const word = /^(!?exists)\s*$/.exec(afterPath);
  if (word) {
    // A word operator needs a space after the path: `payload.aexists` is a path, not a clause.
    if (afterPath.length === trimmed.length - pathText.length) return `put a space between the path and ${word[1]}`;
    return { ...path, op: word[1] as WhereOp };
  }
  const op = SYMBOL_OPS.find((o) => afterPath.startsWith(o));
  if (!op) return `after the path, expected one of ${WHERE_OPS.join(' ')}; got ${JSON.stringify(afterPath.slice(0, 40))}`;
  const valueText = afterPath.slice(op.length).trim();
  if (valueText === '') return `${op} needs a value: a number, a "string", true, false or null`;
  let value: unknown;
  try {
    value = JSON.parse(valueText);
  } catch {
    return `the value ${JSON.stringify(valueText.slice(0, 40))} is not JSON: write a number, a "string" in double quotes, true, false or null`;
  }
  if (typeof value === 'number' && !Number.isFinite(value)) return 'a number value must be finite';
  if (value !== null && typeof value === 'object') return 'the value must be a number, a "string", true, false or null (not an object or array)';
  const v = value as WhereValue;
  if (op === '^=' && typeof v !== 'string') return '^= (prefix) takes a "string" value';
  if ((op === '<' || op === '<=' || op === '>' || op === '>=') && typeof v !== 'number' && typeof v !== 'string') return `${op} compares with a number or a "string", not ${JSON.stringify(v)}`;
  return { ...path, op, value: v };
}

/** Every clause of a list, or a 400 naming `field` (the first bad clause, by position). */
export function parseWhereClauses(texts: readonly string[], field = 'where'): WhereClause[] {
  if (texts.length > MAX_WHERE_CLAUSES) throw invalid(field, `${field}: at most ${MAX_WHERE_CLAUSES} clauses, got ${texts.length}`);
  return texts.map((text, i) => {
    const clause = parseWhereClause(text);
    if (typeof clause === 'string') throw invalid(field, `${field}${texts.length > 1 ? ` (clause ${i + 1})` : ''}: ${clause}`);
    return clause;
  });
}

/** The query field `where`, one clause per value (`?where=...&where=...`), as the router hands repeated fields (an array). */
export const whereQuery: Validator<WhereClause[]> = {
  optional: true,
  schema: {
    type: 'array',
    items: { type: 'string', minLength: 1, maxLength: MAX_WHERE_CHARS },
    maxItems: MAX_WHERE_CLAUSES,
    description: `filters on the payload or result, ANDed: ${WHERE_SYNTAX}. Each page examines at most ${WHERE_SCAN_WINDOW.toLocaleString('en-US')} jobs (fewer reads for an = on one of the queue's indexed fields), so a page may come back short, even empty, with next set: follow next`,
  },
  parse(value, path) {
    if (value === undefined) return undefined as unknown as WhereClause[];
    const texts = Array.isArray(value) ? value : [value];
    if (!texts.every((t): t is string => typeof t === 'string')) throw invalid(path, `${path} must be text`);
    return parseWhereClauses(texts, path);
  },
};
