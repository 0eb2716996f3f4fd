/**
 * The building blocks of the response schemas (src/api/schemas.ts,
 * src/api/view-schemas.ts): JSON Schema in the OpenAPI 3.0 dialect.
 */
import type { JsonSchema } from '../core/validate.ts';

export const string = (description?: string): JsonSchema => ({ type: 'string', ...(description ? { description } : {}) });
export const time: JsonSchema = { type: 'string', format: 'date-time' };
export const integer = (description?: string): JsonSchema => ({ type: 'integer', ...(description ? { description } : {}) });
export const number = (description?: string): JsonSchema => ({ type: 'number', ...(description ? { description } : {}) });
export const boolean: JsonSchema = { type: 'boolean' };
export const nullable = (s: JsonSchema): JsonSchema => ({ ...s, nullable: true });
export const described = (s: JsonSchema, description: string): JsonSchema => ({ ...s, description });
/** Any JSON value (null included). */
export const anyJson = (description: string): JsonSchema => ({ description });
export const array = (items: JsonSchema): JsonSchema => ({ type: 'array', items });
export const constant = (value: string | boolean): JsonSchema => ({ type: typeof value, enum: [value] });
export const oneOf = (...schemas: JsonSchema[]): JsonSchema => ({ oneOf: schemas });
/** One of a fixed set of words: a generated client gets a union (or an enum) instead of a string. */
export const words = (values: readonly string[], description?: string): JsonSchema => ({ type: 'string', enum: [...values], ...(description ? { description } : {}) });

/**
 * An object schema with exactly T's keys (a missing or extra key does not
 * compile). Keys in `optional` may be left out of an answer; the rest are
 * always there (null where the type allows it).
 */
/**
 * `open`: other keys may come too (true: of any value; a schema: of that
 * schema, as in a map whose known keys are listed).
 */
export function fields<T>(properties: { [K in keyof T]-?: JsonSchema }, o: { optional?: readonly (keyof T & string)[]; description?: string; open?: boolean | JsonSchema } = {}): JsonSchema {
  const required = Object.keys(properties).filter((k) => !o.optional?.includes(k as keyof T & string));
  return {
    type: 'object',
    properties,
    // OpenAPI 3.0 refuses an empty list: no key required is no `required`.
    ...(required.length ? { required } : {}),
    additionalProperties: o.open ?? false,
    ...(o.description ? { description: o.description } : {}),
  };
}

/** The same schema for every key of a fixed set (every job status, say). */
export function sameFor<K extends string>(keys: readonly K[], value: JsonSchema): { [P in K]: JsonSchema } {
  return Object.fromEntries(keys.map((k) => [k, value])) as { [P in K]: JsonSchema };
}
