/** Reading the served OpenAPI document in tests: the smallest body a schema takes, and concrete paths. */
type Schema = Record<string, any>;

/** The smallest value the schema accepts (required fields only). */
export function sample(schema: Schema): unknown {
  if (schema.oneOf) return sample(schema.oneOf[0]);
  if (schema.enum) return schema.enum[0];
  switch (schema.type) {
    case 'object':
      return Object.fromEntries((schema.required ?? []).map((k: string) => [k, sample(schema.properties[k])]));
    case 'array':
      return Array.from({ length: schema.minItems ?? 0 }, () => sample(schema.items));
    case 'string': {
      const fits = ['x', '1', 'q'].find((s) => s.length >= (schema.minLength ?? 0) && (!schema.pattern || new RegExp(schema.pattern).test(s)));
      if (fits === undefined) throw new Error(`no sample string for ${JSON.stringify(schema)}`);
      return fits;
    }
    case 'integer':
    case 'number':
      return schema.minimum ?? 0;
    case 'boolean':
      return true;
    default:
      return {}; // any JSON
  }
}

/** A document path (`/api/v1/jobs/{id}`) with sample path parameters. */
export const concretePath = (path: string) => path.replace('{queue}', 'q').replace('{id}', '1').replace('{name}', 'nightly');

/** Every operation of the document. */
export const operationsOf = (doc: Schema) =>
  Object.entries(doc.paths as Record<string, Record<string, Schema>>).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ path, method, op })));
