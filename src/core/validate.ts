/**
 * Request validators that also describe themselves as JSON Schema, so the
 * OpenAPI document is generated from the same objects that check requests.
 *
 * A failed check throws `invalid_request` naming the field by its path
 * (`jobs[3].priority`), and nothing has been written yet. Every string must
 * be well-formed UTF-16 without NUL (src/core/text.ts says why).
 */
import { invalid } from '../core/errors.ts';
import { textProblem } from '../core/text.ts';

export type JsonSchema = Record<string, unknown>;

export interface Validator<T> {
  parse(value: unknown, path: string): T;
  schema: JsonSchema;
  optional: boolean;
}

export type Infer<V> = V extends Validator<infer T> ? T : never;

const describe = (value: unknown) =>
  value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object' : `${typeof value} ${JSON.stringify(value)?.slice(0, 40)}`;

export function str(o: { min?: number; max: number; pattern?: RegExp; patternHelp?: string; description?: string }): Validator<string> {
  return {
    optional: false,
    schema: { type: 'string', minLength: o.min ?? 0, maxLength: o.max, ...(o.pattern ? { pattern: o.pattern.source } : {}), ...(o.description ? { description: o.description } : {}) },
    parse(value, path) {
      if (typeof value !== 'string') throw invalid(path, `${path} must be a string, got ${describe(value)}`);
      // Before anything else looks at it: a lone surrogate would crash libSQL (src/core/text.ts).
      const problem = textProblem(value);
      if (problem) throw invalid(path, `${path} ${problem}`);
      if (value.length < (o.min ?? 0)) throw invalid(path, `${path} must be at least ${o.min} characters`);
      if (value.length > o.max) throw invalid(path, `${path} must be at most ${o.max} characters`);
      if (o.pattern && !o.pattern.test(value)) throw invalid(path, `${path} ${o.patternHelp ?? `must match ${o.pattern.source}`}`);
      return value;
    },
  };
}

export function int(o: { min: number; max: number; description?: string }): Validator<number> {
  return {
    optional: false,
    schema: { type: 'integer', minimum: o.min, maximum: o.max, ...(o.description ? { description: o.description } : {}) },
    parse(value, path) {
      if (typeof value !== 'number' || !Number.isInteger(value)) throw invalid(path, `${path} must be a whole number, got ${describe(value)}`);
      if (value < o.min || value > o.max) throw invalid(path, `${path} must be between ${o.min} and ${o.max}, got ${value}`);
      return value;
    },
  };
}

/** Any finite number in [min, max] (decimals allowed). */
export function num(o: { min: number; max: number; description?: string }): Validator<number> {
  return {
    optional: false,
    schema: { type: 'number', minimum: o.min, maximum: o.max, ...(o.description ? { description: o.description } : {}) },
    parse(value, path) {
      if (typeof value !== 'number' || !Number.isFinite(value)) throw invalid(path, `${path} must be a number, got ${describe(value)}`);
      if (value < o.min || value > o.max) throw invalid(path, `${path} must be between ${o.min} and ${o.max}, got ${value}`);
      return value;
    },
  };
}

export function bool(description?: string): Validator<boolean> {
  return {
    optional: false,
    schema: { type: 'boolean', ...(description ? { description } : {}) },
    parse(value, path) {
      if (typeof value !== 'boolean') throw invalid(path, `${path} must be true or false, got ${describe(value)}`);
      return value;
    },
  };
}

/**
 * One of a fixed set of words: an enum in the document, so a generated client
 * gets a union type (or an enum class) rather than a string to get right.
 */
export function word<const W extends string>(values: readonly W[], description?: string): Validator<W> {
  return {
    optional: false,
    schema: { type: 'string', enum: [...values], ...(description ? { description } : {}) },
    parse(value, path) {
      if (typeof value !== 'string') throw invalid(path, `${path} must be a string, got ${describe(value)}`);
      if (!(values as readonly string[]).includes(value)) throw invalid(path, `${path} must be one of ${values.join(', ')}, got ${JSON.stringify(value.slice(0, 40))}`);
      return value as W;
    },
  };
}

/*
 * Query-string values arrive as text; these parse them into what the document
 * says they are (an integer, a boolean), so a generated client sends
 * `limit: 50`, not a string it has to format to a pattern.
 */

/** A whole number in [min, max], written in decimal in the query string. */
export function queryInt(o: { min: number; max: number; description?: string }): Validator<number> {
  return {
    optional: false,
    schema: { type: 'integer', minimum: o.min, maximum: o.max, ...(o.description ? { description: o.description } : {}) },
    parse(value, path) {
      const text = typeof value === 'string' ? value : '';
      const n = /^-?(0|[1-9][0-9]{0,15})$/.test(text) ? Number(text) : Number.NaN;
      if (!Number.isSafeInteger(n) || n < o.min || n > o.max) throw invalid(path, `${path} must be a whole number from ${o.min} to ${o.max}, got ${JSON.stringify(text.slice(0, 40))}`);
      return n;
    },
  };
}

/** true or false in the query string. */
export function queryBool(description?: string): Validator<boolean> {
  return {
    optional: false,
    schema: { type: 'boolean', ...(description ? { description } : {}) },
    parse(value, path) {
      if (value === 'true') return true;
      if (value === 'false') return false;
      throw invalid(path, `${path} must be true or false, got ${JSON.stringify(String(value).slice(0, 40))}`);
    },
  };
}

/**
 * How deeply a JSON value may nest. Deeper values would overflow the stack in
 * JSON.stringify (~4,000 levels) or SQLite's JSON functions (1,000 levels, and
 * a payload travels inside an array of objects): a 500 instead of a 400.
 */
export const MAX_JSON_DEPTH = 256;

/** Whether `value` nests more than `max` levels of arrays and objects (stops looking there, so no deep recursion). */
function nestedDeeperThan(value: unknown, max: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (max === 0) return true;
  for (const v of Array.isArray(value) ? value : Object.values(value)) if (nestedDeeperThan(v, max - 1)) return true;
  return false;
}

/** Any JSON value (an object, array, string, number, boolean or null), nested at most MAX_JSON_DEPTH levels. */
export function json(description?: string): Validator<unknown> {
  return {
    optional: false,
    schema: description ? { description } : {},
    parse(value, path) {
      if (value === undefined) throw invalid(path, `${path} is required`);
      if (nestedDeeperThan(value, MAX_JSON_DEPTH)) throw invalid(path, `${path} is nested more than ${MAX_JSON_DEPTH} levels deep`);
      return value;
    },
  };
}

export function optional<T>(v: Validator<T>): Validator<T | undefined> {
  return {
    optional: true,
    schema: v.schema,
    parse: (value, path) => (value === undefined ? undefined : v.parse(value, path)),
  };
}

/** null is accepted and means "unset". */
export function nullable<T>(v: Validator<T>): Validator<T | null> {
  return {
    optional: v.optional,
    schema: { ...v.schema, nullable: true },
    parse: (value, path) => (value === null ? null : v.parse(value, path)),
  };
}

export function arr<T>(item: Validator<T>, o: { min: number; max: number }): Validator<T[]> {
  return {
    optional: false,
    schema: { type: 'array', items: item.schema, minItems: o.min, maxItems: o.max },
    parse(value, path) {
      if (!Array.isArray(value)) throw invalid(path, `${path} must be an array, got ${describe(value)}`);
      if (value.length < o.min) throw invalid(path, `${path} must have at least ${o.min} item${o.min === 1 ? '' : 's'}`);
      if (value.length > o.max) throw invalid(path, `${path} must have at most ${o.max} items, got ${value.length}`);
      return value.map((v, i) => item.parse(v, `${path}[${i}]`));
    },
  };
}

type Shape = Record<string, Validator<unknown>>;
type Out<S extends Shape> = { [K in keyof S as S[K]['optional'] extends true ? never : K]: Infer<S[K]> } & {
  [K in keyof S as S[K]['optional'] extends true ? K : never]?: Infer<S[K]>;
};

/** An object with exactly these fields: an unknown field is an error (it is usually a typo). */
export function obj<S extends Shape>(shape: S, description?: string): Validator<Out<S>> {
  // Listed once: parse runs per item of a batch (100 completions a call).
  const fields = Object.entries(shape);
  const required = fields.filter(([, v]) => !v.optional).map(([k]) => k);
  return {
    optional: false,
    schema: {
      type: 'object',
      properties: Object.fromEntries(fields.map(([k, v]) => [k, v.schema])),
      ...(required.length ? { required } : {}),
      additionalProperties: false,
      ...(description ? { description } : {}),
    },
    parse(value, path) {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        throw invalid(path || 'body', `${path || 'the request body'} must be a JSON object, got ${describe(value)}`);
      }
      const record = value as Record<string, unknown>;
      for (const key of Object.keys(record)) {
        // Own keys only: `in` would also accept constructor, toString, __proto__.
        if (!Object.hasOwn(shape, key)) throw invalid(join(path, key), `${join(path, key)} is not a known field`);
      }
      const out: Record<string, unknown> = {};
      for (const [key, v] of fields) {
        const value = record[key];
        // An absent optional field parses to undefined: skipped, without
        // building its path (a bulk's job has 14 fields and sends few).
        if (value === undefined && v.optional) continue;
        const field = join(path, key);
        if (value === undefined) throw invalid(field, `${field} is required`);
        const parsed = v.parse(value, field);
        if (parsed !== undefined) out[key] = parsed;
      }
      return out as Out<S>;
    },
  };
}

const join = (path: string, key: string) => (path ? `${path}.${key}` : key);
